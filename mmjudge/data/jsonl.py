"""mmjudge's canonical JSONL format: one (query, result) pair per line.

{"query_id": "q01", "query": "red striped t-shirt", "result_id": "p001",
 "fields": {"name": "...", "colour": "..."}, "images": ["images/p001.png"],
 "labels": {"annotator_a": 2, "annotator_b": 1}}
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmjudge.config import DatasetConfig
from mmjudge.data.attributes import extra_columns
from mmjudge.data.grades import GradeReader
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.validation import (
    DuplicateCheck,
    ImageRef,
    Leniency,
    checked_id,
    checked_query,
    checked_text,
    json_line,
    missing_images,
    resolve_image,
    shown,
    text_lines,
    where,
)
from mmjudge.errors import DatasetError

REQUIRED = ("query_id", "query", "result_id", "labels")


def load(cfg: DatasetConfig) -> Iterator[Example]:
    root = dataset_root(cfg)
    path = root / cfg.items
    if not path.is_file():
        raise DatasetError(
            f"{path}: dataset '{cfg.name}' has no items file here; check dataset.path and "
            "dataset.items"
        )
    reader = GradeReader.from_config(cfg)
    known_annotators = set(cfg.annotators)
    duplicates = DuplicateCheck(path)
    count = 0
    with Leniency(path) as lenient:
        for line_no, text in enumerate(text_lines(path, cfg.encoding), start=1):
            if not text.strip():
                continue
            row = json_line(text, path, line_no)
            example = _example(row, root, (path, line_no), reader, known_annotators, cfg, lenient)
            duplicates.add(example.query_id, example.result_id, line_no)
            count += 1
            yield example
    if count == 0:
        raise DatasetError(f"{path}: dataset '{cfg.name}' has no items")


def _text(row: dict[str, Any], name: str, path: Path, line: int, lenient: Leniency) -> str:
    """A required id or query: present and not empty; a whole-number id is read as its text
    (counted), a query must be text, and neither holds a NUL byte."""
    value = row.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DatasetError(
            f"{where(path, line)}: field '{name}' is missing or empty; every line needs "
            f"{', '.join(REQUIRED)}"
        )
    if name == "query":
        return checked_query(value, name, path, line, lenient)
    return checked_id(value, name, path, line, lenient)


def _example(
    row: Any,
    root: Path,
    at: tuple[Path, int],
    reader: GradeReader,
    known_annotators: set[str],
    cfg: DatasetConfig,
    lenient: Leniency,
) -> Example:
    path, line = at
    if not isinstance(row, dict):
        raise DatasetError(f"{where(path, line)}: expected a JSON object, got {type(row).__name__}")
    query_id = _text(row, "query_id", path, line, lenient)
    query = _text(row, "query", path, line, lenient)
    result_id = _text(row, "result_id", path, line, lenient)

    fields = _fields(row, path, line, lenient)
    unshown = extra_columns(cfg, row, tuple(name for name, _value in fields))
    shown_images = _images(row, root, path, line, lenient)[: max(cfg.max_images, 0)]
    labels = _labels(row, path, line, reader, known_annotators, cfg.allow_unlabelled)
    there = [image for image in shown_images if image.missing is None]

    return Example(
        query_id=query_id,
        query=query,
        result_id=result_id,
        fields=fields,
        images=tuple(image.path for image in there),
        labels=labels,
        image_names=tuple(image.name for image in there),
        attributes=tuple(unshown),
        missing_images=missing_images(shown_images),
    )


def _fields(
    row: dict[str, Any], path: Path, line: int, lenient: Leniency
) -> tuple[tuple[str, str], ...]:
    """The result's text fields (``fields``: an object of strings; null reads as empty, a
    number as its text; a NUL byte is refused, other control characters counted)."""
    raw_fields = row.get("fields", {})
    if type(raw_fields) is dict and all(type(value) is str for value in raw_fields.values()):
        for name, value in raw_fields.items():  # JSON object keys are always text
            checked_text(value, f"fields.{name}", path, line, lenient)
        return tuple(raw_fields.items())
    if not isinstance(raw_fields, dict):
        raise DatasetError(f"{where(path, line)}: field 'fields' must be an object of strings")
    fields = []
    for name, value in raw_fields.items():
        if value is None:
            value = ""
        if not isinstance(value, str | int | float):
            raise DatasetError(
                f"{where(path, line)}: field 'fields.{name}' must be text, got {shown(value)}"
            )
        text = checked_text(str(value), f"fields.{name}", path, line, lenient)
        fields.append((str(name), text))
    return tuple(fields)


def _images(
    row: dict[str, Any], root: Path, path: Path, line: int, lenient: Leniency
) -> list[ImageRef]:
    """The result's images (``images``: a list of paths; one path alone is read as a list of
    one, counted), resolved and named."""
    raw_images = row.get("images", [])
    if isinstance(raw_images, str):
        lenient.note("images_path", line)
        raw_images = [raw_images]
    if not isinstance(raw_images, list):
        raise DatasetError(f"{where(path, line)}: field 'images' must be a list of paths")
    return [resolve_image(item, root, path, line) for item in raw_images]


def _labels(
    row: dict[str, Any],
    path: Path,
    line: int,
    reader: GradeReader,
    known_annotators: set[str],
    allow_unlabelled: bool,
) -> dict[str, int]:
    """Each annotator's grade (``labels``: at least one, each annotator a known one; none
    at all only with ``dataset.allow_unlabelled``)."""
    raw_labels = row.get("labels")
    if allow_unlabelled and (raw_labels is None or raw_labels == {}):
        return {}
    if not isinstance(raw_labels, dict) or not raw_labels:
        raise DatasetError(
            f"{where(path, line)}: field 'labels' is missing or empty; give at least one "
            'annotator\'s grade, e.g. {"annotator_a": 2}, or set dataset.allow_unlabelled=true '
            "to judge items no person graded"
        )
    labels = {}
    for annotator, value in raw_labels.items():
        if known_annotators and annotator not in known_annotators:
            raise DatasetError(
                f"{where(path, line)}: field 'labels.{annotator}' names an unknown annotator; "
                f"dataset.annotators lists {sorted(known_annotators)}"
            )
        if isinstance(value, str) and value.strip():
            # JSON has numbers: a grade in quotes is text, which a table's cell cannot avoid
            # being but a JSON line can (and a typo such as "2 " or "two" hides in it).
            raise DatasetError(
                f"{where(path, line)}: field 'labels.{annotator}' is the text {shown(value)}, "
                "not a number; write the grade without quotes, e.g. "
                f'{{"{annotator}": 2}}'
            )
        grade = reader.read(value, path, line, f"labels.{annotator}")
        if grade is None:
            raise DatasetError(
                f"{where(path, line)}: field 'labels.{annotator}' is empty; give a grade or "
                "leave the annotator out"
            )
        labels[str(annotator)] = grade
    return labels
