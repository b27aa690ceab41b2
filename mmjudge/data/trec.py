"""TREC-style collections: topics, graded qrels and a JSONL document collection.

    dataset.queries_file   query_id<TAB>query text, one per line
    dataset.labels_file    qrels: ``query_id 0 doc_id grade`` per line (whitespace-separated)
    dataset.items          documents, JSONL: {"doc_id": ..., "text": ..., "title": ...}
    dataset.runs           optional run files, for system-ranking agreement (see run_paths)

With ``dataset.allow_unlabelled`` and run files, every document a run ranks in a judged
query's top ten (:data:`POOL_DEPTH`, the depth of the measures) that the qrels do not grade is
judged too, with no human label: the pool whose grades the prediction-powered estimates and
``mmjudge plan --next`` work with. Such documents missing from the collection file are left
out, counted in one warning (collections are often shipped with their judged documents only).

All paths are relative to the dataset root, or absolute. The qrels are the human labels; their
annotator is ``dataset.annotators[0]``, or ``assessor``. The result's text fields are
``dataset.text_fields`` (default ``title``, ``text``); a field a document lacks reads as empty.
``dataset.columns.doc_id`` renames the id key for collections that call it otherwise (``_id``
in BEIR corpora, for instance).

Memory: the qrels are read whole (one line per judged pair). The queries file and the document
collection are streamed, keeping only the queries and documents the qrels name; each scan
stops once everything it looks for has been found. Examples come out in qrels order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from mmjudge.config import DatasetConfig
from mmjudge.data.grades import GradeReader
from mmjudge.data.leniency import Leniency
from mmjudge.data.qrels import Run, read_run, top_documents
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.validation import (
    DuplicateCheck,
    cell_text,
    checked_text,
    dataset_file,
    json_line,
    require_file,
    tab_texts,
    text_lines,
    where,
)
from mmjudge.errors import ConfigError, DatasetError

log = logging.getLogger(__name__)

#: How deep into each run the unjudged documents are taken (``dataset.allow_unlabelled``).
POOL_DEPTH = 10

DEFAULT_TEXT_FIELDS = ("title", "text")
DEFAULT_ANNOTATOR = "assessor"
OPTIONS = ("doc_id",)


class Judgment(NamedTuple):
    line: int
    """Line of the qrels file."""
    query_id: str
    doc_id: str
    grade: int


def run_paths(cfg: DatasetConfig) -> list[Path]:
    """The dataset's run files, resolved and checked to exist."""
    root = dataset_root(cfg)
    paths = [dataset_file(root, run) for run in cfg.runs]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise DatasetError(
            f"dataset '{cfg.name}': run file(s) not found: {', '.join(missing)}; check "
            "dataset.runs (paths are relative to dataset.path, or absolute)"
        )
    return paths


def qrels_judgments(path: Path, encoding: str, grades: GradeReader) -> Iterator[Judgment]:
    """Parse a qrels file, checking each grade against the scale and rejecting duplicates."""
    duplicates = DuplicateCheck(path)
    for line, raw in enumerate(text_lines(path, encoding), start=1):
        parts = raw.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise DatasetError(
                f"{where(path, line)}: expected 4 values 'query_id iteration doc_id grade', "
                f"got {len(parts)}"
            )
        query_id, _iteration, doc_id, raw_grade = parts
        grade = grades.read(raw_grade, path, line, "grade")
        assert grade is not None  # split() never yields an empty value
        duplicates.add(query_id, doc_id, line)
        yield Judgment(line, query_id, doc_id, grade)


class _Files(NamedTuple):
    qrels: Path
    queries: Path
    docs: Path
    runs: list[Path]


def _files(cfg: DatasetConfig) -> _Files:
    """The collection's files from the settings, each checked to be there."""
    unknown = [key for key in cfg.columns if key not in OPTIONS]
    if unknown:
        raise ConfigError(
            f"dataset.columns has unknown key(s) {', '.join(map(str, unknown))} for the trec "
            f"loader; valid keys: {', '.join(OPTIONS)}"
        )
    root = dataset_root(cfg)
    runs = run_paths(cfg)
    if not cfg.labels_file:
        raise DatasetError(
            f"dataset '{cfg.name}': the trec loader needs dataset.labels_file, a qrels file "
            "with lines 'query_id 0 doc_id grade'"
        )
    if not cfg.queries_file:
        raise DatasetError(
            f"dataset '{cfg.name}': the trec loader needs dataset.queries_file, a file with "
            "lines 'query_id<TAB>query text'"
        )
    return _Files(
        require_file(dataset_file(root, cfg.labels_file), "the qrels file", "dataset.labels_file"),
        require_file(
            dataset_file(root, cfg.queries_file), "the queries file", "dataset.queries_file"
        ),
        require_file(dataset_file(root, cfg.items), "the documents file (JSONL)", "dataset.items"),
        runs,
    )


def load(cfg: DatasetConfig) -> Iterator[Example]:
    id_key = str(cfg.columns.get("doc_id", "doc_id"))
    files = _files(cfg)
    qrels_path, queries_path, docs_path = files.qrels, files.queries, files.docs
    annotator = cfg.annotators[0] if cfg.annotators else DEFAULT_ANNOTATOR
    judgments = list(qrels_judgments(qrels_path, cfg.encoding, GradeReader.from_config(cfg)))
    if not judgments:
        raise DatasetError(f"{qrels_path}: dataset '{cfg.name}' has no qrels lines")

    queries = _read_queries(queries_path, cfg.encoding, {j.query_id for j in judgments})
    for judgment in judgments:
        if judgment.query_id not in queries:
            raise DatasetError(
                f"{where(qrels_path, judgment.line)}: query_id '{judgment.query_id}' is not in "
                f"{queries_path}; every judged query needs its text there"
            )
    text_fields = list(cfg.text_fields) or list(DEFAULT_TEXT_FIELDS)
    judged = {(j.query_id, j.doc_id) for j in judgments}
    pool = (
        unjudged_pool([read_run(path) for path in files.runs], list(queries), judged)
        if cfg.allow_unlabelled
        else []
    )
    wanted = {j.doc_id for j in judgments} | {doc for _, doc in pool}
    docs = _read_documents(docs_path, cfg.encoding, id_key, text_fields, wanted)
    for judgment in judgments:
        if judgment.doc_id not in docs:
            raise DatasetError(
                f"{where(qrels_path, judgment.line)}: doc_id '{judgment.doc_id}' is not in "
                f"{docs_path}; add the document or drop its qrels line"
            )
    _warn_missing(docs_path, pool, docs)

    for judgment in judgments:
        yield Example(
            query_id=judgment.query_id,
            query=queries[judgment.query_id],
            result_id=judgment.doc_id,
            fields=tuple(docs[judgment.doc_id]),
            labels={annotator: judgment.grade},
        )
    for query_id, doc_id in pool:
        if doc_id in docs:
            yield Example(
                query_id=query_id,
                query=queries[query_id],
                result_id=doc_id,
                fields=tuple(docs[doc_id]),
                labels={},
            )


def _warn_missing(path: Path, pool: list[tuple[str, str]], docs: Mapping[str, object]) -> None:
    """One warning for the pool documents the collection file lacks (they are left out)."""
    missing = sum(doc not in docs for _, doc in pool)
    if missing:
        log.warning(
            "%s: %d of the %d unjudged documents the runs rank in a top %d are not in the "
            "collection file; they are left out",
            path,
            missing,
            len(pool),
            POOL_DEPTH,
        )


def unjudged_pool(
    runs: list[Run], queries: list[str], judged: set[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The ``(query, doc)`` pairs some run ranks in the top :data:`POOL_DEPTH` of one of
    ``queries`` that ``judged`` lacks, once each: by query, then run, then rank (score
    descending, ties by doc id descending, as ``trec_eval`` orders them)."""
    found: dict[tuple[str, str], None] = {}
    for query in queries:
        for run in runs:
            for doc in top_documents(run.get(query, {}), POOL_DEPTH):
                if (query, doc) not in judged:
                    found.setdefault((query, doc))
    return list(found)


def _read_queries(path: Path, encoding: str, wanted: set[str]) -> dict[str, str]:
    return tab_texts(
        path, encoding, wanted, "query_id<TAB>query text", "the text of query '{id}' is empty"
    )


def _read_documents(
    path: Path, encoding: str, id_key: str, text_fields: list[str], wanted: set[str]
) -> dict[str, tuple[tuple[str, str], ...]]:
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    with Leniency(path) as lenient:
        for line, raw in enumerate(text_lines(path, encoding), start=1):
            if not raw.strip():
                continue
            row = json_line(raw, path, line)
            if not isinstance(row, dict):
                raise DatasetError(
                    f"{where(path, line)}: expected a JSON object, got {type(row).__name__}"
                )
            doc_id = cell_text(row, id_key, path, line).strip()
            if not doc_id:
                raise DatasetError(
                    f"{where(path, line)}: field '{id_key}' is missing or empty; every document "
                    "needs an id (its key is set by dataset.columns.doc_id)"
                )
            if doc_id not in wanted or doc_id in found:
                continue
            found[doc_id] = tuple(
                (name, checked_text(cell_text(row, name, path, line), name, path, line, lenient))
                for name in text_fields
            )
            if len(found) == len(wanted):
                break
    return found
