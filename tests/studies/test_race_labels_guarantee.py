"""The race's guarantee with people's grades asked round by round (``race.labels=ask``): the
near-tied stress populations of :mod:`tests.studies.near_ties` (a copy of a judge degraded on
about 1.5% of the items, and one with 1% of its grades changed, each listed first and second;
δ = 0 and 0.02; rounds of 50 and 100 of 400 items; about 5 grades asked per round of 50), and
three judges whose grade distributions differ (so that their κ differences rest on the items
they grade alike too, through chance agreement, and the even share's weights matter), the
second 0.019 below the best and the third 0.064 below, rounds of 50 and 200 of 1,000 items.

Each setting is raced on fewer seeds than the uniform race's near-tie tests, so that the three
tests take well under a minute together; the check is one-sided (a guarantee bounds the
failure rate from above only) at two levels: each setting's failures at or below the 99.5%
quantile of Binomial(seeds, α), and the failures of all a test's settings together at or below
that of Binomial(seeds × settings, α) — each setting's count is at most Binomial(seeds, α) when
the guarantee holds, and so is their sum's over the total. The pooled allowance (6.9% and
7.0% of the races) is as tight as a single setting's was at 500 seeds (7.6%). The 500-seed version
is ``benchmarks/race_labels_guarantee.py``, its figures in docs/figures.md."""

from __future__ import annotations

import pytest

from tests.studies.near_ties import differing_failures, population_failures, within_alpha

#: Races per setting of a near-tied population (8 settings).
NEAR_TIE_SEEDS = 120
#: Races per setting of the differing judges (6 settings).
DIFFERING_SEEDS = 150


def _within_alpha(found: dict[object, int], seeds: int) -> None:
    """Each setting, and all of them together, within the one-sided allowance."""
    assert all(within_alpha(f, seeds) for f in found.values()), found
    assert within_alpha(sum(found.values()), seeds * len(found)), found


@pytest.mark.slow  # 960 races: about 10 s on a 2-core machine
def test_asked_grades_keep_the_guarantee_on_a_degraded_copy() -> None:
    _within_alpha(population_failures("degraded", "ask", NEAR_TIE_SEEDS), NEAR_TIE_SEEDS)


@pytest.mark.slow  # 960 races: about 10 s on a 2-core machine
def test_asked_grades_keep_the_guarantee_on_a_flipped_copy() -> None:
    _within_alpha(population_failures("flipped", "ask", NEAR_TIE_SEEDS), NEAR_TIE_SEEDS)


@pytest.mark.slow  # 900 races: about 10 s
def test_asked_grades_keep_the_guarantee_where_grade_distributions_differ() -> None:
    """A race that claims its guarantee chooses more than δ below the best in at most α of
    the seeds, whichever is listed first."""
    _within_alpha(differing_failures(DIFFERING_SEEDS), DIFFERING_SEEDS)


@pytest.mark.slow  # 1,200 races: about 15 s
@pytest.mark.parametrize("label_usd", [0.05, 50.0])
def test_a_priced_even_share_keeps_the_guarantee(label_usd: float) -> None:
    """With ``race.label_usd`` the even share follows the earlier rounds' grades (cheap grades
    raise it towards 1, dear ones keep it low); each round's π is still fixed before its own
    grades come, so the rate stays within α."""
    seeds = DIFFERING_SEEDS // 3
    _within_alpha(differing_failures(seeds, label_usd), seeds)
