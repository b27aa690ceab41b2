"""Label files: the grades people or a judge gave (query, result) pairs, read by one reader for
every command that takes them (the replay judge, ``mmjudge agree``). Two forms:

- TREC qrels, ``query iteration doc grade`` (:func:`mmjudge.data.qrels.load_qrels`); a file
  that grades a pair more than once holds several runs, told apart by the iteration field;
- JSON lines (a ``.jsonl`` or ``.ndjson`` file): one object a line with ``query_id``,
  ``result_id`` and a whole-number ``grade``, and a ``run`` (or ``judge``) field when the file
  holds several runs.

Either way a run comes back as a :class:`~mmjudge.data.qrels.QrelsFile` (grades with the line
each was read from). A line that cannot be read, a pair graded twice in one run and a file
with no grade at all are :class:`~mmjudge.errors.DatasetError` in one line naming the file
and the line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmjudge.data.qrels import (
    QRELS_LAYOUT,
    QrelsFile,
    label_file_errors,
    load_qrels,
    load_qrels_runs,
)
from mmjudge.errors import DatasetError
from mmjudge.files import read_jsonl

#: Endings of a file read as JSON lines (anything else is read as TREC qrels).
JSONL_SUFFIXES = (".jsonl", ".ndjson")
#: Fields of a JSON-lines row that name its run, in order of preference.
RUN_FIELDS = ("run", "judge")
#: What a JSON-lines label file holds, for messages.
JSONL_LAYOUT = "a JSON object a line with query_id, result_id and grade"
#: How the runs of a file are told apart, for messages: by form.
RUNS_BY = {"qrels": "field 2 (iteration)", "jsonl": "the run/judge field"}


def is_jsonl(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is read as JSON lines (by its ending), not as TREC qrels."""
    return Path(path).suffix.lower() in JSONL_SUFFIXES


def runs_by(path: str | os.PathLike[str]) -> str:
    """How the runs of the file at ``path`` are told apart (for a message naming them)."""
    return RUNS_BY["jsonl" if is_jsonl(path) else "qrels"]


def label_runs(path: str | os.PathLike[str]) -> dict[str, QrelsFile]:
    """Every run of the label file at ``path``, by name, in file order: one run (named
    ``"0"``, or for JSON lines without a run field ``""``) unless the file holds several."""
    path = Path(path)
    runs = _jsonl_runs(path) if is_jsonl(path) else _qrels_runs(path)
    if not runs:
        layout = JSONL_LAYOUT if is_jsonl(path) else f"lines '{QRELS_LAYOUT}'"
        raise DatasetError(f"{path}: no judgments in the file; expected {layout}")
    return runs


def one_run(path: str | os.PathLike[str]) -> QrelsFile:
    """The grades of a label file that holds one run; a file of several is an error naming
    them."""
    runs = label_runs(path)
    if len(runs) > 1:
        raise DatasetError(
            f"{path} holds {len(runs)} runs ({runs_by(path)}): {', '.join(sorted(runs))}; "
            "give a file of one"
        )
    return next(iter(runs.values()))


def _qrels_runs(path: Path) -> dict[str, QrelsFile]:
    """A qrels file's one run, or its runs by iteration where some pair is graded twice."""
    try:
        found = load_qrels(path)
    except DatasetError as error:
        if "more than once" not in str(error):
            raise
        runs = load_qrels_runs(path)
        if len(runs) == 1:
            raise
        return runs
    return {"0": found} if found.qrels else {}


def _jsonl_runs(path: Path) -> dict[str, QrelsFile]:
    runs: dict[str, QrelsFile] = {}
    for line_no, row in _rows(path):
        where = f"{path}:{line_no}"
        query, result, grade = _fields(row, where)
        name = next((str(row[f]) for f in RUN_FIELDS if row.get(f) is not None), "")
        run = runs.setdefault(name, QrelsFile(path, {}, {}))
        docs = run.qrels.setdefault(query, {})
        if result in docs:
            first = run.lines[(query, result)]
            raise DatasetError(
                f"{where}: {query!r} {result!r} is graded twice in run {name!r} (first on line "
                f"{first}); keep one grade per pair"
            )
        docs[result] = grade
        run.lines[(query, result)] = line_no
    return runs


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each line; a file that cannot be read is a DatasetError."""
    with label_file_errors(path):
        yield from read_jsonl(path)


def _fields(row: Any, where: str) -> tuple[str, str, int]:
    """A row's query id, result id and grade, or a DatasetError naming what is wrong."""
    if not isinstance(row, dict) or any(
        row.get(name) is None for name in ("query_id", "result_id", "grade")
    ):
        raise DatasetError(f"{where}: expected {JSONL_LAYOUT}")
    grade = row["grade"]
    whole = isinstance(grade, int) or (isinstance(grade, float) and grade.is_integer())
    if isinstance(grade, bool) or not whole:
        raise DatasetError(
            f"{where}: grade must be a whole number, got {grade!r}"
            + ("; write it without quotes" if isinstance(grade, str) else "")
        )
    return str(row["query_id"]), str(row["result_id"]), int(grade)
