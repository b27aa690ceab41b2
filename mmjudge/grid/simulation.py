"""A race over grades known in advance: the race's own schedule (:class:`RaceRounds`) run by the
grid's one loop (:func:`~mmjudge.grid.rounds.run_rounds`), with a launcher that reveals each
cell's grades up to the prefix it is asked to judge instead of calling a judge. Benchmarks and
tests use it, so the published figures come from the code a real race runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.grid.launch import CellJob, RoundEnd
from mmjudge.grid.race import (
    CellReading,
    RaceCell,
    RaceItems,
    RaceResult,
    RaceRounds,
)
from mmjudge.grid.race_labels import RevealedGrades
from mmjudge.grid.rounds import run_rounds
from mmjudge.metrics.labels import as_labels
from mmjudge.store.status import COMPLETE
from mmjudge.studies.race_pairs import FloatArray, IntArray
from mmjudge.studies.race_records import RaceOutcome
from mmjudge.studies.race_simulation import graded_order


class KnownGrades:
    """A launcher and the readings of a race whose cells' grades are known: judging a prefix
    reveals the grades on it, at the cell's price per judgment."""

    def __init__(self, grades: FloatArray, prices: Sequence[float]) -> None:
        self.grades = grades
        self.prices = np.asarray(prices, dtype=np.float64)
        self.judged = np.zeros(grades.shape[0], dtype=np.int64)
        self.sampled: FloatArray | None = None
        """With ``race.spare_dear=on``, the race's weights of each cell's items
        (:attr:`RaceRounds.judged`): a cell judges only the items weighted above 0."""

    def launch(self, jobs: Sequence[CellJob]) -> RoundEnd:
        for job in jobs:
            reach = self.grades.shape[1] if job.items is None else job.items
            self.judged[job.cell] = max(int(self.judged[job.cell]), reach)
        return RoundEnd([COMPLETE] * len(jobs), None)

    def read(self, cell: int) -> CellReading:
        judged = int(self.judged[cell])
        grades = np.full(self.grades.shape[1], np.nan)
        grades[:judged] = self.grades[cell, :judged]
        if self.sampled is not None:
            skipped = self.sampled[cell] == 0
            grades[skipped] = np.nan
            judged = int((~skipped[:judged]).sum())
        worth = judged * float(self.prices[cell])
        return CellReading(grades, judged, worth, worth)


def simulate_race(
    reference: FloatArray,
    grades_by_cell: FloatArray | Sequence[FloatArray],
    prices: Sequence[float],
    order: IntArray,
    rule: RaceConfig,
    *,
    scale: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
    seed: int = 0,
) -> RaceOutcome:
    """Race cells whose grades are known, as a real race would, and return how it ended.

    ``reference`` ``(N_all,)`` and ``grades_by_cell`` ``(K, N_all)`` are aligned with the
    items (``nan`` = no grade), ``prices`` is dollars per judgment, ``order`` the item order
    (:func:`~mmjudge.studies.race_rule.race_order`); items without a reference grade take no
    part. ``scale`` defaults to the sorted grades seen. With ``race.labels=ask`` the
    reference grades are handed out only as the race asks for them (an oracle over
    ``reference``), drawn with ``seed``; the outcome's ``human_labels`` counts them. With
    ``race.spare_dear=on`` a dear cell's grades are revealed only on the items it was drawn
    to judge, and its judgments and dollars count those alone.
    """
    rounds = simulated_rounds(
        reference, grades_by_cell, prices, order, rule, scale=scale, names=names, seed=seed
    )
    assert rounds.result.outcome is not None
    return rounds.result.outcome


def simulated_rounds(
    reference: FloatArray,
    grades_by_cell: FloatArray | Sequence[FloatArray],
    prices: Sequence[float],
    order: IntArray,
    rule: RaceConfig,
    *,
    scale: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
    seed: int = 0,
) -> RaceRounds:
    """:func:`simulate_race`'s race, run to its end, with all it holds: its result, its items
    in race order (those with a reference grade) and, with ``race.labels=ask``, the grades it
    asked for (``labels``)."""
    ref = as_labels(reference)
    grades = np.vstack([as_labels(g) for g in grades_by_cell])
    if scale is None:
        seen = np.concatenate([ref, grades.ravel()])
        scale = tuple(float(g) for g in np.unique(seen[~np.isnan(seen)]))
    kept = graded_order(ref, order, scale)
    n_cells, n_items = grades.shape[0], int(kept.size)
    shown = tuple(names) if names is not None else tuple(str(c) for c in range(n_cells))
    cells = [
        RaceCell(c, shown[c], (), Path(), float(prices[c]), float(prices[c]) * n_items, c)
        for c in range(n_cells)
    ]
    result = RaceResult(Path(), cells, n_items, rule, seed)
    items = RaceItems(
        tuple(("", str(i)) for i in range(n_items)), ref[kept], tuple(float(g) for g in scale)
    )
    known = KnownGrades(grades[:, kept], prices)
    oracle = RevealedGrades(ref[kept]) if rule.asks else None
    rounds = RaceRounds(result, items, known, oracle=oracle, samples=True)
    if rule.spares:
        known.sampled = rounds.judged
    run_rounds(rounds, known)
    return rounds
