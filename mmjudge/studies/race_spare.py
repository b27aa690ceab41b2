"""Dear judges judged on a sample of the race's items (``race.spare_dear=on``): which of a
round's new items a dear cell judges, and every cell's κ and every pair's κ difference when
some cells judged only a sample.

Pure functions over arrays, as :mod:`~mmjudge.studies.race_labels` (asked grades) is; the
schedule that calls them is :class:`mmjudge.grid.race.RaceRounds`.

The design
----------

Each round, a cell whose price per judgment is at least :data:`DEAR_RATIO` times the cheapest
price among the cells judging the round, and which is not the last round's candidate, judges
each of its new items with probability

    q = max(:data:`MIN_SHARE`, sqrt(p_cheap / p_cell)),

independently of the other items and cells (a coin per item from a stream seeded by the
race's seed, the round and the cell). Every other cell judges every new item (q = 1). q is
known before the round and depends on the prices and the last decision only, never on the
round's grades. The square root is the classical two-phase choice: with a prediction for every
item and a correction measured on a sample, the variance is V_pred + V_resid / q and the cost
p · q, and minimising the one for a given amount of the other gives q ∝ 1/sqrt(p) (Neyman's
allocation; a cheap judge that judges every item is q = 1). The candidate judges in full:
every comparison the race still makes is against it.

The estimator
-------------

A sampled cell's confusion table (person × judge) on a set S of items is the difference
estimator of the full table: for each item of S a prediction of the cell's grade from the
person's grade r and an *anchor*'s grade g (the other cell that judged most of the cell's
items, ties to the one that agrees with it most; "no grade" is a category of its own), plus,
on the items the cell judged, the correction 1/q · (what it said − the prediction):

    T̂[r, a] = Σ_{n∈S, r_n=r} P̂(a | r, g_n) + Σ_{n∈S judged} (1/q_n) (1[a_n = a] − P̂(a | r, g_n))

with P̂ the cell's own grade shares given (r, g) on the items it judged (one pseudo-item spread
as its overall shares, so every row sums to one). Whatever the prediction, the correction's
mean over the coins is the prediction's error, so T̂ is unbiased for the table of every item in
S; the better the anchor predicts the cell, the smaller its variance (prediction-powered
inference, Angelopoulos et al. 2023, with another judge as the model and the person's grade
in the prediction). Every item contributes one to T̂'s total, so T̂'s total is |S|, and κ is
the project's κ of T̂. A cell that judged every item has T̂ its plain table.

The standard error is the linearisation's, as for asked grades
(:func:`~mmjudge.studies.race_labels.influence`): with φ the influence of T̂'s κ, item n
moves κ by

    z_n = m_n + J_n / q_n · (φ(r_n, a_n) − m_n),    m_n = Σ_a P̂(a | r_n, g_n) φ(r_n, a),

(J_n whether the cell judged it), a pair's item by ψ_n = z_i,n − z_j,n, and
se² = Σ_n ψ_n² / |S|²: the variance of a sum of independent terms, counting the items' draw
from the population and the coins. A pair's S is the items within the shorter prefix that
each cell of the pair judging in full graded; the unseen-disagreement bound
(:func:`~mmjudge.studies.race_pairs.bounded_se`) is taken on the items both cells judged,
where the pair's disagreements are seen, and a difference resting on fewer than
:data:`~mmjudge.studies.race_labels.MIN_ASKED` such items has no interval.

The guarantee
-------------

q depends on the past only, each item has its own coin, and the prediction is a fixed
function of the judges' and the person's grades once fitted, so given the past a round's terms
have mean zero and the standardised difference is a martingale over rounds: the race's rule
(the error-spending boundary, the split over rivals, the bound on unseen disagreements)
applies as it does to asked grades. The approximations are the normal one, the boundary's
information time (the share of items reached) and the prediction's fit on the same sample
(a bias of order 1/n, as a regression estimator's). The near-tied simulations
(``tests/studies/test_race_spare_guarantee.py``) check the rate of choices more than δ below
the best.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from mmjudge.metrics.kappa import kappa_from_tables
from mmjudge.studies.race_labels import MIN_ASKED, influence
from mmjudge.studies.race_pairs import FloatArray, IntArray, PairStats, disagreement_influence

#: A cell is dear when its price is at least this many times the cheapest judging cell's.
DEAR_RATIO = 2.0
#: The smallest share of its new items a dear cell judges.
MIN_SHARE = 0.2
#: Pseudo-items spread as the cell's overall grade shares in each row of its prediction.
PRIOR_ITEMS = 1.0


def judging_shares(
    prices: Sequence[float], judging: Sequence[int], candidate: int | None
) -> FloatArray:
    """q of each cell for a round's new items (see the module docstring): ``judging`` the
    cells that judge the round, ``candidate`` the last round's (None in the first round)."""
    p = np.asarray(prices, dtype=np.float64)
    shares = np.ones(p.size)
    cheapest = min((float(p[c]) for c in judging), default=0.0)
    if cheapest <= 0:
        return shares
    for c in judging:
        if c != candidate and p[c] >= DEAR_RATIO * cheapest:
            shares[c] = max(MIN_SHARE, math.sqrt(cheapest / float(p[c])))
    return shares


def draw_judged(share: float, n: int, seed: int, round_number: int, cell: int) -> FloatArray:
    """Which of ``n`` new items a cell judging with ``share`` q judges: 1/q where it does, 0
    where not, from a stream seeded by ``seed``, the round and the cell."""
    if share >= 1.0:
        return np.ones(n)
    coins = np.random.default_rng([abs(int(seed)), int(round_number), int(cell), 7]).random(n)
    return np.where(coins < share, 1.0 / share, 0.0)


class Anchored(NamedTuple):
    """A cell's grades, the grades it is predicted from, and its weights, on a set of items."""

    codes: IntArray
    """The cell's grade code of each item (−1: none)."""
    anchor: IntArray
    """The anchor's grade code of each item, ``k`` where it has none."""
    weights: FloatArray
    """1/q where the cell judged the item, 0 where it did not."""


def anchor_of(codes: IntArray, prefixes: IntArray, full: Sequence[bool], cell: int) -> int | None:
    """The cell ``cell``'s anchor: of the others, the one that graded most of ``cell``'s
    prefix, ties to the one agreeing with it most where both graded; None with one cell."""
    end = int(prefixes[cell])
    best: tuple[int, float, int] | None = None
    for other in range(codes.shape[0]):
        if other == cell:
            continue
        graded = codes[other, :end] >= 0
        both = graded & (codes[cell, :end] >= 0)
        agree = float((codes[other, :end] == codes[cell, :end])[both].mean()) if both.any() else 0
        key = (int(graded.sum()) + (end if full[other] else 0), agree, -other)
        if best is None or key > best:
            best = key
    return None if best is None else -best[2]


def prediction(reference: IntArray, cell: Anchored, k: int) -> FloatArray:
    """P̂(a | r, g) ``(k, k + 1, k)`` from the items the cell judged (see the module docstring)."""
    judged = (cell.codes >= 0) & (reference >= 0)
    counts = np.zeros((k, k + 1, k))
    np.add.at(counts, (reference[judged], cell.anchor[judged], cell.codes[judged]), 1.0)
    shares = (counts.sum(axis=(0, 1)) + 1.0) / (counts.sum() + k)
    return (counts + PRIOR_ITEMS * shares) / (counts.sum(axis=2, keepdims=True) + PRIOR_ITEMS)


class Estimated(NamedTuple):
    """A cell's estimated table on a set of items and each item's part in it."""

    table: FloatArray
    """T̂ ``(k, k)``: person × judge."""
    predicted: FloatArray
    """Each item's predicted grade shares ``(n, k)``."""


def estimated_table(reference: IntArray, cell: Anchored, model: FloatArray, k: int) -> Estimated:
    """T̂ of the module docstring on the items given (every one with a person's grade)."""
    predicted = model[reference, cell.anchor]  # (n, k)
    judged = (cell.codes >= 0) & (cell.weights > 0)
    said = np.zeros_like(predicted)
    said[judged, cell.codes[judged]] = 1.0
    part = predicted + np.where(judged, cell.weights, 0.0)[:, None] * (said - predicted)
    table = np.zeros((k, k))
    np.add.at(table, reference, part)
    return Estimated(table, predicted)


def item_influence(
    reference: IntArray, cell: Anchored, estimated: Estimated, phi: FloatArray
) -> FloatArray:
    """z_n of the module docstring for each item: how it moves the cell's κ̂."""
    rows = phi[reference]  # (n, k): φ(r_n, ·)
    mean = (estimated.predicted * rows).sum(axis=1)
    judged = (cell.codes >= 0) & (cell.weights > 0)
    said = rows[np.arange(reference.size), np.maximum(cell.codes, 0)]
    return mean + np.where(judged, cell.weights * (said - mean), 0.0)


class SparedJudging(NamedTuple):
    """What the race holds when some cells judged only a sample of their prefixes."""

    reference: IntArray
    """The person's grade code of each item in race order, ``(N,)``."""
    codes: IntArray
    """Each cell's grade code, ``(K, N)`` (−1: none, not judged or not sampled)."""
    prefixes: IntArray
    """Items each cell has reached, ``(K,)``."""
    weights: FloatArray
    """1/q where a cell was to judge an item, 0 where it was not, ``(K, N)``."""
    n_grades: int
    """How many grades the scale has."""

    def full(self, cell: int) -> bool:
        """Whether the cell judged every item of its prefix it was given (q = 1 throughout)."""
        end = int(self.prefixes[cell])
        return bool(np.all(self.weights[cell, :end] == 1.0))

    def anchored(self, cell: int, anchor: int | None, items: IntArray) -> Anchored:
        k = self.n_grades
        grades = (
            np.full(items.size, k, dtype=np.int64)
            if anchor is None
            else np.where(self.codes[anchor, items] >= 0, self.codes[anchor, items], k)
        )
        return Anchored(self.codes[cell, items], grades, self.weights[cell, items])


def _models(judging: SparedJudging, anchors: Sequence[int | None]) -> list[FloatArray]:
    """Each cell's P̂, fitted on the items of its prefix it judged."""
    models = []
    for c in range(judging.codes.shape[0]):
        end = int(judging.prefixes[c])
        fit = judging.anchored(c, anchors[c], np.arange(end))
        models.append(prediction(judging.reference[:end], fit, judging.n_grades))
    return models


def _parts(
    judging: SparedJudging,
    cell: int,
    items: IntArray,
    anchors: Sequence[int | None],
    models: Sequence[FloatArray],
) -> tuple[Estimated, Anchored]:
    """T̂ of ``cell`` on ``items`` and the cell's grades there, as its items' influence needs."""
    here = judging.anchored(cell, anchors[cell], items)
    estimated = estimated_table(judging.reference[items], here, models[cell], judging.n_grades)
    return estimated, here


def anchors_of(judging: SparedJudging) -> list[int | None]:
    """Each cell's anchor (None for a cell that judged in full: it needs none)."""
    full = [judging.full(c) for c in range(judging.codes.shape[0])]
    return [
        None if full[c] else anchor_of(judging.codes, judging.prefixes, full, c)
        for c in range(judging.codes.shape[0])
    ]


def spared_kappas(judging: SparedJudging) -> FloatArray:
    """Each cell's κ̂ on its prefix, from T̂ (a cell that judged in full: its plain κ)."""
    anchors = anchors_of(judging)
    models = _models(judging, anchors)
    kappas = np.full(judging.codes.shape[0], math.nan)
    for c in range(kappas.size):
        end = int(judging.prefixes[c])
        items = np.flatnonzero(judging.reference[:end] >= 0)
        if judging.full(c):
            items = items[judging.codes[c, items] >= 0]
        if items.size == 0 or not (judging.codes[c, :end] >= 0).any():
            continue
        estimated, _ = _parts(judging, c, items, anchors, models)
        kappas[c] = float(kappa_from_tables(estimated.table, None, math.nan))
    return kappas


def spared_pair_stats(judging: SparedJudging) -> PairStats:
    """:func:`~mmjudge.studies.race_pairs.pair_stats` when some cells judged a sample: every
    pair's κ difference from the cells' T̂ on the pair's items, its linearised standard error
    (``nan`` where a κ is undefined or the two judged fewer than
    :data:`~mmjudge.studies.race_labels.MIN_ASKED` items in common), the items both judged and
    their disagreements, and the largest influence of one more disagreement."""
    n_cells = judging.codes.shape[0]
    anchors = anchors_of(judging)
    models = _models(judging, anchors)
    full = [judging.full(c) for c in range(n_cells)]
    rows = []
    for i, j in itertools.combinations(range(n_cells), 2):
        drawn = int(min(judging.prefixes[i], judging.prefixes[j]))
        keep = judging.reference[:drawn] >= 0
        for c in (i, j):
            if full[c]:
                keep &= judging.codes[c, :drawn] >= 0
        items = np.flatnonzero(keep)
        a, b = judging.codes[i, items], judging.codes[j, items]
        both = (a >= 0) & (b >= 0)
        n_both, differ = int(both.sum()), int((both & (a != b)).sum())
        if items.size == 0 or n_both == 0:
            rows.append((i, j, math.nan, math.nan, n_both, drawn, differ, math.nan))
            continue
        est_i, here_i = _parts(judging, i, items, anchors, models)
        est_j, here_j = _parts(judging, j, items, anchors, models)
        tables = np.stack([est_i.table, est_j.table])
        kappas = kappa_from_tables(tables, None, math.nan)
        phi = np.nan_to_num(influence(tables))
        ref = judging.reference[items]
        psi = item_influence(ref, here_i, est_i, phi[0]) - item_influence(
            ref, here_j, est_j, phi[1]
        )
        difference = float(kappas[0] - kappas[1])
        se = math.sqrt(float((psi**2).sum())) / items.size
        if not math.isfinite(difference) or n_both < MIN_ASKED:
            se = math.nan
        scaled = tables[:, None] * (n_both / items.size)
        spread = float(disagreement_influence(scaled, np.asarray([float(n_both)]))[0])
        rows.append((i, j, difference, se, n_both, drawn, differ, spread))
    columns = list(zip(*rows, strict=True)) if rows else [()] * 8
    ints = [np.asarray(columns[c], dtype=np.int64) for c in (0, 1, 4, 5, 6)]
    floats = [np.asarray(columns[c], dtype=np.float64) for c in (2, 3, 7)]
    return PairStats(ints[0], ints[1], floats[0], floats[1], ints[2], ints[3], ints[4], floats[2])
