"""Saved runs lined up item by item: the annotators' consensus for each item, and the checks
and names of runs combined into one ensemble."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mmjudge.display import MISSING
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import consensus
from mmjudge.store import Key, SavedRun

FloatArray = npt.NDArray[np.float64]


def human_consensus(runs: Sequence[SavedRun], keys: Sequence[Key]) -> FloatArray:
    """The annotators' consensus grade (lower median, as in the summaries) for each key,
    taken from the first run that has a row for it."""
    per_key: list[dict[str, int]] = []
    for key in keys:
        labels: dict[str, int] = {}
        for run in runs:
            row = run.rows.get(key)
            if row is not None:
                labels = row.human_labels or {}
                break
        per_key.append(labels)
    names = sorted({name for labels in per_key for name in labels})
    if not names:
        return np.full(len(keys), np.nan)
    columns = {
        name: np.array(
            [math.nan if labels.get(name) is None else float(labels[name]) for labels in per_key]
        )
        for name in names
    }
    return consensus(columns)


def check_members(runs: Sequence[SavedRun]) -> tuple[list[int], float | None]:
    """The scale and relevance threshold runs share; an error when they cannot be combined."""
    datasets = {run.summary.cell.dataset for run in runs}
    if len(datasets) != 1:
        names = ", ".join(sorted(str(d) for d in datasets))
        raise MMJudgeError(f"ensemble members must share one dataset, got: {names}")
    scales = {tuple(run.grades) for run in runs}
    if len(scales) != 1:
        raise MMJudgeError(f"ensemble members use different grade scales: {sorted(scales)}")
    grades = list(scales.pop())
    if not grades:
        raise MMJudgeError(f"{runs[0].run_dir}: summary.json lists no grades")
    return grades, runs[0].relevant_from


def short_names(runs: Sequence[SavedRun]) -> tuple[str, list[str]]:
    """(what all runs share, what tells each apart) from model, prompt and modality."""
    parts = [
        (r.summary.cell.model, r.summary.cell.prompt_id, r.summary.cell.modality) for r in runs
    ]
    varying = [i for i in range(3) if len({p[i] for p in parts}) > 1]
    if not varying:
        return parts[0][0], [r.run_dir.name for r in runs]
    shared = parts[0][0] if 0 not in varying else ""
    return shared, ["/".join(p[i] for i in varying) for p in parts]


def joined(values: Iterable[Any]) -> str:
    """Distinct values joined by ``+``, in order of first appearance."""
    return "+".join(dict.fromkeys(str(v) for v in values))


def grade_text(value: float) -> str:
    return MISSING if math.isnan(value) else str(int(value))
