"""A judge's agreement broken down by slice (a language, a category, a kind of query).

Definitions (one place for every view):

- **Slices** partition the items: each item belongs to at most one slice (items without one
  take part in no slice), and a slice's score is :func:`mmjudge.metrics.scoring.score_judge`
  on its items alone, so it is exactly what scoring those items by hand gives.
- **Does quality depend on the slice?** A permutation test of the spread of κ between
  slices: the statistic is the item-weighted variance of the slices' κ; the slice names are
  shuffled (between whole queries when every query lies in one slice, as a language or a
  query-length bucket does, else between items) ``n_perm`` times with ``seed``, and the
  p-value is (1 + shuffles at least as spread) / (1 + ``n_perm``).
- **The worst slice** is the one with the lowest κ among those with at least
  :data:`MIN_ITEMS` scored items (none unless two slices or more have that many).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.metrics.scoring import LEVEL, N_BOOT, SEED, JudgeScore, score_judge, scored_items

#: Slices with fewer scored items are shown but never named the worst.
MIN_ITEMS = 10
#: Shuffles behind the test of whether κ depends on the slice.
N_PERM = 999


@dataclass(frozen=True)
class SliceScores:
    """One judge's score in each slice, and the test across them."""

    scores: dict[str, JudgeScore]
    """Slice name → the judge's score on that slice's items, in sorted slice order."""
    p_value: float
    """Permutation p-value of the spread of κ between slices (nan with fewer than two)."""
    worst: str | None
    """The slice with the lowest κ among those with at least :data:`MIN_ITEMS` items (None
    unless at least two have that many)."""


def _spread(kappas: list[float], counts: list[int]) -> float:
    """Item-weighted variance of the slices' κ (slices with κ undefined left out)."""
    pairs = [(k, n) for k, n in zip(kappas, counts, strict=True) if math.isfinite(k)]
    if len(pairs) < 2:
        return math.nan
    weights = np.asarray([n for _k, n in pairs], dtype=float)
    values = np.asarray([k for k, _n in pairs])
    mean = float(np.average(values, weights=weights))
    return float(np.average((values - mean) ** 2, weights=weights))


def _slice_kappas(
    names: np.ndarray, order: list[str], ref: np.ndarray, lab: np.ndarray, grades: Any
) -> tuple[list[float], list[int]]:
    kappas, counts = [], []
    for name in order:
        mask = names == name
        kappas.append(float(metrics.cohen_kappa(ref[mask], lab[mask], labels=grades)))
        counts.append(int(mask.sum()))
    return kappas, counts


def slice_test(
    query_ids: Any,
    names: Any,
    reference: Any,
    judge: Any,
    grades: Sequence[float],
    *,
    n_perm: int = N_PERM,
    seed: int = SEED,
) -> float:
    """The permutation p-value (see the module's definitions) on items that already have
    both grades on the scale and a slice."""
    queries, slices = np.asarray(query_ids), np.asarray(names, dtype=object)
    ref, lab = metrics.as_labels(reference), metrics.as_labels(judge)
    order = sorted(set(slices.tolist()))
    scale = tuple(float(g) for g in grades)
    observed = _spread(*_slice_kappas(slices, order, ref, lab, scale))
    if not math.isfinite(observed) or n_perm < 1:
        return math.nan
    by_query = {q: s for q, s in zip(queries.tolist(), slices.tolist(), strict=True)}
    query_level = all(
        by_query[q] == s for q, s in zip(queries.tolist(), slices.tolist(), strict=True)
    )
    rng = np.random.default_rng(seed)
    unique_queries = np.asarray(sorted(by_query))
    query_slices = np.asarray([by_query[q] for q in unique_queries], dtype=object)
    position = np.searchsorted(unique_queries, queries) if query_level else None
    at_least = 0
    for _ in range(n_perm):
        if position is not None:
            shuffled = rng.permutation(query_slices)[position]
        else:
            shuffled = rng.permutation(slices)
        value = _spread(*_slice_kappas(shuffled, order, ref, lab, scale))
        at_least += bool(math.isfinite(value) and value >= observed - 1e-12)
    return (1 + at_least) / (1 + n_perm)


def score_slices(
    query_ids: Any,
    names: Any,
    reference: Any,
    judge: Any,
    grades: Sequence[float],
    *,
    relevant_from: float | None = None,
    n_boot: int = N_BOOT,
    n_perm: int = N_PERM,
    seed: int = SEED,
    level: float = LEVEL,
) -> SliceScores:
    """Score ``judge`` against ``reference`` in each slice (``names``: the slice of each
    item, None or "" for none) and test whether κ depends on the slice."""
    queries = np.asarray(query_ids)
    slices = np.asarray(["" if n is None else str(n) for n in names], dtype=object)
    ref, lab = metrics.as_labels(reference), metrics.as_labels(judge)
    if not queries.size == slices.size == ref.size == lab.size:
        raise ValueError("query ids, slices and labels differ in length")
    scores = {}
    for name in sorted(set(slices.tolist()) - {""}):
        mask = slices == name
        scores[name] = score_judge(
            queries[mask],
            ref[mask],
            lab[mask],
            grades,
            relevant_from=relevant_from,
            n_boot=n_boot,
            seed=seed,
            level=level,
        )
    scale = np.asarray([float(g) for g in grades])
    keep, _ = scored_items(scale, ref, lab)
    keep &= slices != ""
    p_value = slice_test(
        queries[keep], slices[keep], ref[keep], lab[keep], grades, n_perm=n_perm, seed=seed
    )
    ranked = [
        (score.kappa.estimate, name)
        for name, score in scores.items()
        if score.n_items >= MIN_ITEMS and math.isfinite(score.kappa.estimate)
    ]
    return SliceScores(scores, p_value, min(ranked)[1] if len(ranked) > 1 else None)
