"""Any CSV, TSV or JSONL table of judged pairs, described by a column mapping in the config.

The file is ``dataset.items`` under the dataset root; its extension picks the reader (``.csv``,
``.tsv``/``.tab``, ``.jsonl``/``.ndjson``). ``dataset.columns`` says which column holds what:

    columns:
      query: query                      # required: the query text
      query_id: qid                     # optional: from the query text (query_id_from_text)
      result_id: id                     # required
      text_fields: [title, body]        # optional: shown to the judge, in order
                                        #   (default: dataset.text_fields, else none)
      image: image_path                 # optional: a path under the dataset root, or a URL
      annotators: {crowd: median}       # required: annotator name -> grade column
      grade_map: {1: 0, 2: 1, 3: 2}     # optional: raw grade -> grade on dataset.scale
                                        #   (after dataset.grade_rule rounds it, if set)
      delimiter: ";"                    # optional: CSV separator (default by extension)

The table is streamed row by row, so its size does not matter; only the (query_id, result_id)
pairs seen so far are remembered, to reject duplicates. An empty grade cell means that
annotator did not grade the pair; a row needs at least one grade.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.config import DatasetConfig
from mmjudge.data.attributes import extra_columns
from mmjudge.data.grades import GradeReader
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.validation import (
    CsvTable,
    DuplicateCheck,
    ImageRef,
    Leniency,
    cell_text,
    checked_id,
    checked_query,
    checked_text,
    dataset_file,
    json_line,
    missing_images,
    query_id_from_text,
    require_file,
    resolve_image,
    text_lines,
    undeclared,
    where,
)
from mmjudge.errors import ConfigError, DatasetError

KEYS = ("query", "query_id", "result_id", "text_fields", "image", "annotators", "grade_map")
OPTIONS = ("delimiter",)
DELIMITERS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
JSONL_SUFFIXES = (".jsonl", ".ndjson")


@dataclass(frozen=True)
class ColumnMapping:
    """``dataset.columns`` for the table loader, checked."""

    query: str
    query_id: str | None
    result_id: str
    text_fields: tuple[str, ...]
    image: str | None
    annotators: dict[str, str]
    """Annotator name -> the column holding that annotator's grade."""
    grades: GradeReader
    """Reads grade cells: ``grade_map`` and ``dataset.grade_rule`` applied."""
    delimiter: str | None

    def required(self) -> list[str]:
        """Columns a CSV header must have."""
        named = [self.query, self.query_id, self.result_id, self.image]
        return [c for c in named if c] + list(self.text_fields) + list(self.annotators.values())


def column_mapping(cfg: DatasetConfig) -> ColumnMapping:
    """Read and check ``dataset.columns``; a mistake here is a :class:`ConfigError`."""
    columns = cfg.columns
    unknown = [key for key in columns if key not in KEYS + OPTIONS]
    if unknown:
        raise ConfigError(
            f"dataset.columns has unknown key(s) {', '.join(map(str, unknown))} for the table "
            f"loader; valid keys: {', '.join(KEYS + OPTIONS)}"
        )

    def name(key: str, required: bool) -> str | None:
        value = columns.get(key)
        if value is None or value == "":
            if required:
                raise ConfigError(
                    f"dataset.columns.{key} is required by the table loader: the column that "
                    f"holds the {key.replace('_', ' ')}"
                )
            return None
        if not isinstance(value, str):
            raise ConfigError(f"dataset.columns.{key} must be a column name, got {value!r}")
        return value

    raw_fields = columns.get("text_fields", cfg.text_fields)
    if raw_fields is None:
        raw_fields = []
    if isinstance(raw_fields, str) or not isinstance(raw_fields, Sequence):
        raise ConfigError(
            f"dataset.columns.text_fields must be a list of column names, got {raw_fields!r}"
        )
    text_fields = tuple(str(field) for field in raw_fields)

    raw_annotators = columns.get("annotators")
    if not isinstance(raw_annotators, Mapping) or not raw_annotators:
        raise ConfigError(
            "dataset.columns.annotators is required by the table loader: a mapping of "
            "annotator name -> grade column, e.g. {crowd_median: median_relevance}"
        )
    annotators = {str(k): str(v) for k, v in raw_annotators.items()}
    strangers = undeclared(cfg, annotators)
    if strangers:
        raise ConfigError(
            f"dataset.columns.annotators names unknown annotator(s) "
            f"{', '.join(strangers)}; dataset.annotators lists {', '.join(cfg.annotators)}"
        )

    grades = GradeReader.from_config(cfg, columns.get("grade_map"))
    delimiter = columns.get("delimiter")
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise ConfigError(f"dataset.columns.delimiter must be one character, got {delimiter!r}")
    return ColumnMapping(
        query=name("query", True) or "",
        query_id=name("query_id", False),
        result_id=name("result_id", True) or "",
        text_fields=text_fields,
        image=name("image", False),
        annotators=annotators,
        grades=grades,
        delimiter=delimiter,
    )


def load(cfg: DatasetConfig) -> Iterator[Example]:
    mapping = column_mapping(cfg)
    root = dataset_root(cfg)
    path = require_file(dataset_file(root, cfg.items), "the table", "dataset.items")
    suffix = path.suffix.lower()
    rows: Iterator[tuple[int, Mapping[str, Any]]]
    if suffix in JSONL_SUFFIXES:
        rows = _jsonl_rows(path, cfg.encoding, mapping)
    elif suffix in DELIMITERS:
        table = CsvTable(path, cfg.encoding, mapping.delimiter or DELIMITERS[suffix])
        table.require(mapping.required(), "named in dataset.columns", "dataset.columns.delimiter")
        rows = ((row.line, row.values) for row in table.rows())
    else:
        raise DatasetError(
            f"{path}: the table loader reads .csv, .tsv and .jsonl files (by extension); "
            "convert the file or point dataset.items at one of those"
        )
    duplicates = DuplicateCheck(path)
    count = 0
    with Leniency(path) as lenient:
        for line, row in rows:
            example = _example(row, mapping, root, (path, line), cfg, lenient)
            duplicates.add(example.query_id, example.result_id, line)
            count += 1
            yield example
    if count == 0:
        raise DatasetError(f"{path}: dataset '{cfg.name}' has no rows")


def _jsonl_rows(
    path: Path, encoding: str, mapping: ColumnMapping
) -> Iterator[tuple[int, dict[str, Any]]]:
    keys = [mapping.query, mapping.result_id] + ([mapping.query_id] if mapping.query_id else [])
    for line_no, text in enumerate(text_lines(path, encoding), start=1):
        if not text.strip():
            continue
        row = json_line(text, path, line_no)
        if not isinstance(row, dict):
            raise DatasetError(
                f"{where(path, line_no)}: expected a JSON object, got {type(row).__name__}"
            )
        missing = [key for key in keys if key not in row]
        if missing:
            raise DatasetError(
                f"{where(path, line_no)}: missing key(s) {', '.join(missing)} (named in "
                f"dataset.columns); the line has keys: {', '.join(map(str, row))}"
            )
        yield line_no, row


def _example(
    row: Mapping[str, Any],
    mapping: ColumnMapping,
    root: Path,
    at: tuple[Path, int],
    cfg: DatasetConfig,
    lenient: Leniency,
) -> Example:
    path, line = at

    def required(column: str) -> object:
        value = row.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            raise DatasetError(f"{where(path, line)}: field '{column}' is empty")
        return value

    query = checked_query(required(mapping.query), mapping.query, path, line, lenient)
    if mapping.query_id:
        query_id = checked_id(required(mapping.query_id), mapping.query_id, path, line, lenient)
    else:
        # Without a query_id column the id comes from the query's text, and is safe for qrels
        # (no blanks), so `mmjudge export` and everything after it take it.
        query_id = query_id_from_text(checked_id(query, mapping.query, path, line, lenient))
    result_id = checked_id(required(mapping.result_id), mapping.result_id, path, line, lenient)
    fields = tuple(
        (column, checked_text(cell_text(row, column, path, line), column, path, line, lenient))
        for column in mapping.text_fields
    )
    unshown = extra_columns(cfg, row, mapping.text_fields)

    image = _image(row, mapping, root, at, cfg)
    there = () if image is None or image.missing else (image,)

    labels: dict[str, int] = {}
    for annotator, column in mapping.annotators.items():
        grade = mapping.grades.read(row.get(column), path, line, column)
        if grade is not None:
            labels[annotator] = grade
    if not labels and not cfg.allow_unlabelled:
        raise DatasetError(
            f"{where(path, line)}: no grade in column(s) "
            f"{', '.join(mapping.annotators.values())}; every row needs at least one, or set "
            "dataset.allow_unlabelled=true to judge items no person graded"
        )
    return Example(
        query_id=query_id,
        query=query,
        result_id=result_id,
        fields=fields,
        images=tuple(shown.path for shown in there),
        labels=labels,
        image_names=tuple(shown.name for shown in there),
        attributes=tuple(unshown),
        missing_images=missing_images([image] if image is not None else []),
    )


def _image(
    row: Mapping[str, Any],
    mapping: ColumnMapping,
    root: Path,
    at: tuple[Path, int],
    cfg: DatasetConfig,
) -> ImageRef | None:
    """The row's image, resolved (there or missing); None when it names none or the dataset
    shows none."""
    if not mapping.image or cfg.max_images <= 0:
        return None
    path, line = at
    reference = cell_text(row, mapping.image, path, line).strip()
    return resolve_image(reference, root, path, line) if reference else None
