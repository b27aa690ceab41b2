"""A race's rounds and its error budget (see :mod:`mmjudge.studies.race_rule` for the rule they
serve): how many items each round holds, how α is spent across rounds and split between a
cell's rivals, and the z and disagreement bound's level each pair is judged at."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

from mmjudge.config.race import RaceConfig
from mmjudge.studies.race_boundary import look_fractions, spending_boundary

#: The fewest items a round holds: below it a difference of κ rests on too few items for its
#: normal approximation (a set of no more items is judged in one round).
MIN_ROUND_ITEMS = 25
#: The largest share of the graded items one round holds, so that a race looks at least four
#: times and can stop before the end.
MAX_ROUND_SHARE = 0.25
#: The share of each pair's error budget that pays for the bound on the disagreements a
#: sample may have missed (:mod:`~mmjudge.studies.race_pairs`); the rest pays for the interval.
UNSEEN_SHARE = 0.1


class RoundPlan(NamedTuple):
    """The items of every round of a race, and why they are not ``race.round_items``."""

    items: int
    """Items each round adds to every active cell's prefix."""
    reason: str | None
    """Why the rounds are not ``race.round_items`` long (None when they are), for the
    console."""


def planned_round_items(rule: RaceConfig, n_items: int) -> RoundPlan:
    """The rounds' size on ``n_items`` graded items: ``race.round_items``, but at most a
    quarter of the items (:data:`MAX_ROUND_SHARE`) and at least :data:`MIN_ROUND_ITEMS` (all
    of them when there are no more), with the reason when that changes it."""
    largest = max(math.floor(n_items * MAX_ROUND_SHARE), MIN_ROUND_ITEMS)
    items = max(min(rule.round_items, largest), 1)
    if items == rule.round_items:
        return RoundPlan(items, None)
    if n_items <= MIN_ROUND_ITEMS:
        why = f"one round of all {n_items} graded items (there are no more than {MIN_ROUND_ITEMS})"
    else:
        why = (
            f"rounds of {items} items instead: race.round_items={rule.round_items} is more than "
            f"a quarter of the {n_items} graded items, and a race needs several looks to stop "
            "early"
        )
    return RoundPlan(min(items, n_items), why)


def round_length(rule: RaceConfig, round_number: int, n_items: int) -> int:
    """The prefix every active cell reaches in round ``round_number`` (1, 2, ...) of a race
    over ``n_items`` graded items."""
    return min(n_items, max(round_number, 0) * planned_round_items(rule, n_items).items)


def alpha_spent(rule: RaceConfig, information: float) -> float:
    """α(u) = α·u^ρ: the error budget spent once a share ``u`` of the items is drawn."""
    return rule.alpha * min(max(information, 0.0), 1.0) ** rule.rho


def round_alpha(rule: RaceConfig, round_number: int, n_items: int) -> float:
    """Round ``round_number``'s share of α: α(u_t) − α(u_{t−1})."""
    now = round_length(rule, round_number, n_items) / n_items
    before = round_length(rule, round_number - 1, n_items) / n_items
    return alpha_spent(rule, now) - alpha_spent(rule, before)


def _planned_rounds(rule: RaceConfig, n_items: int) -> int:
    return math.ceil(n_items / planned_round_items(rule, n_items).items)


def pair_share(rule: RaceConfig, round_number: int, n_items: int, n_cells: int) -> float:
    """One pair's share of α in round ``round_number``: the round's share over a cell's
    ``n_cells − 1`` rivals."""
    return round_alpha(rule, round_number, n_items) / max(n_cells - 1, 1)


class _Looks(NamedTuple):
    """Every planned round's z and the level of its disagreement bound, for one pair."""

    z: tuple[float, ...]
    level: tuple[float, ...]


@functools.lru_cache(maxsize=64)
def _looks(
    alpha: float, round_items: int, rho: float, target: str, n_items: int, n_cells: int
) -> _Looks:
    rule = RaceConfig(alpha=alpha, round_items=round_items, rho=rho, target=target)
    finite = rule.finite_population
    size = planned_round_items(rule, n_items).items
    fractions = look_fractions(size, n_items, last=not finite)
    shares = [
        pair_share(rule, t, n_items, n_cells) for t in range(1, _planned_rounds(rule, n_items) + 1)
    ]
    z = spending_boundary(
        tuple((1.0 - UNSEEN_SHARE) * share for share in shares[: len(fractions)]),
        fractions,
        without_replacement=finite,
    )
    return _Looks(z, tuple(UNSEEN_SHARE * share for share in shares))


def _looks_of(rule: RaceConfig, n_items: int, n_cells: int) -> _Looks:
    return _looks(rule.alpha, rule.round_items, rule.rho, rule.target, n_items, n_cells)


def boundaries(rule: RaceConfig, n_items: int, n_cells: int) -> tuple[float, ...]:
    """The z of every planned round (before the last, for ``race.target=items``, where the
    full data decides exactly): the error-spending boundary
    (:mod:`~mmjudge.studies.race_boundary`) at the share of each pair's α that pays for the
    interval (``inf`` where a round has nothing to spend)."""
    return _looks_of(rule, n_items, n_cells).z


def look_of(rule: RaceConfig, prefix: int, n_items: int) -> int:
    """The round (1, 2, ...) whose prefix is ``prefix`` items, or that first reached it."""
    size = planned_round_items(rule, n_items).items
    return min(max(math.ceil(prefix / size), 1), _planned_rounds(rule, n_items))


def critical_value(rule: RaceConfig, prefix: int, n_items: int, n_cells: int) -> float:
    """The z of the round whose prefix is ``prefix`` items: a pair is always judged against
    the boundary of the round its shorter prefix was drawn in (a pair whose cells stopped is
    not looked at again with a later round's z); with ``race.target=items``, 0 once every
    item is drawn (the full data decides exactly)."""
    if rule.finite_population and prefix >= n_items:
        return 0.0
    return boundaries(rule, n_items, n_cells)[look_of(rule, prefix, n_items) - 1]


def unseen_level(rule: RaceConfig, prefix: int, n_items: int, n_cells: int) -> float:
    """The chance the bound on a pair's unseen disagreements may miss, for the round whose
    prefix is ``prefix`` items: :data:`UNSEEN_SHARE` of the pair's share of α then."""
    return _looks_of(rule, n_items, n_cells).level[look_of(rule, prefix, n_items) - 1]
