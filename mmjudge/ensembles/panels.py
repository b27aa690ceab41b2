"""Panels: several runs on one dataset (several prompts on one model, or several models)
combined item by item into one judge, written as a virtual run; no new calls.

Items are aligned by ``(query_id, result_id)``; an item any member judged is an item of the
panel. Grades are combined by an aggregator (:mod:`mmjudge.metrics.aggregate`); a panel item
costs the sum of its members' costs on it, and its latency is its slowest member's (members
can be called at once).

With members judged several times (``runner.samples``), the panel's sample k combines the
members' sample-k grades (:func:`mmjudge.ensembles.virtual.sample_views`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmjudge.ensembles.virtual import (
    Combined,
    combined_record,
    member,
    sample_views,
    write_virtual_run,
)
from mmjudge.errors import MMJudgeError
from mmjudge.metrics.aggregate import AGGREGATORS, aggregate
from mmjudge.records import JudgmentRecord
from mmjudge.store import Ensemble, RunSummary, SavedRun, load_run, union_keys
from mmjudge.studies.members import check_members, grade_text, short_names


def load_all(paths: Sequence[Path | SavedRun]) -> list[SavedRun]:
    """Runs given as folders or already read."""
    return [p if isinstance(p, SavedRun) else load_run(Path(p)) for p in paths]


def build_panel(
    members: Sequence[Path | SavedRun],
    out_dir: Path,
    *,
    how: str = "majority",
    seed: int = 0,
) -> RunSummary:
    """Combine ``members`` item by item and write the panel as a virtual run in
    ``out_dir``; returns its summary."""
    if how not in AGGREGATORS:
        raise MMJudgeError(f"unknown aggregator {how!r}; use one of {', '.join(AGGREGATORS)}")
    runs = load_all(members)
    if len(runs) < 2:
        raise MMJudgeError("a panel needs at least two member runs")
    grades, relevant_from = check_members(runs)
    shared, names = short_names(runs)
    model = f"panel:{how}({shared + ': ' if shared else ''}{'+'.join(names)})"
    samples = [
        _combine(views, names, how=how, grades=grades, seed=seed, run_id=out_dir.name, model=model)
        for views in sample_views(runs)
    ]
    ensemble = Ensemble(
        members=[member(run, out_dir, "member") for run in runs], aggregator=how, seed=seed
    )
    return write_virtual_run(
        out_dir,
        samples[0],
        runs,
        kind="panel",
        model=model,
        grades=grades,
        relevant_from=relevant_from,
        ensemble=ensemble,
        repeats=dict(enumerate(samples[1:], start=1)),
    )


def _combine(
    runs: Sequence[SavedRun],
    names: Sequence[str],
    *,
    how: str,
    grades: list[int],
    seed: int,
    run_id: str,
    model: str,
) -> list[JudgmentRecord]:
    """The panel's rows from the members' rows (of one sample)."""
    keys = union_keys(runs)
    matrix = np.vstack([run.labels(keys) for run in runs])
    labels = aggregate(matrix, how, grades, seed)
    records = []
    for i, key in enumerate(keys):
        rows = [run.rows.get(key) for run in runs]
        votes = ", ".join(
            f"{name}={grade_text(v)}" for name, v in zip(names, matrix[:, i], strict=True)
        )
        latency = max((row.latency_s or 0.0 for row in rows if row is not None), default=0.0)
        combined = Combined(float(labels[i]), f"{how} of {votes}", float(latency))
        records.append(
            combined_record(
                run_id, runs, key, rows, provider="panel", model=model, combined=combined
            )
        )
    return records
