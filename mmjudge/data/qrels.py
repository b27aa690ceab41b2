"""Read and write TREC relevance judgments (qrels) and read TREC run files.

Both come back as plain nested dicts, which is also what ``ir_measures`` takes:

- qrels: ``{query_id: {doc_id: grade}}`` from lines ``query iteration doc grade``;
- runs: ``{query_id: {doc_id: score}}`` from lines ``query Q0 doc rank score tag``.

Dicts keep file order. Fields are separated by any whitespace and blank lines are skipped.
A malformed line raises :class:`~mmjudge.errors.DatasetError` with a one-line message that
names the file, the line number and the field at fault.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.errors import DatasetError, MMJudgeError
from mmjudge.files import atomic_file

Qrels = dict[str, dict[str, int]]
Run = dict[str, dict[str, float]]

QRELS_LAYOUT = "query iteration doc grade"
RUN_LAYOUT = "query Q0 doc rank score tag"


@contextlib.contextmanager
def label_file_errors(path: Path) -> Iterator[None]:
    """A label file that cannot be read, while the block reads it, becomes one DatasetError
    line naming the file and why (the one wording for TREC and JSON-lines label files)."""
    try:
        yield
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DatasetError(f"{path}: is a directory, expected a file") from None
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror})") from None


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for every non-blank line; unreadable files become DatasetError."""
    with label_file_errors(path), path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            fields = line.split()
            if fields:
                yield line_no, fields


def _number(text: str, kind: type[int] | type[float], where: str, field: str) -> int | float:
    """``text`` as ``kind``, or a :class:`DatasetError` naming the line and the field."""
    try:
        return kind(text)
    except ValueError:
        wanted = "an integer" if kind is int else "a number"
        raise DatasetError(f"{where}: {field} must be {wanted}, got {text!r}") from None


def _add_once(
    table: dict[str, dict[str, Any]], query: str, doc: str, value: Any, where: str, twice: str
) -> None:
    """Put ``value`` at ``table[query][doc]``; a pair already there is an error."""
    docs = table.setdefault(query, {})
    if doc in docs:
        raise DatasetError(f"{where}: query {query!r} {twice}")
    docs[doc] = value


def _shown(fields: list[str]) -> str:
    text = " ".join(fields)
    return repr(text if len(text) <= 80 else text[:77] + "...")


class QrelsFile(NamedTuple):
    """A qrels file read back with where each judgment came from."""

    path: Path
    qrels: Qrels
    """``{query_id: {doc_id: grade}}``."""
    lines: dict[tuple[str, str], int]
    """Line number of each (query, doc) judgment, for messages that point at it."""


def load_qrels(path: str | os.PathLike[str]) -> QrelsFile:
    """A TREC qrels file (the iteration field is ignored) with each judgment's line number.
    A (query, doc) pair judged twice is an error."""
    path = Path(path)
    qrels: Qrels = {}
    lines: dict[tuple[str, str], int] = {}
    for line_no, fields in _lines(path):
        if len(fields) != 4:
            raise DatasetError(f"{path}:{line_no}: expected '{QRELS_LAYOUT}', got {_shown(fields)}")
        query, _, doc, grade_text = fields
        where = f"{path}:{line_no}"
        grade = int(_number(grade_text, int, where, "grade (field 4)"))
        _add_once(qrels, query, doc, grade, where, f"doc {doc!r} is judged more than once")
        lines[(query, doc)] = line_no
    return QrelsFile(path, qrels, lines)


def load_qrels_runs(path: str | os.PathLike[str]) -> dict[str, QrelsFile]:
    """A qrels file holding several judges' runs, told apart by the iteration field: one
    :class:`QrelsFile` per iteration value, in file order. A pair judged twice within one
    run is an error."""
    path = Path(path)
    runs: dict[str, tuple[Qrels, dict[tuple[str, str], int]]] = {}
    for line_no, fields in _lines(path):
        if len(fields) != 4:
            raise DatasetError(f"{path}:{line_no}: expected '{QRELS_LAYOUT}', got {_shown(fields)}")
        query, run, doc, grade_text = fields
        where = f"{path}:{line_no}"
        grade = int(_number(grade_text, int, where, "grade (field 4)"))
        qrels, lines = runs.setdefault(run, ({}, {}))
        _add_once(qrels, query, doc, grade, where, f"doc {doc!r} is judged twice in run {run!r}")
        lines[(query, doc)] = line_no
    return {run: QrelsFile(path, qrels, lines) for run, (qrels, lines) in runs.items()}


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """``{query_id: {doc_id: grade}}`` from a TREC qrels file (see :func:`load_qrels`)."""
    return load_qrels(path).qrels


def qrels_lines(qrels: Mapping[str, Mapping[str, int]]) -> Iterator[str]:
    """``{query_id: {doc_id: grade}}`` as ``query 0 doc grade`` lines, in dict order: the one
    way qrels are written, to a file or to standard output."""
    for query, docs in qrels.items():
        for doc, grade in docs.items():
            yield f"{query} 0 {doc} {int(grade)}\n"


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike[str]) -> None:
    """Write ``qrels`` as a TREC qrels file (:func:`qrels_lines`), atomically."""
    with atomic_file(Path(path)) as handle:
        handle.writelines(qrels_lines(qrels))


def read_run(path: str | os.PathLike[str]) -> Run:
    """``{query_id: {doc_id: score}}`` from a TREC run file.

    The rank must be an integer and the score a number; like ``trec_eval``, evaluation
    orders documents by score, so the rank is checked but not kept. A document listed
    twice for one query is an error.
    """
    path = Path(path)
    run: Run = {}
    for line_no, fields in _lines(path):
        if len(fields) != 6:
            raise DatasetError(f"{path}:{line_no}: expected '{RUN_LAYOUT}', got {_shown(fields)}")
        query, _, doc, rank_text, score_text, _ = fields
        where = f"{path}:{line_no}"
        _number(rank_text, int, where, "rank (field 4)")
        score = float(_number(score_text, float, where, "score (field 5)"))
        _add_once(run, query, doc, score, where, f"lists doc {doc!r} more than once")
    return run


def top_documents(scores: Mapping[str, float], depth: int) -> list[str]:
    """One query's top ``depth`` documents of a run: score descending, ties broken by
    document id descending, as ``trec_eval`` orders them."""
    return sorted(scores, key=lambda doc: (scores[doc], doc), reverse=True)[:depth]


def n_judgments(qrels: Mapping[str, Mapping[str, int]]) -> int:
    """Number of (query, doc) pairs in ``qrels``."""
    return sum(len(docs) for docs in qrels.values())


def run_names(paths: Sequence[str | Path]) -> list[str]:
    """Judge names: file stems, or the paths as given where two files share a stem."""
    stems = [Path(p).stem for p in paths]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths, strict=True)]


def read_systems(directory: str | Path) -> dict[str, Run]:
    """Every TREC run file in ``directory`` (not hidden), by file stem."""
    root = Path(directory)
    if not root.is_dir():
        raise MMJudgeError(f"--runs {root}: not a directory of TREC run files")
    paths = sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    if len(paths) < 2:
        raise MMJudgeError(
            f"--runs {root}: {len(paths)} run file(s); ranking systems needs at least two"
        )
    return {name: read_run(path) for name, path in zip(run_names(paths), paths, strict=True)}


#: A slices file: ``{(query, doc): slice}``, with ``doc`` None for a line naming a whole query.
Slices = dict[tuple[str, str | None], str]


def read_slices(path: str | os.PathLike[str]) -> Slices:
    """A TSV of item → slice: ``query<TAB>doc<TAB>slice`` for one item, or
    ``query<TAB>slice`` for every item of the query (a line for the item wins). A blank line
    is skipped; an item named twice is an error naming the line."""
    path = Path(path)
    found: Slices = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such file") from None
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error.strerror})") from None
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split("\t")]
        if len(fields) not in (2, 3) or not all(fields):
            raise DatasetError(
                f"{path}:{line_no}: expected 'query<TAB>doc<TAB>slice' or "
                f"'query<TAB>slice', got {_shown(fields)}"
            )
        key = (fields[0], fields[1] if len(fields) == 3 else None)
        if key in found:
            raise DatasetError(f"{path}:{line_no}: {key[0]!r} {key[1] or ''} is named twice")
        found[key] = fields[-1]
    if not found:
        raise DatasetError(f"{path}: no slices in the file")
    return found


def slice_of(slices: Slices, query: str, doc: str) -> str | None:
    """The slice of one item: its own line, else its query's, else None."""
    return slices.get((query, doc)) or slices.get((query, None))
