"""A race over grades known in advance: the rule of :mod:`mmjudge.studies.race_rule` looped
round after round, and the full grid's own choice to hold it against (benchmarks and tests;
the runner of a real race is :mod:`mmjudge.api.race`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.metrics.labels import as_labels
from mmjudge.studies.race_pairs import FloatArray, IntArray, grade_codes, own_kappas
from mmjudge.studies.race_records import RaceOutcome, RoundDecision
from mmjudge.studies.race_rule import (
    candidate_of,
    decide_round,
    outcome_of,
    race_inputs,
    round_length,
)


def graded_order(reference: FloatArray, order: IntArray, scale: Sequence[float]) -> IntArray:
    """``order`` without the items that have no reference grade on the scale: the race's
    graded items, in race order."""
    codes = grade_codes(as_labels(reference), scale)
    order = np.asarray(order, dtype=np.int64)
    return order[codes[order] >= 0]


def simulate_race(
    reference: FloatArray,
    grades_by_cell: FloatArray | Sequence[FloatArray],
    prices: Sequence[float],
    order: IntArray,
    rule: RaceConfig,
    *,
    scale: Sequence[float] | None = None,
    names: Sequence[str] | None = None,
) -> RaceOutcome:
    """Run :func:`decide_round` round after round over grades known in advance.

    ``reference`` ``(N_all,)`` and ``grades_by_cell`` ``(K, N_all)`` are aligned with the
    items (``nan`` = no grade), ``prices`` is dollars per judgment, ``order`` the item order
    (:func:`race_order`); items without a reference grade take no part. ``scale`` defaults
    to the sorted grades seen.
    """
    ref = as_labels(reference)
    grades = np.vstack([as_labels(g) for g in grades_by_cell])
    if scale is None:
        seen = np.concatenate([ref, grades.ravel()])
        scale = tuple(float(g) for g in np.unique(seen[~np.isnan(seen)]))
    graded = graded_order(ref, order, scale)
    inputs = race_inputs(ref[graded], grades[:, graded], prices, scale)
    n_cells, n_items = inputs.grades.shape
    shown = tuple(names) if names is not None else tuple(str(c) for c in range(n_cells))
    lengths = np.zeros(n_cells, dtype=np.int64)
    active: tuple[int, ...] = tuple(range(n_cells))
    rounds: list[RoundDecision] = []
    round_number = 0
    while True:
        round_number += 1
        target = round_length(rule, round_number, n_items)
        for c in active:
            lengths[c] = max(lengths[c], target)
        decision = decide_round(
            inputs, lengths.tolist(), rule, round_number, previous_active=active
        )
        rounds.append(decision)
        if decision.ending is not None:
            break
        active = decision.active
    return outcome_of(decision, tuple(rounds), lengths, inputs.prices, shown, n_items)


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
