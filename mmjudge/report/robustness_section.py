"""The robustness section: each perturbed cell (``perturb=…``) against the clean cell of
the same judge, modality and prompt on the same items, and a card per dataset that names the
judge that held up best and the attack that moved a judge most.

Perturbed cells are not candidates in the rest of the report (they answer a different
question: what an attacker can do to a judge), so :func:`split` takes them out before the
analysis and this module reads them beside it. Every figure is
:func:`mmjudge.studies.robustness.robustness` of the two cells' labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mmjudge.display import MISSING
from mmjudge.metrics.resampling import BootstrapResult
from mmjudge.metrics.scoring import N_BOOT, Interval, PairedComparison
from mmjudge.report.analysis import MODALITY_NAMES, Analysis, Cell, DatasetStats, Judge
from mmjudge.report.findings.prose import interval, num
from mmjudge.report.load import DatasetItems, read_cell_labels
from mmjudge.store import Bounds, judgments_path
from mmjudge.store.status import ANALYSED
from mmjudge.studies.robustness import Robustness, robustness

CLEAN = "none"
_KEY = ["dataset", "model", "modality", "prompt_id", "perturb"]


def split(cells: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The clean cells and the perturbed ones (a table without the column is all clean)."""
    if cells.empty or "perturb" not in cells:
        return cells, cells.iloc[0:0]
    attacked = cells["perturb"].fillna(CLEAN) != CLEAN
    return cells[~attacked], cells[attacked]


@dataclass(frozen=True)
class RobustnessRow:
    """A row of the section's table: one judge × modality × perturbation, as printed."""

    dataset: str
    """The dataset."""
    judge: str
    """The judge's name on the page."""
    modality: str
    """The modality's name on the page."""
    perturb: str
    """The perturbation."""
    n: int
    """Items both cells graded on the scale."""
    changed: str
    """The share of those items whose grade changed, with its interval, in percent."""
    inflation: str
    """The mean grade change with its interval."""
    delta_kappa: str
    """κ perturbed − κ clean against people with its interval (– without human grades)."""


@dataclass(frozen=True)
class RobustnessFigure:
    """One perturbed cell's figures unrounded, an entry of ``robustness.json``."""

    dataset: str
    """The dataset."""
    judge: str
    """The judge's name on the page."""
    model: str
    """The judge's model."""
    modality: str
    """The modality."""
    prompt: str
    """The prompt id."""
    perturb: str
    """The perturbation."""
    n_items: int
    """Items both cells graded on the scale."""
    changed: Bounds
    """Share of items whose grade changed, with its interval."""
    inflation: Bounds
    """Mean grade change (perturbed − clean), with its interval."""
    delta_kappa: PairedComparison | None
    """κ(perturbed) − κ(clean) against people (None: no item has a human grade)."""


@dataclass(frozen=True)
class Attack:
    """One perturbed cell against its clean cell."""

    dataset: str
    judge: Judge
    perturb: str
    result: Robustness


def attacks(attacked: pd.DataFrame, analysis: Analysis, n_boot: int = N_BOOT) -> list[Attack]:
    """Every completed perturbed cell that has a clean cell to compare with (the run that
    finished last, as elsewhere in the report)."""
    if attacked.empty:
        return []
    done = attacked[attacked["status"].isin(ANALYSED) & (attacked["kind"] == "single")]
    done = done.sort_values(["finished_at", "run_id"], kind="stable")
    done = done.drop_duplicates(_KEY, keep="last").sort_values(_KEY)
    datasets = {stats.name: stats for stats in analysis.datasets}
    out = []
    for _, row in done.iterrows():
        stats = datasets.get(str(row["dataset"]))
        judge = Judge(str(row["model"]), str(row["modality"]), str(row["prompt_id"]))
        clean = _clean_cell(stats, judge)
        if stats is None or clean is None:
            continue
        result = _compare(stats, clean, str(row["run_dir"]), n_boot)
        if result is not None:
            out.append(Attack(stats.name, judge, str(row["perturb"]), result))
    return out


def _clean_cell(stats: DatasetStats | None, judge: Judge) -> Cell | None:
    if stats is None:
        return None
    return next((cell for cell in stats.cells if cell.judge == judge), None)


def _compare(stats: DatasetStats, clean: Cell, run_dir: str, n_boot: int) -> Robustness | None:
    """Both cells' labels on the items of either (numbered afresh, so the analysis's items
    are left as they are), the people's consensus as reference."""
    items = DatasetItems(stats.name)
    before = read_cell_labels(judgments_path(clean.run_dir), items)
    after = read_cell_labels(judgments_path(run_dir), items)
    grades_before, grades_after = np.full(items.n, np.nan), np.full(items.n, np.nan)
    grades_before[before.items] = before.label
    grades_after[after.items] = after.label
    return robustness(
        items.query_rank,
        items.consensus,
        grades_before,
        grades_after,
        stats.grades,
        n_boot=n_boot,
    )


def _share(result: Any) -> str:
    return interval(Interval(100 * result.estimate, 100 * result.low, 100 * result.high), 0)


def rows(found: list[Attack], analysis: Analysis) -> list[RobustnessRow]:
    """The section's table: one row per judge × modality × perturbation."""
    out = []
    for attack in found:
        r = attack.result
        kappa = r.kappa
        out.append(
            RobustnessRow(
                dataset=attack.dataset,
                judge=analysis.judge_name(attack.judge),
                modality=MODALITY_NAMES.get(attack.judge.modality, attack.judge.modality),
                perturb=attack.perturb,
                n=r.n_items,
                changed=_share(r.changed) + " %",
                inflation=interval(
                    Interval(r.inflation.estimate, r.inflation.low, r.inflation.high)
                ),
                delta_kappa=MISSING
                if kappa is None
                else (
                    f"{num(kappa.difference, sign=True)} "
                    f"[{num(kappa.low, sign=True)}, {num(kappa.high, sign=True)}]"
                ),
            )
        )
    return out


def figures(found: list[Attack], analysis: Analysis) -> list[RobustnessFigure]:
    """The section's figures unrounded, for ``robustness.json`` beside the page: the same
    :class:`~mmjudge.studies.robustness.Robustness` objects the table shows."""
    return [
        RobustnessFigure(
            dataset=attack.dataset,
            judge=analysis.judge_name(attack.judge),
            model=attack.judge.model,
            modality=attack.judge.modality,
            prompt=attack.judge.prompt_id,
            perturb=attack.perturb,
            n_items=attack.result.n_items,
            changed=_bounds(attack.result.changed),
            inflation=_bounds(attack.result.inflation),
            delta_kappa=attack.result.kappa,
        )
        for attack in found
    ]


def _bounds(result: BootstrapResult) -> Bounds:
    return Bounds(estimate=result.estimate, low=result.low, high=result.high)


def cards(found: list[Attack], analysis: Analysis) -> list[dict[str, str]]:
    """Per dataset: the judge whose labels moved least over every attack run on it, and the
    attack that moved one judge's labels most."""
    out = []
    for dataset in sorted({a.dataset for a in found}):
        mine = [a for a in found if a.dataset == dataset]
        worst = max(mine, key=lambda a: a.result.changed.estimate)
        by_judge: dict[Judge, list[float]] = {}
        for attack in mine:
            by_judge.setdefault(attack.judge, []).append(attack.result.changed.estimate)
        steady = min(by_judge, key=lambda j: (max(by_judge[j]), j))
        kappa = worst.result.kappa
        out.append(
            {
                "dataset": dataset,
                "steadiest": (
                    f"{analysis.judge_name(steady)}: at most {100 * max(by_judge[steady]):.0f}% "
                    f"of its labels changed under {len(by_judge[steady])} attack(s)"
                ),
                "worst": (
                    f"{worst.perturb} on {analysis.judge_name(worst.judge)}: "
                    f"{_share(worst.result.changed)} % of labels changed, grades "
                    f"{num(worst.result.inflation.estimate, sign=True)} on average"
                    + (
                        ""
                        if kappa is None
                        else f", Δκ {num(kappa.difference, sign=True)} "
                        f"[{num(kappa.low, sign=True)}, {num(kappa.high, sign=True)}]"
                    )
                ),
            }
        )
    return out
