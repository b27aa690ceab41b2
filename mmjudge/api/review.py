"""A person in the loop: the rows worth a person's look out of saved runs, written as a review
file, and the filled-in file read back into labels and test-bank edits. The file's columns,
its writer and its reader are :mod:`mmjudge.store.review_file`'s. ``mmjudge review export`` and
``mmjudge review import`` are the command over this module.

**Export** lists, for each dataset, the items a person should look at, most reasons first:
a judge's grade differs from the humans' consensus, a judge gave a middle grade (least sure),
an answer could not be read, or the judges disagree among themselves. Each row carries the
query, the result's text and image (with a thumbnail beside the file), the humans' and every
judge's grades, and for test-bank cells each entry's grade and quoted support. Four columns
are for the reviewer: ``corrected_grade`` (on the row's ``grades``), ``add_entries`` and
``remove_entries`` (test-bank edits: texts separated by ``;``, ``visual:`` in front of an
entry seen on the image; removals by entry id or text; they go to the bank in the row's
``bank`` column, the first test-bank cell's) and ``note``.

**Import** reads the filled-in file back. Corrected grades become a new assessor's labels,
written as TREC qrels (``<dataset>.<assessor>.qrels``) that ``mmjudge agree``
scores every judge against like any human's. Bank edits make a new bank version, written in
place of the old file (the old one is kept as ``<name>.<old version>.jsonl``); a sweep run
again then calls the model only for the queries whose entries changed, as every other
request is answered from the response cache.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mmjudge.data.qrels import write_qrels
from mmjudge.errors import DatasetError, MMJudgeError
from mmjudge.store import Key, SavedRun, completed_runs
from mmjudge.store.review_file import (
    EntryGrades,
    ReviewLine,
    ReviewRow,
    ShownItem,
    read_review,
    write_review,
)
from mmjudge.studies.disagreements import Candidate, candidates, human_consensus_of
from mmjudge.testbank.bank import Entry, apply_edits, entry_id, read_bank, write_bank


def _banks_of(runs: Sequence[SavedRun]) -> tuple[SavedRun | None, dict[str, Entry]]:
    """The first test-bank run (whose bank a row's edits go to) and the entries of every bank
    the runs graded against, by id, from the bank files as they are now."""
    first = None
    entries: dict[str, Entry] = {}
    for run in runs:
        info = run.summary.testbank
        if not info:
            continue
        first = first or run
        path = Path(info.path or "")
        if path.is_file():
            bank = read_bank(path)
            entries.update({e.id: e for group in bank.entries.values() for e in group})
    return first, entries


def _entries_cell(
    runs: Sequence[SavedRun], key: Key, texts: dict[str, Entry]
) -> tuple[EntryGrades, ...]:
    """Each bank entry of the item's query with every bank cell's grade and quoted support."""
    out: dict[str, EntryGrades] = {}
    for run in runs:
        row = run.rows.get(key)
        if row is None:
            continue
        for entry, grade in (row.entry_grades or {}).items():
            known = texts.get(entry)
            slot = out.setdefault(
                entry,
                EntryGrades(entry, known.kind if known else "", known.text if known else "?"),
            )
            slot.grades[run.name] = grade
            span = (row.spans or {}).get(entry)
            if span:
                slot.spans[run.name] = span
    return tuple(out.values())


def _item_texts(runs: Sequence[SavedRun], keys: set[Key], out: Path) -> dict[Key, ShownItem]:
    """Query, result text, image and thumbnail of ``keys`` from the dataset the runs read
    (the rest of what is shown is filled in by :func:`_row`)."""
    from mmjudge.data import load_dataset
    from mmjudge.report.browser import thumbnail

    config = runs[0].summary.dataset_config()
    found: dict[Key, ShownItem] = {}
    if config is None or not keys:
        return found
    try:
        cfg = dataclasses.replace(config, sample_queries=None)
        for example in load_dataset(cfg, cache=runs[0].summary.prepared_cache()):
            key = (example.query_id, example.result_id)
            if key not in keys:
                continue
            image = example.images[0] if example.images else ""
            found[key] = ShownItem(
                query=example.query,
                result_text=" | ".join(f"{n}: {v}" for n, v in example.fields if v),
                image=image,
                thumbnail=(thumbnail(image, out) or "") if image else "",
            )
            if len(found) == len(keys):
                break
    except MMJudgeError as error:
        print(
            f"mmjudge review: {runs[0].summary.cell.dataset}: texts not shown ({error})",
            file=sys.stderr,
        )
    return found


def review_rows(root: Path, out_dir: Path, limit: int) -> list[ReviewRow]:
    """The review rows of every dataset below ``root`` (at most ``limit`` per dataset)."""
    runs = [run for run in completed_runs(root) if run.kind == "single"]
    if not runs:
        raise MMJudgeError(f"{root}: no completed runs below it")
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in runs:
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    rows = []
    for dataset, group in by_dataset.items():
        rows += item_rows(dataset, group, candidates(group)[:limit], out_dir)
    return rows


def item_rows(
    dataset: str, runs: Sequence[SavedRun], chosen: Sequence[Candidate], out_dir: Path
) -> list[ReviewRow]:
    """Review rows of the ``chosen`` items of one dataset's runs, in the order given."""
    texts = _item_texts(runs, {c.key for c in chosen}, out_dir)
    banked = _banks_of(runs)
    return [_row(dataset, runs, c, texts.get(c.key), banked) for c in chosen]


def _row(
    dataset: str,
    runs: Sequence[SavedRun],
    candidate: Candidate,
    text: ShownItem | None,
    banked: tuple[SavedRun | None, dict[str, Entry]],
) -> ReviewRow:
    key = candidate.key
    first = next(run.rows[key] for run in runs if key in run.rows)
    human = human_consensus_of(first)
    bank_run, bank_entries = banked
    info = bank_run.summary.testbank if bank_run else None
    return ReviewRow(
        dataset=dataset,
        query_id=key[0],
        result_id=key[1],
        grades=tuple(runs[0].grades or ()),
        bank=(info.path or "") if info else "",
        bank_version=info.version if info else "",
        shown=dataclasses.replace(
            text or ShownItem(),
            human=dict(first.human_labels or {}),
            consensus=None if human != human else int(human),
            judges={run.name: run.rows[key].label for run in runs if key in run.rows},
            reasons=tuple(candidate.reasons),
            entries=_entries_cell(runs, key, bank_entries),
        ),
    )


# --------------------------------------------------------------------------- import


class Edits(NamedTuple):
    add: dict[str, list[Entry]]
    """Bank path → entries to add."""
    remove: dict[str, set[tuple[str, str]]]
    """Bank path → (query id, entry id or text) to remove."""


def _edits(path: Path, rows: Sequence[ReviewLine]) -> Edits:
    edits = Edits({}, {})
    for line_no, row in rows:
        adds, removes = row.correction.add_entries, row.correction.remove_entries
        if not (adds or removes):
            continue
        if not row.bank:
            raise DatasetError(
                f"{path}:{line_no}: field 'add_entries'/'remove_entries' needs a test-bank cell "
                "(the row has no 'bank')"
            )
        for text in adds:
            visual = text.lower().startswith("visual:")
            body = " ".join((text[7:] if visual else text).split())
            kind = read_bank(row.bank).kind
            edits.add.setdefault(row.bank, []).append(
                Entry(row.query_id, entry_id(row.query_id, body), kind, body, visual)
            )
        edits.remove.setdefault(row.bank, set()).update((row.query_id, r) for r in removes)
    return edits


def import_review(path: Path, assessor: str, out_dir: Path) -> list[str]:
    """Apply a filled-in review file; returns one line per file written. ``out_dir`` is
    created (with its parents) when it does not exist yet."""
    rows = read_review(path)
    lines = []
    grades: dict[str, dict[str, dict[str, int]]] = {}
    for _, row in rows:
        grade = row.correction.corrected_grade
        if grade is not None:
            qrels = grades.setdefault(row.dataset, {})
            qrels.setdefault(row.query_id, {})[row.result_id] = grade
    if grades:
        _make_folder(out_dir)
    for dataset, qrels in grades.items():
        target = out_dir / f"{dataset}.{assessor}.qrels"
        write_qrels(qrels, target)
        n = sum(len(d) for d in qrels.values())
        lines.append(f"{target}: {n} corrected grades by assessor '{assessor}'")
    edits = _edits(path, rows)
    for bank_file in sorted(set(edits.add) | set(edits.remove)):
        old = read_bank(bank_file)
        new = apply_edits(old, edits.add.get(bank_file, []), edits.remove.get(bank_file, set()))
        if new.version == old.version:
            continue
        backup = Path(bank_file).with_name(f"{Path(bank_file).stem}.{old.version}.jsonl")
        write_bank(old, backup)
        write_bank(new, bank_file)
        lines.append(
            f"{bank_file}: version {new.version} ({new.n_entries} entries), replacing "
            f"{old.version} (kept as {backup.name})"
        )
    return lines


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as error:
        raise MMJudgeError(f"--out {folder}: a file is in the way; name a folder") from error
    except OSError as error:
        raise MMJudgeError(f"--out {folder}: cannot create it ({error.strerror})") from error


def export_review(source: Path, target: Path, limit: int = 200) -> int:
    """Write the review file of a sweep's or a run's folder to ``target`` (``.csv`` or
    ``.jsonl``): up to ``limit`` rows per dataset, with thumbnails beside it. Returns the
    number of rows."""
    if target.suffix not in (".csv", ".jsonl"):
        raise MMJudgeError(f"--out {target}: name a .csv or .jsonl file")
    return write_review(review_rows(source, target.parent, limit), target)
