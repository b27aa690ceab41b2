"""The review file: items for a person to look at, and what they filled in (:class:`ReviewRow`).

``mmjudge review export``, ``mmjudge monitor audit`` and ``mmjudge plan --next`` write it
(:func:`write_review`); ``mmjudge review import`` and ``mmjudge estimate --sample`` read it
back (:func:`read_review`). It is CSV or JSON lines, by the file's suffix, with the columns of
:data:`COLUMNS`: first what the person is shown about the item, then the four columns they
fill in (:data:`FILL_IN`), then, for items drawn by ``plan --next``, how each was drawn
(:data:`DRAW_COLUMNS`), and last the layout's version.

What is shown (the query, the texts, the humans' and the judges' grades, the reasons, the
test-bank entries) is written for the person and not read back: only the item, its scale,
its bank, the filled-in columns and the draw are. In CSV, mappings and lists are written as
short text (``annotator_a=1; annotator_b=2``); in JSON lines they stay mappings and lists.

Layout versions (``schema_version``):

1. The first layout. Files written before the version column existed lack it and read
   the same.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.errors import DatasetError
from mmjudge.files import atomic_file, read_jsonl

#: The layout's version (see the module docstring).
REVIEW_SCHEMA_VERSION = 1
#: The columns the person fills in.
FILL_IN = ("corrected_grade", "add_entries", "remove_entries", "note")
#: Every row's columns, in order.
COLUMNS = (
    "dataset",
    "query_id",
    "query",
    "result_id",
    "result_text",
    "image",
    "thumbnail",
    "grades",
    "human",
    "consensus",
    "judges",
    "reasons",
    "entries",
    "bank",
    "bank_version",
    *FILL_IN,
)
#: The columns of items drawn with known chances (``mmjudge plan --next``).
DRAW_COLUMNS = ("inclusion_probability", "pool_size")
#: The columns a file must have to be read back.
NEEDED = ("dataset", "query_id", "result_id", *FILL_IN)


@dataclass(frozen=True)
class EntryGrades:
    """A test-bank entry of the item's query with what each bank cell made of it."""

    id: str
    """The entry's id in its bank."""
    kind: str
    """The bank's kind (``nuggets``, ``questions``…; empty when the entry is unknown)."""
    text: str
    """The entry's text (``?`` when the bank no longer holds it)."""
    grades: dict[str, int] = field(default_factory=dict)
    """Each bank cell's grade of the entry, by the cell's name."""
    spans: dict[str, str] = field(default_factory=dict)
    """The support each bank cell quoted, by the cell's name."""


@dataclass(frozen=True)
class ShownItem:
    """What the file shows the person about an item (written for them, never read back)."""

    query: str = ""
    """The query's text."""
    result_text: str = ""
    """The result's fields, ``name: value`` joined with `` | ``."""
    image: str = ""
    """The result's first image."""
    thumbnail: str = ""
    """A small copy of it beside the file, relative to the file's folder."""
    human: dict[str, int] = field(default_factory=dict)
    """Each annotator's grade."""
    consensus: int | None = None
    """The annotators' consensus grade (None without one)."""
    judges: dict[str, int | None] = field(default_factory=dict)
    """Each judge's grade, by the cell's name (None: no readable grade)."""
    reasons: tuple[str, ...] = ()
    """Why the item is worth a look."""
    entries: tuple[EntryGrades, ...] = ()
    """The test-bank entries of the item's query, with the bank cells' grades."""


@dataclass(frozen=True)
class Correction:
    """What the person filled in."""

    corrected_grade: int | None = None
    """The grade they give the item (None: left empty)."""
    add_entries: tuple[str, ...] = ()
    """Test-bank entries to add to the query (``visual:`` in front: seen on the image)."""
    remove_entries: tuple[str, ...] = ()
    """Entries to remove, by id or text."""
    note: str = ""
    """Their note."""


@dataclass(frozen=True)
class Draw:
    """How an item drawn for labelling was drawn (``mmjudge plan --next``)."""

    inclusion_probability: float | None = None
    """The chance the draw had of picking the item."""
    pool_size: int | None = None
    """How many unlabelled items it drew from."""


@dataclass(frozen=True)
class ReviewRow:
    """One item of the review file."""

    dataset: str
    """Dataset name."""
    query_id: str
    """The item's query."""
    result_id: str
    """The item's result."""
    grades: tuple[int, ...] = ()
    """The scale a corrected grade must be on (empty: any whole grade)."""
    bank: str = ""
    """The test bank that entry edits go to (empty: none)."""
    bank_version: str = ""
    """That bank's version when the file was written."""
    shown: ShownItem | None = None
    """What the person is shown (None for a row read back)."""
    correction: Correction = field(default_factory=Correction)
    """What the person filled in."""
    draw: Draw | None = None
    """How the item was drawn, for items drawn with known chances."""
    schema_version: int = REVIEW_SCHEMA_VERSION
    """Version of this layout."""


class ReviewLine(NamedTuple):
    """A row read back, with the line it is on (for messages that point at it)."""

    line: int
    """Line number in the file (the CSV header is line 1)."""
    row: ReviewRow
    """The row."""


def write_review(rows: Iterable[ReviewRow], path: Path) -> int:
    """Write ``rows`` as CSV or JSON lines (by ``path``'s suffix), atomically; returns how
    many. The draw's columns are written when any row was drawn."""
    rows = list(rows)
    drawn = any(row.draw is not None for row in rows)
    columns = [*COLUMNS, *(DRAW_COLUMNS if drawn else ()), "schema_version"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as handle:
        if path.suffix == ".jsonl":
            for row in rows:
                handle.write(json.dumps(_layout(row, drawn), ensure_ascii=False) + "\n")
        else:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(_flat(_layout(row, drawn)) for row in rows)
    return len(rows)


def read_review(path: Path) -> list[ReviewLine]:
    """Every row of a filled-in review file, CSV or JSON lines. A file without the columns
    it needs, or a filled-in value that cannot be used, is a
    :class:`~mmjudge.errors.DatasetError` naming the file, the line and the column."""
    if not path.is_file():
        raise DatasetError(f"{path}: no such review file")
    if path.suffix == ".jsonl":
        found = []
        for line, data in read_jsonl(path, encoding="utf-8-sig"):
            if not isinstance(data, dict):
                raise DatasetError(f"{path}:{line}: expected a JSON object (a review row)")
            found.append(ReviewLine(line, _row(data, f"{path}:{line}")))
        return found
    reader = csv.DictReader(path.read_text(encoding="utf-8-sig").splitlines())
    missing = [c for c in NEEDED if c not in (reader.fieldnames or [])]
    if missing:
        raise DatasetError(f"{path}:1: column '{missing[0]}' is missing (export a fresh file)")
    return [ReviewLine(i, _row(data, f"{path}:{i}")) for i, data in enumerate(reader, start=2)]


# --------------------------------------------------------------------------- the layout


def _layout(row: ReviewRow, drawn: bool) -> dict[str, Any]:
    """The row as JSON lines hold it (mappings and lists as they are)."""
    shown = row.shown or ShownItem()
    fix = row.correction
    data: dict[str, Any] = {
        "dataset": row.dataset,
        "query_id": row.query_id,
        "query": shown.query,
        "result_id": row.result_id,
        "result_text": shown.result_text,
        "image": shown.image,
        "thumbnail": shown.thumbnail,
        "grades": ",".join(str(g) for g in row.grades),
        "human": dict(shown.human),
        "consensus": shown.consensus,
        "judges": dict(shown.judges),
        "reasons": list(shown.reasons),
        "entries": [
            {"id": e.id, "kind": e.kind, "text": e.text, "grades": e.grades, "spans": e.spans}
            for e in shown.entries
        ],
        "bank": row.bank,
        "bank_version": row.bank_version,
        "corrected_grade": "" if fix.corrected_grade is None else fix.corrected_grade,
        "add_entries": "; ".join(fix.add_entries),
        "remove_entries": "; ".join(fix.remove_entries),
        "note": fix.note,
    }
    if drawn:
        draw = row.draw or Draw()
        data["inclusion_probability"] = draw.inclusion_probability
        data["pool_size"] = draw.pool_size
    data["schema_version"] = row.schema_version
    return data


def _flat(data: Mapping[str, Any]) -> dict[str, Any]:
    """A row for the CSV: mappings and lists as short readable text."""
    out = dict(data)
    out["human"] = "; ".join(f"{n}={g}" for n, g in data["human"].items())
    out["judges"] = "; ".join(f"{n}={'-' if g is None else g}" for n, g in data["judges"].items())
    out["reasons"] = "; ".join(data["reasons"])
    out["entries"] = "; ".join(_entry_text(e) for e in data["entries"])
    for key in ("consensus", *DRAW_COLUMNS):
        if key in out and out[key] is None:
            out[key] = ""
    return out


def _entry_text(entry: Mapping[str, Any]) -> str:
    grades = ", ".join(f"{g}" for g in entry["grades"].values())
    spans = " / ".join(entry["spans"].values())
    return f"[{entry['id']}] {entry['text']} = {grades}" + (f" ({spans})" if spans else "")


def _row(data: Mapping[str, Any], where: str) -> ReviewRow:
    """A row read back: the item, its scale and bank, the filled-in columns, the draw."""
    for column in ("query_id", "result_id"):
        if data.get(column) in (None, ""):
            raise DatasetError(f"{where}: field '{column}' is missing")
    grades = _scale(data.get("grades"), where)
    probability = _number(data, "inclusion_probability", float, where)
    pool = _number(data, "pool_size", int, where)
    return ReviewRow(
        dataset=str(data.get("dataset") or ""),
        query_id=str(data["query_id"]),
        result_id=str(data["result_id"]),
        grades=grades,
        bank=str(data.get("bank") or ""),
        bank_version=str(data.get("bank_version") or ""),
        correction=Correction(
            corrected_grade=_corrected(data.get("corrected_grade"), grades, where),
            add_entries=_split(data.get("add_entries")),
            remove_entries=_split(data.get("remove_entries")),
            note=str(data.get("note") or ""),
        ),
        draw=None if probability is None and pool is None else Draw(probability, pool),
    )


def _scale(value: Any, where: str) -> tuple[int, ...]:
    parts = [part.strip() for part in str(value or "").split(",") if part.strip()]
    if not all(part.lstrip("-").isdigit() for part in parts):
        raise DatasetError(
            f"{where}: field 'grades' must be whole grades separated by commas, got {value!r}"
        )
    return tuple(int(part) for part in parts)


def _corrected(value: Any, grades: Sequence[int], where: str) -> int | None:
    text = str("" if value is None else value).strip()
    if not text:
        return None
    if not text.lstrip("-").isdigit() or (grades and int(text) not in grades):
        scale = f" on the scale {','.join(str(g) for g in grades)}" if grades else ""
        raise DatasetError(
            f"{where}: field 'corrected_grade' must be a whole grade{scale}, got {text!r}"
        )
    return int(text)


def _split(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return tuple(part.strip() for part in str(value or "").split(";") if part.strip())


def _number(data: Mapping[str, Any], column: str, kind: type[float] | type[int], where: str) -> Any:
    """A draw's number (None when the cell is empty)."""
    value = data.get(column)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(value)
        if kind is int and not number.is_integer():
            raise ValueError
        return kind(number)
    except (TypeError, ValueError, OverflowError):
        wanted = "a whole number" if kind is int else "a number"
        raise DatasetError(f"{where}: field '{column}' must be {wanted}, got {value!r}") from None
