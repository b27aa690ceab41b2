"""Which judges the report names, and what it may call them: the recommended judge, the
best one and the free baseline, none of them named for more than its numbers show.

The chance line: a judge answering at random has κ 0. A judge is recommended, or called
best, only when its whole κ interval lies above 0
(:attr:`mmjudge.metrics.scoring.Interval.above_chance`); otherwise the report says that no
judge agrees with people better than chance and shows the highest κ with its interval. The
numbers come from :mod:`mmjudge.report.analysis`; nothing is computed here.

A race's folder: when the race decided (ended settled, with its guarantee), its choice is
the recommendation, as long as its κ interval lies above 0
(:mod:`mmjudge.studies.race_verdict`); otherwise the card's own rule stands and the card
says in one line why the race chose another judge (:func:`race_note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mmjudge.report.analysis import Cell, DatasetStats
from mmjudge.studies import race_verdict


def raced(stats: DatasetStats) -> Cell | None:
    """The cell a race in the dataset's folder chose, when it is among the judges analysed."""
    verdict = stats.race
    if verdict is None or verdict.chosen_run is None:
        return None
    return next((c for c in stats.ranked if Path(c.run_dir) == verdict.chosen_run), None)


def recommended(stats: DatasetStats) -> Cell | None:
    """The judge to recommend on a dataset: the choice of the race in its folder when that
    race decided and its choice's κ interval lies above 0; else the cheapest judge whose
    paired difference from the best judge contains 0 (the best itself when none is cheaper)
    and whose κ interval lies above 0, the κ of chance; ties go to the higher κ. None when
    no such judge exists: a judge that may be no better than chance is never recommended."""
    ranked = stats.ranked
    if not ranked:
        return None
    chosen = raced(stats)
    decided = stats.race is not None and stats.race.decided
    if chosen is not None and decided and chosen.kappa.above_chance:
        return chosen
    candidates = [ranked[0]] + [c.b for c in stats.best_vs_others if not c.distinguishable]
    candidates = [c for c in candidates if c.kappa.above_chance]
    if not candidates:
        return None
    return min(candidates, key=lambda c: (c.usd_per_million, -c.kappa.estimate))


def race_note(stats: DatasetStats, chosen: Cell | None) -> str | None:
    """Why the race in the dataset's folder chose another judge than ``chosen`` (the
    recommendation), in one line; None without a race or when they agree."""
    verdict = stats.race
    if verdict is None:
        return None
    cell = raced(stats)
    if verdict.chosen is not None and cell is None:
        return (
            f"The race chose {verdict.chosen}, which has no κ among the judges analysed here "
            "(a later run replaced it, or it was left out)."
        )
    return race_verdict.race_note(
        verdict,
        agrees=cell is not None and chosen is cell,
        chosen_above_chance=cell is not None and cell.kappa.above_chance,
    )


def above_chance(stats: DatasetStats) -> list[Cell]:
    """The dataset's judges whose κ interval lies above 0 (chance), best κ first."""
    return [c for c in stats.ranked if c.kappa.above_chance]


def at_chance(stats: DatasetStats) -> bool:
    """True when the dataset has judges with a κ and none of them is above chance."""
    return bool(stats.ranked) and not above_chance(stats)


def best_role(stats: DatasetStats) -> str:
    """What the top-ranked judge may be called: ``best`` when its κ interval lies above 0,
    else ``highest κ`` (it may be no better than chance)."""
    ranked = stats.ranked
    return "best" if ranked and ranked[0].kappa.above_chance else "highest κ"


def baseline(cells: Sequence[Cell]) -> Cell | None:
    """The best free judge, the baseline any paid judge has to beat (None if none is free)."""
    free = [c for c in cells if c.free and c.kappa.known]
    return max(free, key=lambda c: c.kappa.estimate) if free else None
