"""What a simulated race is held against: the race's graded items in race order, and the full
grid's own choice over grades known in advance. The simulation itself runs the real race's
schedule through the grid's loop (:func:`mmjudge.grid.simulation.simulate_race`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mmjudge.metrics.labels import as_labels
from mmjudge.studies.race_pairs import FloatArray, IntArray, grade_codes, own_kappas
from mmjudge.studies.race_rule import candidate_of


def graded_order(reference: FloatArray, order: IntArray, scale: Sequence[float]) -> IntArray:
    """``order`` without the items that have no reference grade on the scale: the race's
    graded items, in race order."""
    codes = grade_codes(as_labels(reference), scale)
    order = np.asarray(order, dtype=np.int64)
    return order[codes[order] >= 0]


def full_data_choice(
    reference: FloatArray,
    grades_by_cell: FloatArray | Sequence[FloatArray],
    prices: Sequence[float],
    *,
    scale: Sequence[float],
    delta: float,
) -> tuple[FloatArray, int]:
    """Every cell's full-data κ and the full grid's choice by the race's rule (the cheapest
    cell with κ ≥ max κ − δ)."""
    ref = grade_codes(as_labels(reference), scale)
    keep = ref >= 0
    codes = grade_codes(np.vstack([as_labels(g) for g in grades_by_cell]), scale)[:, keep]
    full = np.full(codes.shape[0], int(keep.sum()), dtype=np.int64)
    kappas = own_kappas(ref[keep], codes, full, len(scale))
    return kappas, candidate_of(kappas, np.asarray(prices, dtype=float), delta)
