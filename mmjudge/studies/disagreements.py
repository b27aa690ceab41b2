"""The items of saved runs worth a person's look: a judge's grade differs from the humans'
consensus, a judge gave a middle grade (the least sure), an answer could not be read, or the
judges disagree among themselves. ``mmjudge review export`` (:mod:`mmjudge.api.review`) lists
them for a reviewer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from mmjudge.metrics import consensus
from mmjudge.records import JudgmentRecord
from mmjudge.store import Key, SavedRun


class Candidate(NamedTuple):
    """An item worth a look and why."""

    key: Key
    """The item: ``(query_id, result_id)``."""
    reasons: list[str]
    """Why, in the order found (``judge differs from humans``, ``middle grade``...)."""


def _reasons(runs: Sequence[SavedRun], key: Key, grades: list[int], human: float) -> list[str]:
    labels = []
    reasons: list[str] = []
    for run in runs:
        row = run.rows.get(key)
        if row is None or row.error:
            continue
        if row.label is None:
            reasons.append("unparseable")
            continue
        labels.append(int(row.label))
    if human == human and any(label != human for label in labels):
        reasons.append("judge differs from humans")
    if any(grades[0] < label < grades[-1] for label in labels):
        reasons.append("middle grade")
    if len(set(labels)) > 1:
        reasons.append("judges split")
    return list(dict.fromkeys(reasons))


def human_consensus_of(row: JudgmentRecord) -> float:
    """The consensus of the row's human grades (NaN when it has none)."""
    humans = {n: [g] for n, g in (row.human_labels or {}).items() if g is not None}
    return float(consensus(humans)[0]) if humans else float("nan")


def candidates(runs: Sequence[SavedRun]) -> list[Candidate]:
    """The items worth a look in one dataset's runs, most reasons first."""
    grades = sorted({g for run in runs for g in run.grades}) or [0, 1, 2]
    keys = list(dict.fromkeys(key for run in runs for key in run.rows))
    found = []
    for key in keys:
        row = next(run.rows[key] for run in runs if key in run.rows)
        reasons = _reasons(runs, key, grades, human_consensus_of(row))
        if reasons:
            found.append(Candidate(key, reasons))
    found.sort(key=lambda c: -len(c.reasons))
    return found
