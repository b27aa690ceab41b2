"""A sweep's labels as qrels in memory: one judge's grades and the human consensus on the
items it judged, for commands that take qrels files (``mmjudge estimate SWEEP_DIR``) without
an ``mmjudge export`` step in between."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from mmjudge.data.qrels import Qrels, QrelsFile
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import consensus
from mmjudge.store import SavedRun, completed_runs


class SweepLabels(NamedTuple):
    """The human consensus and one judge's labels of a sweep, as qrels read from files."""

    human: QrelsFile
    """The assessors' consensus grade (the lower median) of each item the judge judged."""
    judge: QrelsFile
    """The judge's grades (failed and unparseable items left out)."""
    name: str
    """The judge's run folder name."""
    left_out: int = 0
    """Items left out because a trained judge learnt from them (its own κ leaves them out
    too: :attr:`~mmjudge.store.SavedRun.scored_keys`)."""


def judge_names(root: Path) -> list[str]:
    """The run folder names of the completed judges (runs, panels, cascades) below ``root``."""
    return [run.run_dir.name for run in completed_runs(root)]


def sweep_labels(root: str | Path, judge: str | None = None) -> SweepLabels:
    """The consensus and the labels of the judge named ``judge`` (its run folder's name, or
    its model's name where one run has it) in the sweep ``root``; ``judge`` may be left out
    when the sweep holds one judge. A trained judge's items it learnt from are left out, as
    its own κ leaves them out.

    Raises:
        MMJudgeError: no completed run, several and no ``judge``, or an unknown ``judge``
            (each names the choices).
    """
    root = Path(root)
    runs = completed_runs(root)
    if not runs:
        raise MMJudgeError(f"{root}: no completed runs below it (no summary.json with judgments)")
    run = _chosen(root, runs, judge)
    labels: Qrels = {}
    human: Qrels = {}
    scored = run.scored_keys
    for query, doc in scored:
        row = run.rows[(query, doc)]
        if row.label is not None and not row.error:
            labels.setdefault(str(query), {})[str(doc)] = int(row.label)
        grades = {n: [float(g)] for n, g in (row.human_labels or {}).items() if g is not None}
        if grades:
            agreed = float(consensus(grades)[0])
            if agreed == agreed:  # not NaN
                human.setdefault(str(query), {})[str(doc)] = round(agreed)
    where = run.run_dir
    left_out = len(run.rows) - len(scored)
    return SweepLabels(
        QrelsFile(where, human, {}), QrelsFile(where, labels, {}), where.name, left_out
    )


def _chosen(root: Path, runs: list[SavedRun], judge: str | None) -> SavedRun:
    names = [run.run_dir.name for run in runs]
    if judge is None:
        if len(runs) == 1:
            return runs[0]
        raise MMJudgeError(
            f"{root} holds {len(runs)} judges; pick one with --judge NAME: {', '.join(names)}"
        )
    exact = [run for run in runs if judge in (run.run_dir.name, run.name)]
    by_model = [run for run in runs if run.summary.cell.model == judge]
    found = exact or by_model
    if len(found) == 1:
        return found[0]
    if found:
        shown = ", ".join(run.run_dir.name for run in found)
        raise MMJudgeError(f"--judge {judge}: {len(found)} runs have that model; name one: {shown}")
    raise MMJudgeError(
        f"--judge {judge}: no such judge in {root}; choose one of: {', '.join(names)}"
    )
