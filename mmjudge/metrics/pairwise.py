"""Agreement on the order of pairs of results of one query."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.labels import FloatArray, as_labels, query_codes


class PairwiseAgreement(NamedTuple):
    """How often the judge orders two results of one query the way the humans do."""

    agreement: float
    """(concordant + judge_ties / 2) / n_pairs; ``nan`` without any pair."""
    n_pairs: int
    """Pairs of results of the same query with different human grades."""
    concordant: int
    """Pairs the judge orders the same way as the humans."""
    discordant: int
    """Pairs the judge orders the opposite way."""
    judge_ties: int
    """Pairs the judge grades equally (counted as half an agreement)."""


def pair_counts(
    groups: npt.NDArray[np.intp], n_groups: int, human: FloatArray, judge: FloatArray
) -> FloatArray:
    """Per query: (concordant, judge ties, discordant) over human-ordered pairs.

    Works on per-query contingency tables, so the cost is linear in the rows plus
    queries × grades², with no pair ever listed. Queries are processed in blocks to bound
    memory.
    """
    keep = ~(np.isnan(human) | np.isnan(judge))
    g, h, j = groups[keep], human[keep], judge[keep]
    h_values, h_codes = np.unique(h, return_inverse=True)
    j_values, j_codes = np.unique(j, return_inverse=True)
    kh, kj = max(h_values.size, 1), max(j_values.size, 1)
    out = np.zeros((n_groups, 3))
    block = max(1, 4_000_000 // (kh * kj))
    order = np.argsort(g, kind="stable")
    g, h_codes, j_codes = g[order], h_codes[order], j_codes[order]
    for start in range(0, n_groups, block):
        stop = min(n_groups, start + block)
        lo, hi = np.searchsorted(g, [start, stop])
        cells = (g[lo:hi] - start) * (kh * kj) + h_codes[lo:hi] * kj + j_codes[lo:hi]
        t = np.bincount(cells, minlength=(stop - start) * kh * kj)
        t = t.reshape(stop - start, kh, kj).astype(np.float64)
        below = np.cumsum(t, axis=1) - t  # same judge grade, lower human grade
        below_left = np.cumsum(below, axis=2) - below  # lower human and lower judge grade
        ties = (t * below).sum(axis=(1, 2))
        concordant = (t * below_left).sum(axis=(1, 2))
        rows = t.sum(axis=2)
        pairs = (rows * (np.cumsum(rows, axis=1) - rows)).sum(axis=1)
        out[start:stop] = np.column_stack([concordant, ties, pairs - concordant - ties])
    return out


def pairwise_from_counts(counts: FloatArray) -> FloatArray:
    concordant, ties, discordant = counts[..., 0], counts[..., 1], counts[..., 2]
    total = concordant + ties + discordant
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (concordant + 0.5 * ties) / total, math.nan)


def pairwise_preference_agreement(query_ids: Any, human: Any, judge: Any) -> PairwiseAgreement:
    """Agreement on preferences: for every pair of results of the same query that the
    humans grade differently, does the judge prefer the same one?

    A pair the judge grades equally counts as half an agreement (and is reported
    separately as ``judge_ties``). Items missing either label take part in no pair.
    """
    h, j = as_labels(human), as_labels(judge)
    if h.shape != j.shape:
        raise ValueError(f"label arrays differ in length: {h.size} and {j.size}")
    groups, n_groups = query_codes(query_ids, h.size)
    totals = pair_counts(groups, n_groups, h, j).sum(axis=0)
    concordant, ties, discordant = (int(x) for x in totals.tolist())
    return PairwiseAgreement(
        agreement=float(pairwise_from_counts(totals)),
        n_pairs=concordant + ties + discordant,
        concordant=concordant,
        discordant=discordant,
        judge_ties=ties,
    )
