"""A race between judges: judge items in rounds and stop each judge as soon as the choice no
longer depends on it, so the choice costs a fraction of the full grid.

The functions here are pure (arrays in, typed records out: no files, no config). The runner
calls :func:`decide_round` after each round with the grades collected so far;
:func:`mmjudge.grid.simulation.simulate_race` runs the same race over grades known in advance
(benchmarks and tests).

The rule
--------

**Items and order.** The race is over the items that have a human reference grade (the
annotators' consensus) on the scale; the others take no part. Items, not whole queries, are
drawn in one seeded random order (:func:`race_order`: a hash of the seed and the item's
query and result ids, so a longer prefix always contains a shorter one and file order does
not matter). Round ``t`` extends every active cell's prefix to ``min(N, t · r)`` of the ``N``
graded items, ``r`` the round's size (:func:`planned_round_items`: ``race.round_items``, but
never more than a quarter of the items, so a race has at least four looks and can stop
before the end, and never fewer than 25, too few for any difference of κ; all of them when
there are no more than 25).

**The target** (``race.target``). By default a cell's κ is its agreement on the *population*
the graded items were drawn from, as the report's intervals take it: a prefix is a sample
of that population, and judging every item leaves an interval, so two judges the items
cannot tell apart are said to be inseparable at this size, with about how many more
labelled items would separate them (:func:`~mmjudge.studies.race_records.more_items`).
With ``race.target=items`` the items are the whole population (a closed set, every item of
which is known): a prefix is a sample drawn without replacement, intervals shrink by the
finite-population correction ``sqrt(1 − m/N)`` and the full data decides exactly. Items
rather than whole queries either way: query clusters matter for new queries, and whole-query
rounds would bring one or two clusters per round on a collection of 25 queries, making any
cluster interval useless.

**κ.** Exactly the project's κ of a judge against the reference
(:func:`mmjudge.metrics.scoring.score_judge`: unweighted Cohen's κ, the scale's grades as
categories, on the items with both a judge grade and a reference grade on the scale). A
cell's own estimate κ̂ uses the items it graded within its prefix. Two cells are compared on
the items both graded within the shorter of their two prefixes.

**Interval for a difference** Δ = κ_i − κ_j on those ``n`` paired items: the delete-one-item
jackknife standard error of Δ (in closed form from the three-way counts reference × judge i ×
judge j), with what the disagreements between the two judges that the sample may have missed
could add to it (:mod:`~mmjudge.studies.race_pairs`: a prefix on which two near-tied judges
never disagree says nothing about how far apart they are, and must not settle them), times
a normal quantile ``z`` (and the finite-population correction for ``race.target=items``).

**Error budget.** α is spent across rounds by a Lan–DeMets spending function of the
information fraction ``u = L_t / N``: ``α(u) = α · u^ρ``; round ``t``'s share
``α(u_t) − α(u_{t−1})`` is split by Bonferroni over the ``K − 1`` rivals of a cell, and a
tenth of each pair's share (:data:`UNSEEN_SHARE`) pays for the bound on unseen disagreements
(its confidence level), the rest for the interval. The round's ``z`` is the error-spending
boundary for that rest computed jointly over the planned rounds
(:mod:`~mmjudge.studies.race_boundary`): for one pair, the chance that its standardised
difference first crosses ``z`` at round ``t`` is the round's share, counting the correlation
of nested samples, which a union bound over rounds would ignore. A pair is always judged
against the boundary of the round its shorter prefix was drawn in, so a pair whose cells
stopped is never looked at again with another round's ``z``. The guarantee below needs only
the upper bounds on ``κ_b − κ_j`` for the best cell b (fixed, though unknown) against each of
the K − 1 others: by the union bound over those pairs, their disagreement bounds and their
rounds they all hold with probability at least ``1 − α`` (the event E; the normal
approximation to the κ differences is the one approximation). This is the
comparison-with-the-best argument of best-arm identification (Even-Dar, Mannor and Mansour,
2006); a union over all ``K(K−1)/2`` pairs, two-sided, would ask a larger ``z`` for no gain
in what is guaranteed.

**Settled and the choice.** A cell j is *settled against* a candidate c when

(a) UCB(κ_j − κ_c) ≤ δ and price_j ≥ price_c: it cannot beat c by more than δ and is not
    cheaper; or
(b) LCB(κ_c − κ_j) > δ: it is more than δ below c, so it cannot be the choice; or
(c) it is Pareto-dominated with confidence by a cell i that is not itself dominated:
    UCB(κ_j − κ_i) ≤ 0 and price_j > price_i.

A cell c is *chosen* when every other cell is settled against it; the race ends with the
cheapest such cell (ties: the higher κ̂). Otherwise the *candidate* is the cheapest cell whose
κ̂ ≥ max κ̂ − δ, and the next round is judged by the candidate and every cell not settled
against it. A cell that stopped earlier but is no longer settled against the current candidate
resumes from where its prefix ended (with the real runner an ordinary resume: nothing is paid
twice).

**Cannot separate at this size** (the population target only). A pair the items cannot
settle is not worth paying for to the end: a cell not cheaper than the candidate stops
judging when its pair with the candidate, from at least :data:`REACH_DISAGREEMENTS`
disagreements, would need more than :data:`BEYOND_REACH` times the race's graded items to be
settled (its half-width shrinking as one over the square root of the items:
:func:`~mmjudge.studies.race_records.more_items`, the same figure the race prints as "about N
more labelled items would"). Judging every item would end the same way — the pair unsettled —
and with the population as the target the full data's κ are estimates too, not a verdict.
When every other cell is settled or cannot be separated, the race ends (``cannot separate``)
with the candidate, says which pairs it could not separate and how many more labelled items
would, and claims no guarantee. Only dear cells stop this way: a cheaper cell stays, so the
race never gives up a cheap judge that more items could still show to be within δ.

**A cell that cannot judge** leaves the race: a cell that judged its prefix without a single
grade (every call failed, or no answer could be read), or one the runner reports out (its run
reached its own dollar cap). It is settled against every candidate (reason ``cannot judge``),
is never the candidate, never chosen and never resumes, so one broken judge cannot keep the
others judging to the end. The guarantee is over the cells that can judge.

Other endings: the items run out (the candidate is chosen: the full grid's own choice; with
``race.target=items`` every interval is then exact, while by default the cells still
unsettled against it are reported as not separable at this size), the dollar cap
``max_usd`` would be passed by the next round (the candidate is chosen and the guarantee
does not hold), every cell left cannot be separated from the candidate at this size (above),
or there is one cell.

**Guarantee.** Let b be the cell of highest κ on the target (the population, or with
``race.target=items`` the full data). Under E, b is never settled against a candidate by (b)
(that would need κ_c > κ_b + δ), and it is dominated (c) only by a cell of the same κ. So when
the race ends settled with c, either c = b, or b is settled against c by (a), and
κ_c ≥ κ_b − δ. Hence P(the race ends settled on a choice more than δ below the best) ≤ α.
Judged against the full data the bound holds for every ending but the dollar cap and
``cannot separate``: the population's intervals are wider than the finite-population ones,
and a race whose items ran out chooses the full data's own candidate. (A race that ends
``cannot separate`` says so and claims nothing; on LLMJudge its choice was within δ of the
full-data best in every seed, benchmarks/race.py.) (With two cells of exactly the best κ the
argument runs through whichever one is not dominated, and E must cover its bounds as well;
the interval of a pair targets Δ on the items both graded, and when judges miss items a
cell's κ on its own items can differ slightly from its κ on a pair's items.) Reference for
the error spending: Lan and DeMets (1983), Discrete sequential boundaries for clinical
trials, Biometrika 70(3).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Sequence
from typing import NamedTuple

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.data.sample import item_rank
from mmjudge.metrics.labels import as_labels
from mmjudge.studies.race_labels import race_kappas, race_pairs
from mmjudge.studies.race_pairs import (
    FloatArray,
    IntArray,
    PairStats,
    grade_codes,
    half_widths,
)
from mmjudge.studies.race_records import (
    SCHEMA_VERSION,
    CellChange,
    Ending,
    Evidence,
    Reason,
    RoundDecision,
    more_items,
    outcome_of,
)
from mmjudge.studies.race_rounds import (
    MAX_ROUND_SHARE,
    MIN_ROUND_ITEMS,
    UNSEEN_SHARE,
    RoundPlan,
    alpha_spent,
    boundaries,
    critical_value,
    look_of,
    pair_share,
    planned_round_items,
    round_alpha,
    round_length,
    unseen_level,
)
from mmjudge.studies.race_spare import SparedJudging, spared_kappas, spared_pair_stats

# --------------------------------------------------------------------------- order

__all__ = [  # the rounds and the budget (race_rounds) and the outcome are read here too
    "MAX_ROUND_SHARE",
    "MIN_ROUND_ITEMS",
    "UNSEEN_SHARE",
    "RoundPlan",
    "alpha_spent",
    "boundaries",
    "critical_value",
    "look_of",
    "outcome_of",
    "pair_share",
    "planned_round_items",
    "round_alpha",
    "round_length",
    "unseen_level",
]


def race_order(seed: int, query_ids: Sequence[str], result_ids: Sequence[str]) -> IntArray:
    """Indices of the items in the race's order: by :func:`~mmjudge.data.sample.item_rank`, the
    order ``dataset.sample_items`` draws in, so the order does not depend on the order of the
    items given and a cell told to judge the first N items judges exactly these."""
    pairs = list(zip(query_ids, result_ids, strict=True))
    ranks = sorted(range(len(pairs)), key=lambda i: (item_rank(seed, *pairs[i]), pairs[i]))
    return np.asarray(ranks, dtype=np.int64)


# --------------------------------------------------------------------------- one round


class NoCellCanJudge(ValueError):
    """Every cell of the race is out: none can judge on, so there is nothing to choose."""


class _Bounds(NamedTuple):
    """Round intervals as (K, K) matrices: D[i, j] = κ̂_i − κ̂_j, half-width W[i, j]."""

    difference: FloatArray
    width: FloatArray
    n_items: IntArray
    disagreements: IntArray
    graded: int
    """The race's graded items, N."""


def _bounds(stats: PairStats, widths: FloatArray, n_cells: int, graded: int) -> _Bounds:
    difference = np.zeros((n_cells, n_cells))
    width = np.zeros((n_cells, n_cells))
    n_items = np.zeros((n_cells, n_cells), dtype=np.int64)
    disagreements = np.zeros((n_cells, n_cells), dtype=np.int64)
    i, j = stats.first, stats.second
    difference[i, j], difference[j, i] = stats.difference, -stats.difference
    width[i, j] = width[j, i] = widths
    n_items[i, j] = n_items[j, i] = stats.n_items
    disagreements[i, j] = disagreements[j, i] = stats.disagreements
    return _Bounds(difference, width, n_items, disagreements, graded)


def _evidence(bounds: _Bounds, cell: int, other: int, reason: Reason | None) -> Evidence:
    d = float(bounds.difference[cell, other])
    w = float(bounds.width[cell, other])
    return Evidence(cell, reason, other, d, d - w, d + w, int(bounds.n_items[cell, other]))


def _dominated(bounds: _Bounds, prices: FloatArray, out: frozenset[int]) -> dict[int, int]:
    """Cells dominated with confidence by an undominated cell: {cell: the cell dominating it}.
    The dominating cell is strictly cheaper, so cells are settled cheapest first; a cell out
    of the race neither dominates nor is dominated (it is settled as out)."""
    upper = bounds.difference + bounds.width  # UCB(κ_j − κ_i) at [j, i]
    found: dict[int, int] = {}
    for j in np.argsort(prices, kind="stable").tolist():
        if j in out:
            continue
        for i in np.argsort(prices, kind="stable").tolist():
            if i in found or i in out or not prices[j] > prices[i]:
                continue
            if upper[j, i] <= 0.0:
                found[j] = i
                break
    return found


def _settled_against(
    bounds: _Bounds,
    prices: FloatArray,
    dominated: dict[int, int],
    delta: float,
    c: int,
    out: frozenset[int],
) -> list[Evidence]:
    """Every other cell against candidate ``c``: the rule that settles it, or None."""
    found = []
    for j in range(prices.size):
        if j == c:
            continue
        upper = bounds.difference[j, c] + bounds.width[j, c]  # UCB(κ_j − κ_c)
        lower = bounds.difference[c, j] - bounds.width[c, j]  # LCB(κ_c − κ_j)
        if j in out:
            found.append(_evidence(bounds, j, c, "cannot judge"))
        elif lower > delta:
            found.append(_evidence(bounds, j, c, "below the candidate"))
        elif upper <= delta and prices[j] >= prices[c]:
            found.append(_evidence(bounds, j, c, "not better, not cheaper"))
        elif j in dominated:
            found.append(_evidence(bounds, j, dominated[j], "dominated"))
        else:
            found.append(_evidence(bounds, j, c, None))
    return found


def _cheapest(cells: Sequence[int], prices: FloatArray, kappas: FloatArray) -> int:
    """The cheapest of ``cells``; ties to the higher κ̂, then the lower index."""
    return min(cells, key=lambda c: (prices[c], -np.nan_to_num(kappas[c], nan=-2.0), c))


def candidate_of(
    kappas: FloatArray, prices: FloatArray, delta: float, out: frozenset[int] = frozenset()
) -> int:
    """The cheapest cell whose κ̂ ≥ max κ̂ − δ (the cheapest cell when no κ̂ is known), of the
    cells not ``out`` of the race."""
    cells = [c for c in range(prices.size) if c not in out]
    known = [c for c in cells if np.isfinite(kappas[c])]
    if not known:
        return _cheapest(cells, prices, kappas)
    best = max(float(kappas[c]) for c in known)
    return _cheapest([c for c in known if kappas[c] >= best - delta], prices, kappas)


class RaceInputs(NamedTuple):
    """A race's grades in race order, encoded as positions on the scale (−1: no grade)."""

    reference: IntArray
    """The reference grade of each graded item, in race order, ``(N,)``."""
    grades: IntArray
    """Each cell's grade of each item, ``(K, N)``; −1: no grade (or not judged yet)."""
    prices: FloatArray
    """Each cell's dollars per judgment, ``(K,)``."""
    n_grades: int
    """How many grades the scale has (κ's categories)."""
    weights: FloatArray | None = None
    """With asked grades (``race.labels=ask``), each item's weight 1/π where a person's grade
    was asked for, 0 where not (its reference is then −1); None when every item's reference
    grade is known (the uniform race)."""
    judged: FloatArray | None = None
    """With dear judges judged on a sample (``race.spare_dear=on``), each cell's weight of each
    item, ``(K, N)``: 1/q where it was to judge the item, 0 where not
    (:mod:`~mmjudge.studies.race_spare`); None when every cell judges its whole prefix."""

    def spared(self, prefixes: IntArray) -> SparedJudging:
        """The race's grades as :mod:`~mmjudge.studies.race_spare` reads them."""
        assert self.judged is not None
        return SparedJudging(self.reference, self.grades, prefixes, self.judged, self.n_grades)

    def judgments(self, prefixes: IntArray) -> IntArray:
        """Judgments each cell made within its prefix: the prefix, or the items it was to
        judge when it judged a sample."""
        if self.judged is None:
            return prefixes
        inside = np.arange(self.grades.shape[1])[None, :] < prefixes[:, None]
        return (inside & (self.judged > 0)).sum(axis=1).astype(np.int64)


def race_inputs(
    reference: FloatArray,
    grades: FloatArray | Sequence[FloatArray],
    prices: Sequence[float],
    scale: Sequence[float],
    weights: FloatArray | None = None,
    judged: FloatArray | None = None,
) -> RaceInputs:
    """The inputs of :func:`decide_round` from grades in race order (``nan``: no grade, or
    not judged yet); every item needs a reference grade on the scale, or with ``weights``
    (asked grades: 1/π where asked, 0 where not) every item asked for."""
    codes = grade_codes(np.vstack([as_labels(g) for g in grades]), scale)
    ref = grade_codes(as_labels(reference), scale)
    needed = ref < 0 if weights is None else (ref < 0) & (np.asarray(weights) > 0)
    if needed.any():
        raise ValueError("every item of the race needs a reference grade on the scale")
    if codes.shape[1] != ref.size or len(prices) != codes.shape[0]:
        raise ValueError("grades, reference and prices do not line up")
    held = None if weights is None else np.asarray(weights, dtype=np.float64)
    sampled = None if judged is None else np.asarray(judged, dtype=np.float64)
    return RaceInputs(ref, codes, np.asarray(prices, dtype=np.float64), len(scale), held, sampled)


def decide_round(
    inputs: RaceInputs,
    prefixes: Sequence[int],
    rule: RaceConfig,
    round_number: int,
    *,
    previous_active: Sequence[int] | None = None,
    cannot_judge: Collection[int] = (),
) -> RoundDecision:
    """The decision after round ``round_number``: the cells' prefixes are ``prefixes`` (items
    each has judged, in race order), ``previous_active`` the cells that judged this round
    (default: every cell) and ``cannot_judge`` the cells the runner reports out of the race
    (with those that judged their prefix without a grade). See the module docstring for the
    rule. Raises :class:`NoCellCanJudge` when no cell can judge."""
    codes, prices = inputs.grades, inputs.prices
    lengths = np.asarray(prefixes, dtype=np.int64)
    n_cells, n_items = codes.shape
    out = frozenset(cannot_judge) | _without_grades(codes, lengths)
    if len(out) == n_cells:
        raise NoCellCanJudge("no cell of the race can judge")
    if inputs.judged is None:
        kappas = race_kappas(inputs.reference, codes, lengths, inputs.weights, inputs.n_grades)
    else:
        kappas = spared_kappas(inputs.spared(lengths))
    bounds = _round_bounds(inputs, lengths, rule)
    dominated = _dominated(bounds, prices, out)
    candidate = candidate_of(kappas, prices, rule.delta, out)
    settled = _against(bounds, prices, dominated, rule, candidate, out)
    active = tuple(sorted([candidate, *(e.cell for e in settled if e.reason is None)]))
    ending, chosen = _ending(
        rule, round_number, lengths, prices, kappas, bounds, dominated, out, (candidate, *active)
    )
    if ending is None and len(active) == 1:  # the others are settled or out of reach
        ending, chosen = "cannot separate", candidate
    before = set(range(n_cells) if previous_active is None else previous_active)
    after = set(active) if ending is None else set()
    if chosen is not None and chosen != candidate:  # the evidence is against the choice
        settled = _settled_against(bounds, prices, dominated, rule.delta, chosen, out)
    kept = after if chosen is None else {chosen}
    prefix = round_length(rule, round_number, n_items)
    return RoundDecision(
        schema_version=SCHEMA_VERSION,
        round=round_number,
        prefix=prefix,
        alpha_round=round_alpha(rule, round_number, n_items),
        alpha_total=alpha_spent(rule, prefix / n_items),
        z=critical_value(rule, prefix, n_items, n_cells),
        kappas=tuple(float(x) for x in kappas),
        candidate=candidate,
        chosen=chosen,
        ending=ending,
        active=tuple(sorted(after)),
        changes=_changes(before, kept, settled, bounds, candidate if chosen is None else chosen),
        settled=tuple(settled),
        judgments=int(inputs.judgments(lengths).sum()),
        list_usd=float((inputs.judgments(lengths) * prices).sum()),
        target="items" if rule.finite_population else "population",
    )


def _against(
    bounds: _Bounds,
    prices: FloatArray,
    dominated: dict[int, int],
    rule: RaceConfig,
    candidate: int,
    out: frozenset[int],
) -> list[Evidence]:
    """Every other cell against the candidate, settled or not, and with the population as
    the target those the items cannot separate from it."""
    settled = _settled_against(bounds, prices, dominated, rule.delta, candidate, out)
    if rule.finite_population:
        return settled
    return [_beyond_reach(e, bounds, prices, rule.delta) for e in settled]


#: With the population as the target, a cell not cheaper than the candidate stops judging
#: when the pair would need more than this many times the race's graded items to be settled
#: (:func:`~mmjudge.studies.race_records.more_items`) ...
BEYOND_REACH = 2.0
#: ... a projection resting on at least this many disagreements between the two (with fewer,
#: the bound on unseen ones, not what was seen, sets the width it would extrapolate).
REACH_DISAGREEMENTS = 50


def _beyond_reach(e: Evidence, bounds: _Bounds, prices: FloatArray, delta: float) -> Evidence:
    """``e`` (a cell against the candidate) marked ``cannot separate at this size`` when the
    items cannot settle it: see the module docstring."""
    pair = (e.cell, e.comparator)
    if e.reason is not None or prices[e.cell] < prices[e.comparator]:
        return e
    if bounds.disagreements[pair] < REACH_DISAGREEMENTS:
        return e
    needed = more_items(e, delta, not_cheaper=True)
    if math.isfinite(needed) and needed > BEYOND_REACH * bounds.graded:
        return dataclasses.replace(e, reason="cannot separate at this size")
    return e


def _round_bounds(inputs: RaceInputs, lengths: IntArray, rule: RaceConfig) -> _Bounds:
    """Every pair's difference and half-width on its items, each at the z and disagreement
    bound of the round its shorter prefix was drawn in."""
    n_cells, n_items = inputs.grades.shape
    if inputs.judged is None:
        stats = race_pairs(
            inputs.reference, inputs.grades, lengths, inputs.weights, inputs.n_grades
        )
    else:
        stats = spared_pair_stats(inputs.spared(lengths))
    drawn = [int(m) for m in stats.drawn]
    z = np.asarray([critical_value(rule, m, n_items, n_cells) for m in drawn], dtype=float)
    level = np.asarray([unseen_level(rule, m, n_items, n_cells) for m in drawn], dtype=float)
    finite = n_items if rule.finite_population else None
    return _bounds(stats, half_widths(stats, z, level, n_items=finite), n_cells, n_items)


def _ending(
    rule: RaceConfig,
    round_number: int,
    lengths: IntArray,
    prices: FloatArray,
    kappas: FloatArray,
    bounds: _Bounds,
    dominated: dict[int, int],
    out: frozenset[int],
    candidate_and_active: tuple[int, ...],
) -> tuple[Ending | None, int | None]:
    """Whether the race ends after this round, and with which cell: a chosen cell (every
    other settled against it; the cheapest such), else the candidate when the items ran out
    or the next round would pass the dollar cap."""
    n_cells, n_items = prices.size, int(bounds.graded)
    candidate, *active = candidate_and_active
    if n_cells == 1:
        return "one cell", 0
    chosen = [
        c
        for c in range(n_cells)
        if c not in out
        and all(
            e.reason is not None
            for e in _settled_against(bounds, prices, dominated, rule.delta, c, out)
        )
    ]
    if chosen:
        return "settled", _cheapest(chosen, prices, kappas)
    if all(lengths[c] >= n_items for c in active):
        return "items ran out", candidate
    next_length = round_length(rule, round_number + 1, n_items)
    next_cost = float(sum(max(next_length - lengths[c], 0) * prices[c] for c in active))
    if rule.max_usd is not None and float((lengths * prices).sum()) + next_cost > rule.max_usd:
        return "dollar cap", candidate
    return None, None


def _without_grades(codes: IntArray, lengths: IntArray) -> frozenset[int]:
    """Cells that judged a prefix and hold no grade on it (every answer failed or unread)."""
    return frozenset(
        c
        for c in range(codes.shape[0])
        if lengths[c] > 0 and not (codes[c, : lengths[c]] >= 0).any()
    )


def _changes(
    before: set[int],
    after: set[int],
    settled: Sequence[Evidence],
    bounds: _Bounds,
    candidate: int,
) -> tuple[CellChange, ...]:
    by_cell = {e.cell: e for e in settled}
    out = []
    for cell in sorted(before - after):
        out.append(CellChange(cell, "stopped", by_cell[cell]))
    for cell in sorted(after - before):
        evidence = by_cell.get(cell, _evidence(bounds, cell, candidate, None))
        out.append(CellChange(cell, "resumed", evidence))
    return tuple(out)
