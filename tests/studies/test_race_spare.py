"""Dear judges judged on a sample (``race.spare_dear=on``): the difference estimator against
hand-computed tables and the uniform race's statistics, its bias and coverage over many draws
of the coins, the shares each round draws with, and the simulation's counting of what a
sampled judge judged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmjudge.config.race import RaceConfig
from mmjudge.errors import ConfigError
from mmjudge.grid.simulation import simulated_rounds
from mmjudge.studies.race_labels import weighted_pair_stats
from mmjudge.studies.race_pairs import own_kappas, pair_stats
from mmjudge.studies.race_spare import (
    MIN_SHARE,
    SparedJudging,
    draw_judged,
    judging_shares,
    spared_kappas,
    spared_pair_stats,
)

SCALE = (0.0, 1.0, 2.0, 3.0)


def test_a_sampled_judges_table_by_hand() -> None:
    """Four items of a two-grade scale; the anchor judges all, the dear judge items 0 and 2
    with q = 1/2. Its prediction from (person, anchor) rows: (0, 0) seen once saying 0, so
    (1 + ½·½, ½·½) / 2 = (¾, ¼); (0, 1) never seen, its overall shares (½, ½). T̂ row 0:
    item 0 (¾, ¼) + 2·((1, 0) − (¾, ¼)) = (1¼, −¼), plus item 1's (½, ½): (1¾, ¼); row 1
    (2 items, both right once corrected): (0, 2). κ = (15/16 − ½)/(1 − ½) = 0.875; the
    anchor's plain table [[1, 1], [0, 2]] gives κ 0.5."""
    judging = SparedJudging(
        reference=np.array([0, 0, 1, 1]),
        codes=np.array([[0, 1, 1, 1], [0, -1, 1, -1]]),
        prefixes=np.array([4, 4]),
        weights=np.array([[1.0, 1, 1, 1], [2.0, 0, 2, 0]]),
        n_grades=2,
    )
    assert spared_kappas(judging) == pytest.approx([0.5, 0.875])


def _population(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A person's grade codes and three judges: the dear one agrees with the first cheap
    one on most items (so the anchor predicts it well)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(4, n, p=[0.5, 0.25, 0.15, 0.1])
    cheap = np.where(rng.random(n) < 0.45, truth, rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1]))
    dear = np.where(rng.random(n) < 0.8, cheap, np.where(rng.random(n) < 0.5, truth, 0))
    other = np.where(rng.random(n) < 0.35, truth, rng.choice(4, n))
    return truth, np.vstack([cheap, dear, other])


def test_every_item_judged_is_the_uniform_race() -> None:
    """With q = 1 everywhere, κ̂ is each cell's plain κ, the differences the jackknife's and
    the standard errors the linearisation's of asked grades at weight 1 (the reference)."""
    truth, codes = _population(600, 1)
    prefixes = np.array([600, 400, 500])
    judging = SparedJudging(truth, codes, prefixes, np.ones(codes.shape), 4)
    np.testing.assert_allclose(spared_kappas(judging), own_kappas(truth, codes, prefixes, 4))
    mine = spared_pair_stats(judging)
    plain = pair_stats(truth, codes, prefixes, 4)
    linear = weighted_pair_stats(truth, codes, prefixes, np.ones(600), 4)
    np.testing.assert_allclose(mine.difference, plain.difference, atol=1e-12)
    np.testing.assert_allclose(mine.se, linear.se, rtol=1e-9)
    np.testing.assert_array_equal(mine.n_items, plain.n_items)
    np.testing.assert_array_equal(mine.disagreements, plain.disagreements)
    np.testing.assert_allclose(mine.influence, linear.influence, rtol=1e-9)


@pytest.mark.slow  # 400 draws of the coins: about 5 s
def test_the_estimator_is_unbiased_and_its_interval_covers() -> None:
    """The dear judge judged a third of 3,000 items, 400 draws of the coins: its κ difference
    to the cheap anchor averages the full data's (within 4 Monte Carlo errors), the design's
    95% interval covers it in 92–98% of draws, and the anchor makes it at least 1.5 times as
    precise as the same sample without one (a pure Horvitz–Thompson table)."""
    truth, codes = _population(3000, 2)
    prefixes = np.full(3, 3000)
    full = SparedJudging(truth, codes, prefixes, np.ones(codes.shape), 4)
    target = spared_pair_stats(full).difference[0]  # κ_cheap − κ_dear on every item
    found, covered, plain = [], 0, []
    for draw in range(400):
        weights = np.ones(codes.shape)
        weights[1] = draw_judged(1 / 3, 3000, draw, 1, 1)
        seen = codes.copy()
        seen[1, weights[1] == 0] = -1
        stats = spared_pair_stats(SparedJudging(truth, seen, prefixes, weights, 4))
        found.append(stats.difference[0])
        covered += abs(stats.difference[0] - target) <= 1.96 * stats.se[0]
        alone = seen.copy()
        alone[[0, 2]] = -1  # no anchor: every other cell without a grade
        keep = np.ones(codes.shape)
        only = SparedJudging(truth, alone, prefixes, np.vstack([keep[0], weights[1], keep[2]]), 4)
        plain.append(spared_kappas(only)[1])
    found_a = np.asarray(found)
    assert abs(found_a.mean() - target) <= 4 * found_a.std() / math.sqrt(found_a.size)
    assert 0.92 <= covered / 400 <= 0.98
    assert np.std(plain) >= 1.5 * found_a.std()


def test_shares_from_the_price_ratio() -> None:
    """A cell at 16 times the cheapest judging cell's price judges with q = ¼; at 100 times,
    the floor; the candidate and the cells under twice the price judge everything."""
    shares = judging_shares([1.0, 16.0, 100.0, 1.9, 16.0], [0, 1, 2, 3, 4], candidate=4)
    np.testing.assert_allclose(shares, [1, 0.25, MIN_SHARE, 1, 1])
    assert judging_shares([0.0, 5.0], [0, 1], None).tolist() == [1.0, 1.0]  # a free judge
    drawn = draw_judged(0.25, 20_000, 3, 2, 1)
    assert set(np.unique(drawn)) == {0.0, 4.0}
    assert abs((drawn > 0).mean() - 0.25) < 0.01
    np.testing.assert_array_equal(drawn, draw_judged(0.25, 20_000, 3, 2, 1))  # the same race


def test_the_simulation_counts_what_a_sampled_judge_judged() -> None:
    """The dear cell's grades are revealed only where it was drawn to judge, and the outcome's
    judgments and dollars count those items alone."""
    truth, codes = _population(1000, 3)
    prices = [1.0, 1.0, 9.0]  # the weakest judge dear: never the candidate
    rule = RaceConfig(round_items=100, spare_dear="on")
    order = np.random.default_rng(0).permutation(1000)
    rounds = simulated_rounds(truth, codes, prices, order, rule, scale=SCALE, seed=5)
    out = rounds.result.outcome
    assert out is not None
    judged = rounds.judged
    made = [int((judged[c, : out.prefixes[c]] > 0).sum()) for c in range(3)]
    assert made[0] == out.prefixes[0] and made[1] == out.prefixes[1]
    assert 0.2 * out.prefixes[2] < made[2] < 0.45 * out.prefixes[2]  # q = 1/3
    assert out.judgments == sum(made)
    assert out.list_usd == pytest.approx(sum(m * p for m, p in zip(made, prices, strict=True)))


def test_the_setting_is_checked_once() -> None:
    RaceConfig(spare_dear="on").validate()
    for bad in (
        RaceConfig(spare_dear="yes"),
        RaceConfig(spare_dear="on", labels="ask"),
        RaceConfig(spare_dear="on", target="items"),
    ):
        with pytest.raises(ConfigError, match=r"race\.spare_dear"):
            bad.validate()


def test_a_grid_refuses_it_in_one_line() -> None:
    from pathlib import Path

    from mmjudge.grid.race import RaceCell, RaceItems, RaceResult, RaceRounds

    cells = [RaceCell(0, "a", (), Path(), 1.0, 10.0, 0)]
    result = RaceResult(Path(), cells, 10, RaceConfig(spare_dear="on"), 0)
    items = RaceItems((("q", "d"),) * 10, np.zeros(10), SCALE)
    with pytest.raises(ConfigError, match=r"race\.spare_dear=on: a grid.s cells judge prefixes"):
        RaceRounds(result, items, readings=None)  # type: ignore[arg-type]
