"""Test banks: per query, the nuggets a relevant result mentions or the questions it answers.

A bank is a JSONL file a person can edit, one entry per line::

    {"query_id": "q01", "id": "3f0c9a1b2d4e5f60", "kind": "nuggets", "text": "red",
     "visual": true}

- ``id`` is the first 16 hex digits of the sha256 of ``[query_id, text]`` (canonical JSON),
  so an entry keeps its id as long as its text is unchanged and an edited text is a new
  entry; a file may leave ``id`` out, and reading it fills it in;
- ``kind`` is ``nuggets`` (facts or attributes a relevant result has) or ``questions``
  (questions a relevant result answers), one kind per file;
- ``visual`` (default false) marks an entry that can be checked by looking at the result's
  image (a colour, a pattern, a cut); it is graded against whatever the cell's modality shows.

The bank's *version* is a content hash of its entries (order-free), so any edit gives a new
version and every judgment records the version it was graded against.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.errors import DatasetError
from mmjudge.files import atomic_file, read_jsonl
from mmjudge.records import canonical_json, sha256_text

KINDS = ("nuggets", "questions")
FIELDS = ("query_id", "id", "kind", "text", "visual")
VERSION_DIGITS = 12


def entry_id(query_id: str, text: str) -> str:
    """The stable id of an entry: a hash of its query id and its text."""
    return sha256_text(canonical_json([query_id, text]))[:16]


@dataclass(frozen=True)
class Entry:
    """One nugget or question of one query."""

    query_id: str
    """The query it belongs to."""
    id: str
    """Hash of ``query_id`` and ``text`` (see :func:`entry_id`)."""
    kind: str
    """``nuggets`` or ``questions``."""
    text: str
    """The nugget (``red``, ``short sleeves``) or the question."""
    visual: bool = False
    """Whether it can be checked from the result's image."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)


class Bank(NamedTuple):
    """A test bank read and checked."""

    kind: str
    entries: dict[str, list[Entry]]
    """Entries by query id, in file order."""
    version: str
    """Content hash of the entries (see :func:`bank_version`)."""
    path: Path | None = None

    def for_query(self, query_id: str) -> list[Entry]:
        return self.entries.get(query_id, [])

    @property
    def n_entries(self) -> int:
        return sum(len(e) for e in self.entries.values())


def bank_version(entries: Iterable[Entry]) -> str:
    """A hash of the bank's content, independent of line order."""
    rows = sorted((e.query_id, e.id, e.kind, e.text, e.visual) for e in entries)
    return sha256_text(canonical_json(rows))[:VERSION_DIGITS]


def make_bank(kind: str, entries: Iterable[Entry], path: Path | None = None) -> Bank:
    by_query: dict[str, list[Entry]] = {}
    for entry in entries:
        by_query.setdefault(entry.query_id, []).append(entry)
    flat = [e for group in by_query.values() for e in group]
    return Bank(kind, by_query, bank_version(flat), path)


def _field_error(path: Path, line_no: int, name: str, problem: str) -> DatasetError:
    return DatasetError(f"{path}:{line_no}: field '{name}' {problem}")


def parse_entry(row: Any, path: Path, line_no: int) -> Entry:
    """One line's entry, checked; problems name the file, line and field."""
    if not isinstance(row, dict):
        raise DatasetError(f"{path}:{line_no}: expected a JSON object with {', '.join(FIELDS)}")
    unknown = sorted(set(row) - set(FIELDS))
    if unknown:
        raise _field_error(path, line_no, unknown[0], f"is not a bank field (use {FIELDS})")
    for name in ("query_id", "text", "kind"):
        value = row.get(name)
        if not isinstance(value, str) or not value.strip():
            raise _field_error(path, line_no, name, "must be a non-empty string")
    if row["kind"] not in KINDS:
        raise _field_error(path, line_no, "kind", f"must be one of {', '.join(KINDS)}")
    visual = row.get("visual", False)
    if not isinstance(visual, bool):
        raise _field_error(path, line_no, "visual", "must be true or false")
    query_id, text = row["query_id"].strip(), " ".join(row["text"].split())
    given = row.get("id")
    if given is not None and not isinstance(given, str):
        raise _field_error(path, line_no, "id", "must be a string (or left out)")
    return Entry(query_id, entry_id(query_id, text), row["kind"], text, visual)


def read_bank(path: str | os.PathLike[str], kind: str | None = None) -> Bank:
    """Read and check a bank file; ``kind``, when given, must be the file's kind.

    An ``id`` that does not match its entry's text (the text was edited) is replaced by the
    new text's id: an edited entry is a new entry.
    """
    path = Path(path)
    entries: list[Entry] = []
    seen: dict[tuple[str, str], int] = {}
    try:
        rows = list(read_jsonl(path, encoding="utf-8-sig"))
    except FileNotFoundError:
        raise DatasetError(f"{path}: no such test bank file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"{path}: cannot read the test bank ({error})") from None
    for line_no, row in rows:
        entry = parse_entry(row, path, line_no)
        first = entries[0].kind if entries else (kind or entry.kind)
        if entry.kind != first:
            raise _field_error(
                path, line_no, "kind", f"is {entry.kind!r} but the bank holds {first!r}"
            )
        earlier = seen.get((entry.query_id, entry.id))
        if earlier is not None:
            raise _field_error(
                path, line_no, "text", f"repeats line {earlier} for query {entry.query_id!r}"
            )
        seen[(entry.query_id, entry.id)] = line_no
        entries.append(entry)
    if not entries:
        raise DatasetError(f"{path}: the test bank has no entries")
    return make_bank(entries[0].kind, entries, path)


def write_bank(bank: Bank, path: str | os.PathLike[str]) -> Path:
    """Write ``bank`` as JSONL (atomically), queries and entries in bank order."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as handle:
        for group in bank.entries.values():
            for entry in group:
                handle.write(entry.to_json() + "\n")
    return path


def apply_edits(bank: Bank, add: list[Entry], remove: set[tuple[str, str]]) -> Bank:
    """The bank with ``remove`` (by id or text) taken out and ``add`` appended per query."""
    kept = [
        e
        for group in bank.entries.values()
        for e in group
        if (e.query_id, e.id) not in remove and (e.query_id, e.text) not in remove
    ]
    known = {(e.query_id, e.id) for e in kept}
    for entry in add:
        if (entry.query_id, entry.id) not in known:
            kept.append(entry)
            known.add((entry.query_id, entry.id))
    kept.sort(
        key=lambda e: (
            list(bank.entries).index(e.query_id)
            if e.query_id in bank.entries
            else len(bank.entries)
        )
    )
    return make_bank(bank.kind, kept, bank.path)


def check_queries(bank: Bank, queries: Mapping[str, str]) -> None:
    """Every query of ``bank`` must be a query of the dataset (``queries``: id → text)."""
    for query_id, group in bank.entries.items():
        if query_id not in queries:
            where = f"{bank.path}: " if bank.path else ""
            raise DatasetError(
                f"{where}query_id {query_id!r} ({len(group)} entries) is not a query of the "
                "dataset; fix the id or remove its entries"
            )
