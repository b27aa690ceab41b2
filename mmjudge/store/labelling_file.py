"""Labelling files: the items a race asks people to grade (``race.labels=ask`` without
``race.label_oracle``), written into ``labelling/`` of its sweep folder as a spreadsheet and as
JSON lines with the same rows, one pair of files per round (``round-1.csv``,
``round-1.jsonl``).

Each row shows what an assessor needs — the query, the result's id, its text fields and its
images (paths or URLs) — and an empty ``grade`` to fill. Either file may be filled; the race
reads both, takes every row that has a grade and leaves the rest for the next time it is run.
When it asks again it writes the files anew with the grades it already holds filled in, so
the files stay the round's whole record. One writer (:func:`write_labelling_files`) and one
reader (:func:`read_labelling_grades`).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.errors import MMJudgeError
from mmjudge.files import read_jsonl, write_atomic

#: The folder of labelling files in a race's sweep folder.
LABELLING_DIR = "labelling"
#: The column (and JSON field) an assessor fills.
GRADE_COLUMN = "grade"
#: Columns every spreadsheet row starts with; the result's text fields follow, then
#: :data:`IMAGES_COLUMN` and the grade.
KEY_COLUMNS = ("query_id", "query", "result_id")
#: The column listing the result's images (paths or URLs, separated by :data:`IMAGE_SEPARATOR`).
IMAGES_COLUMN = "images"
IMAGE_SEPARATOR = " | "


class LabellingError(MMJudgeError):
    """A labelling file holds a grade the race cannot use (the message names the file and
    row)."""


@dataclass(frozen=True)
class LabellingRow:
    """One item shown to an assessor."""

    query_id: str
    """The query's id."""
    query: str
    """The query's text."""
    result_id: str
    """The result's id."""
    fields: tuple[tuple[str, str], ...]
    """The result's text fields, by name, in display order."""
    images: tuple[str, ...]
    """The result's images: paths or URLs."""
    grade: float | None
    """The grade already given, or None where the assessor has yet to give one."""


class LabellingPaths(NamedTuple):
    """A round's pair of labelling files."""

    csv: Path
    """The spreadsheet."""
    jsonl: Path
    """The same rows as JSON lines."""


def labelling_paths(folder: Path, round_number: int) -> LabellingPaths:
    """Where round ``round_number``'s labelling files live in the sweep folder ``folder``."""
    base = Path(folder) / LABELLING_DIR / f"round-{round_number}"
    return LabellingPaths(base.with_suffix(".csv"), base.with_suffix(".jsonl"))


def _shown(grade: float | None) -> str:
    if grade is None:
        return ""
    return str(int(grade)) if float(grade).is_integer() else str(grade)


def write_labelling_files(
    folder: Path, round_number: int, rows: Sequence[LabellingRow]
) -> LabellingPaths:
    """Write round ``round_number``'s rows as its spreadsheet and JSON-lines file (each written
    whole, atomically); their paths."""
    paths = labelling_paths(folder, round_number)
    paths.csv.parent.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    for row in rows:
        names += [name for name, _ in row.fields if name not in names]
    header = [*KEY_COLUMNS, *names, IMAGES_COLUMN, GRADE_COLUMN]
    lines: list[list[str]] = [header]
    for row in rows:
        texts = dict(row.fields)
        lines.append(
            [
                row.query_id,
                row.query,
                row.result_id,
                *(texts.get(name, "") for name in names),
                IMAGE_SEPARATOR.join(row.images),
                _shown(row.grade),
            ]
        )
    # A byte-order mark first, so spreadsheet programs read the file as UTF-8 (queries and
    # product texts are rarely plain ASCII); the reader takes the file with or without one.
    write_atomic(paths.csv, "\ufeff" + _csv_text(lines))
    objects = [
        {
            "query_id": row.query_id,
            "query": row.query,
            "result_id": row.result_id,
            "fields": dict(row.fields),
            "images": list(row.images),
            GRADE_COLUMN: None if row.grade is None else _number(row.grade),
        }
        for row in rows
    ]
    write_atomic(paths.jsonl, "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects))
    return paths


def _number(grade: float) -> int | float:
    return int(grade) if float(grade).is_integer() else grade


def _csv_text(lines: Sequence[Sequence[str]]) -> str:
    import io

    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(lines)
    return buffer.getvalue()


class _Found(NamedTuple):
    grade: float
    where: str


def read_labelling_grades(
    folder: Path, round_number: int, scale: Sequence[float]
) -> dict[tuple[str, str], float]:
    """The grades given in round ``round_number``'s labelling files, by (query id, result id):
    every row of either file whose grade is filled (blank rows are still to do).

    Raises:
        LabellingError: a grade not on ``scale``, not a number, a row without its ids, or the
            two files giving one item different grades (one line naming the file and row)."""
    paths = labelling_paths(folder, round_number)
    found: dict[tuple[str, str], _Found] = {}
    for key, grade, where in [*_csv_grades(paths.csv, scale), *_jsonl_grades(paths.jsonl, scale)]:
        earlier = found.get(key)
        if earlier is not None and earlier.grade != grade:
            raise LabellingError(
                f"{where}: grade {_shown(grade)} for query {key[0]!r}, result {key[1]!r}, but "
                f"{earlier.where} gives {_shown(earlier.grade)}; make them agree or clear one"
            )
        found[key] = _Found(grade, where)
    return {key: entry.grade for key, entry in found.items()}


def _checked(value: Any, where: str, scale: Sequence[float]) -> float | None:
    """A filled grade as a number on ``scale``; None for a blank one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    on = ", ".join(_shown(g) for g in scale)
    try:
        grade = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        grade = math.nan
    if isinstance(value, bool) or not math.isfinite(grade) or grade not in scale:
        raise LabellingError(
            f"{where}: grade {value!r} is not on the dataset's scale ({on}); write one of "
            "them, or leave it blank to grade later"
        )
    return grade


def _ids(row: Mapping[str, Any], where: str) -> tuple[str, str]:
    query_id, result_id = row.get("query_id"), row.get("result_id")
    if query_id in (None, "") or result_id in (None, ""):
        raise LabellingError(
            f"{where}: the row has no query_id or result_id; keep the ids the race wrote"
        )
    return str(query_id), str(result_id)


def _csv_grades(path: Path, scale: Sequence[float]) -> list[tuple[tuple[str, str], float, str]]:
    if not path.is_file():
        return []
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None or GRADE_COLUMN not in reader.fieldnames:
                raise LabellingError(
                    f"{path}: no '{GRADE_COLUMN}' column; keep the header the race wrote"
                )
            grades = []
            for row in reader:
                where = f"{path}:{reader.line_num}"
                grade = _checked(row.get(GRADE_COLUMN), where, scale)
                if grade is not None:
                    grades.append((_ids(row, where), grade, where))
            return grades
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise LabellingError(f"{path}: cannot be read ({error}); save it as UTF-8 CSV") from None


def _jsonl_grades(path: Path, scale: Sequence[float]) -> list[tuple[tuple[str, str], float, str]]:
    if not path.is_file():
        return []
    grades = []
    try:
        for line_no, row in read_jsonl(path):
            where = f"{path}:{line_no}"
            if not isinstance(row, dict):
                raise LabellingError(f"{where}: not a JSON object; keep one object a line")
            grade = _checked(row.get(GRADE_COLUMN), where, scale)
            if grade is not None:
                grades.append((_ids(row, where), grade, where))
    except OSError as error:
        raise LabellingError(f"{path}: cannot be read ({error})") from None
    except MMJudgeError as error:
        if isinstance(error, LabellingError):
            raise
        raise LabellingError(str(error)) from None
    return grades
