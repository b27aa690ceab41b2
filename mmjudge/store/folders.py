"""Run folders and sweep folders: finding runs below a folder and reading one back whole."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads when labels are compared, not before the first call
    import numpy as np
    import numpy.typing as npt

from mmjudge.data.schema import item_key
from mmjudge.errors import MMJudgeError
from mmjudge.records import JudgmentRecord
from mmjudge.store.blocks import SINGLE
from mmjudge.store.rows import SUMMARY, read_records, read_sample_records
from mmjudge.store.status import ANALYSED
from mmjudge.store.summary import RunSummary, read_summary

#: An item of a dataset: (query id, result id).
Key = tuple[str, str]
#: Sub-folder of a sweep that holds its virtual runs (panels and cascades).
ENSEMBLES = "ensembles"


def run_dirs(root: Path) -> list[Path]:
    """Run folders at or below ``root`` (a run, a sweep, or a folder of sweeps)."""
    root = Path(root)
    if (root / SUMMARY).is_file():
        return [root]
    return sorted(p.parent for p in root.rglob(SUMMARY))


def read_summaries(root: Path) -> list[tuple[Path, RunSummary]]:
    """Every run at or below ``root`` with its summary."""
    return [(run_dir, read_summary(run_dir)) for run_dir in run_dirs(root)]


@dataclass
class SavedRun:
    """A run folder read back: its summary and its rows keyed by (query, result)."""

    run_dir: Path
    """The folder."""
    summary: RunSummary
    """Its ``summary.json``."""
    rows: dict[Key, JudgmentRecord]
    """Its rows in file order (an item written twice keeps its last row)."""

    @property
    def kind(self) -> str:
        return self.summary.kind

    @property
    def name(self) -> str:
        return self.summary.name

    @property
    def grades(self) -> list[int]:
        return list(self.summary.cell.grades)

    @property
    def relevant_from(self) -> float | None:
        return self.summary.relevant_from

    @property
    def usd_per_million(self) -> float:
        return self.summary.usd_per_million

    @property
    def scored_keys(self) -> list[Key]:
        """The items its own κ is on: every row's, less those a trained judge learnt from
        (:attr:`RunSummary.trained_on`), as its summary scored it."""
        trained = self.summary.trained_on
        if trained is None or not trained.items:
            return list(self.rows)
        left_out = set(trained.items)
        return [key for key in self.rows if item_key(*key) not in left_out]

    def labels(self, keys: Sequence[Key]) -> npt.NDArray[np.float64]:
        """The run's label for each key, ``nan`` where it has none."""
        import numpy as np

        out = np.full(len(keys), np.nan)
        for i, key in enumerate(keys):
            row = self.rows.get(key)
            if row is not None and row.label is not None:
                out[i] = float(row.label)
        return out

    def samples(self) -> list[SavedRun]:
        """The run once per answer of ``runner.samples``: itself (sample 0), then one view
        per repeat in ``samples.jsonl`` (sample 1, 2, ...) with that repeat's rows (an item
        the repeat has no row for has none in it). Just ``[self]`` for a run without
        repeats. Read from disk at each call."""
        repeats = read_sample_records(self.run_dir)
        count = max(repeats, default=0) + 1
        return [self] + [
            SavedRun(self.run_dir, self.summary, repeats.get(k, {})) for k in range(1, count)
        ]


def load_run(run_dir: Path) -> SavedRun:
    """Read a run (real or virtual) folder."""
    run_dir = Path(run_dir)
    if not (run_dir / SUMMARY).is_file():
        raise MMJudgeError(f"{run_dir}: not a run directory (no {SUMMARY})")
    return SavedRun(run_dir, read_summary(run_dir), read_records(run_dir))


def completed_runs(root: Path, *, include_virtual: bool = True) -> list[SavedRun]:
    """Completed runs (complete or partial, see :data:`mmjudge.store.status.ANALYSED`) with
    judgments at or below ``root``."""
    out = []
    for run_dir, summary in read_summaries(Path(root)):
        if summary.status.status not in ANALYSED or not summary.n_judgments:
            continue
        if not include_virtual and summary.kind != SINGLE:
            continue
        out.append(SavedRun(run_dir, summary, read_records(run_dir)))
    return out


def common_keys(runs: Sequence[SavedRun]) -> list[Key]:
    """Keys every run has a row for, in the first run's order."""
    if not runs:
        return []
    rest = [set(run.rows) for run in runs[1:]]
    return [key for key in runs[0].rows if all(key in other for other in rest)]


def common_scored_keys(runs: Sequence[SavedRun]) -> list[Key]:
    """Keys every run has a row for and scores (:attr:`SavedRun.scored_keys`: none a trained
    judge among them learnt from), in the first run's order: the items two or more judges are
    compared on."""
    if not runs:
        return []
    rest = [set(run.scored_keys) for run in runs[1:]]
    return [key for key in runs[0].scored_keys if all(key in other for other in rest)]


def union_keys(runs: Sequence[SavedRun]) -> list[Key]:
    """Keys any run has a row for, in order of first appearance."""
    return list(dict.fromkeys(itertools.chain.from_iterable(run.rows for run in runs)))


def in_ensembles_folder(run_dir: Path, sweep_dir: Path) -> bool:
    """Whether ``run_dir`` lies in the sweep's folder of virtual runs."""
    try:
        parts = run_dir.resolve().relative_to(sweep_dir.resolve()).parts
    except ValueError:
        return False
    return ENSEMBLES in parts
