"""The race's stopping rule: κ as the project scores it, the jackknife against a plain loop,
the bound on disagreements a prefix has not seen, the error budget, the rounds' size, the
target, and many simulated races against the guarantee (the near-tied stress populations
are in ``near_ties.py``)."""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
from scipy import stats as scipy_stats

from mmjudge import metrics
from mmjudge.config.race import RaceConfig
from mmjudge.grid.simulation import simulate_race
from mmjudge.metrics import scoring
from mmjudge.store.race_file import read_race_file, write_race_file
from mmjudge.studies import race_pairs
from mmjudge.studies import race_rule as race
from mmjudge.studies.race_boundary import spending_boundary
from mmjudge.studies.race_records import (
    CellChange,
    Evidence,
    RoundDecision,
    cannot_separate_text,
    cell_fates,
    cell_prefixes,
    kappa_text,
    more_items,
    unsettled,
)
from mmjudge.studies.race_simulation import full_data_choice
from mmjudge.studies.race_warnings import chosen_kappa, race_warnings

SCALE = (0.0, 1.0, 2.0, 3.0)


def noisy_judge(rng: np.random.Generator, truth: np.ndarray, keep: float) -> np.ndarray:
    """The reference grade with probability ``keep``, else a uniform random grade."""
    copy = rng.random(truth.size) < keep
    return np.where(copy, truth, rng.integers(0, 4, truth.size)).astype(float)


def test_kappa_on_full_data_is_the_projects_kappa() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 400).astype(float)
    truth[:20] = np.nan  # no reference: not in the race
    judges = np.vstack([noisy_judge(rng, np.nan_to_num(truth), p) for p in (0.7, 0.4, 0.0)])
    judges[0, 30:45] = np.nan  # unparseable answers
    judges[1, 50:55] = 7.0  # off the scale: left out, as scoring does
    keep = ~np.isnan(truth)
    codes = race_pairs.grade_codes(judges[:, keep], SCALE)
    full = np.full(3, int(keep.sum()))
    found = race_pairs.own_kappas(race_pairs.grade_codes(truth[keep], SCALE), codes, full, 4)
    queries = np.zeros(truth.size)
    for row, value in zip(judges, found, strict=True):
        expected = scoring.score_judge(queries, truth, row, SCALE, n_boot=0).kappa.estimate
        assert value == pytest.approx(expected, abs=1e-12)
    kappas, _ = full_data_choice(truth, judges, [1, 1, 1], scale=SCALE, delta=0.02)
    assert np.allclose(kappas, found, atol=1e-12, rtol=0)


def slow_jackknife(reference: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The delete-one jackknife standard error of κ(a) − κ(b) by an explicit loop."""
    both = ~(np.isnan(a) | np.isnan(b))
    r, x, y = reference[both], a[both], b[both]
    n = r.size
    values = []
    for item in range(n):
        rest = np.arange(n) != item
        values.append(
            metrics.cohen_kappa(r[rest], x[rest], SCALE)
            - metrics.cohen_kappa(r[rest], y[rest], SCALE)
        )
    v = np.asarray(values)
    return math.sqrt((n - 1) / n * ((v - v.mean()) ** 2).sum())


def test_jackknife_matches_a_plain_loop() -> None:
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 4, 60).astype(float)
    a, b = noisy_judge(rng, truth, 0.6), noisy_judge(rng, truth, 0.3)
    a[[3, 9]] = np.nan
    b[[9, 40]] = np.nan
    inputs = race.race_inputs(truth, [a, b], [1.0, 1.0], SCALE)
    for prefix in (25, 60):
        stats = race_pairs.pair_stats(inputs.reference, inputs.grades, np.array([prefix, 60]), 4)
        expected = slow_jackknife(truth[:prefix], a[:prefix], b[:prefix])
        assert stats.se[0] == pytest.approx(expected, rel=1e-10)
        both = ~(np.isnan(a[:prefix]) | np.isnan(b[:prefix]))
        assert stats.n_items[0] == both.sum() and stats.drawn[0] == prefix
        ka = metrics.cohen_kappa(truth[:prefix][both], a[:prefix][both], SCALE)
        kb = metrics.cohen_kappa(truth[:prefix][both], b[:prefix][both], SCALE)
        assert stats.difference[0] == pytest.approx(ka - kb, abs=1e-12)


def test_only_the_items_target_has_intervals_of_no_width_on_the_full_data() -> None:
    rng = np.random.default_rng(8)
    truth = rng.integers(0, 4, 50).astype(float)
    inputs = race.race_inputs(
        truth, [noisy_judge(rng, truth, p) for p in (0.5, 0.4)], [1.0, 1.0], SCALE
    )
    full = race_pairs.pair_stats(inputs.reference, inputs.grades, np.array([50, 50]), 4)
    part = race_pairs.pair_stats(inputs.reference, inputs.grades, np.array([20, 50]), 4)
    # the items themselves (race.target=items): the full data decides exactly
    assert race_pairs.half_widths(full, 3.0, 0.01, n_items=50)[0] == 0.0
    assert 0.0 < race_pairs.half_widths(part, 3.0, 0.01, n_items=50)[0] < math.inf
    # the population they were drawn from (the default): every item judged leaves a width
    se = race_pairs.bounded_se(full, 0.01)[0]
    assert race_pairs.half_widths(full, 3.0, 0.01)[0] == pytest.approx(3.0 * se) and se > 0
    shrunk = race_pairs.half_widths(part, 3.0, 0.01, n_items=50)[0]
    assert race_pairs.half_widths(part, 3.0, 0.01)[0] == pytest.approx(shrunk / math.sqrt(0.6))


def test_error_budget_spends_alpha_once() -> None:
    rule = RaceConfig(alpha=0.05, round_items=30, rho=2.0, target="items")
    shares = [race.round_alpha(rule, t, 120) for t in range(1, 6)]
    assert sum(shares) == pytest.approx(0.05)
    assert shares[0] == pytest.approx(0.05 * 0.25**2)
    assert race.round_alpha(rule, 5, 120) == 0.0  # nothing new to draw: nothing to spend
    # with the items as the target the last round decides exactly, with intervals of no width
    assert race.critical_value(rule, 120, 120, 7) == 0.0
    planned = race.boundaries(rule, 120, 7)
    assert len(planned) == 3 and race.critical_value(rule, 60, 120, 7) == planned[1]
    # with the population as the target (the default) the last round is a look like any other
    rule = dataclasses.replace(rule, target="population")
    planned = race.boundaries(rule, 120, 7)
    assert len(planned) == 4 and race.critical_value(rule, 120, 120, 7) == planned[3] > 2.0
    # each pair's share of a round: a tenth for the bound on unseen disagreements
    assert race.unseen_level(rule, 60, 120, 7) == pytest.approx(0.1 * shares[1] / 6)


def test_rounds_are_at_most_a_quarter_of_the_items_and_say_so() -> None:
    rule = RaceConfig()  # race.round_items=200
    assert race.planned_round_items(rule, 4423) == (200, None)
    sixty = race.planned_round_items(rule, 60)
    assert (
        sixty.items == 25 and "200" in str(sixty.reason) and "60 graded items" in str(sixty.reason)
    )
    assert [race.round_length(rule, t, 60) for t in (1, 2, 3, 4)] == [25, 50, 60, 60]
    assert race.planned_round_items(RaceConfig(round_items=300), 1000).items == 250
    few = race.planned_round_items(rule, 20)
    assert few.items == 20 and "one round" in str(few.reason)
    assert race.planned_round_items(RaceConfig(round_items=10), 60) == (10, None)


@pytest.mark.parametrize("without_replacement", [True, False])
def test_the_boundary_spends_each_rounds_share_on_paths_it_was_not_fitted_on(
    without_replacement: bool,
) -> None:
    # nested samples of a finite set of items, or independent draws from a population (whose
    # last look may be every item, u = 1)
    fractions = (0.2, 0.4, 0.6, 0.8) if without_replacement else (0.25, 0.5, 0.75, 1.0)
    shares = (0.002, 0.004, 0.004, 0.004)
    z = spending_boundary(shares, fractions, without_replacement=without_replacement)
    u = np.asarray(fractions)
    low, high = np.minimum.outer(u, u), np.maximum.outer(u, u)
    if without_replacement:
        correlation = np.sqrt(low * (1 - high) / (high * (1 - low)))
    else:
        correlation = np.sqrt(low / high)
    rng = np.random.default_rng(7)  # not the boundary's own seed
    paths = rng.multivariate_normal(np.zeros(4), correlation, size=200_000)
    crossed = (paths >= np.asarray(z)).any(axis=1).mean()
    se = np.sqrt(sum(shares) * (1 - sum(shares)) / 200_000)
    assert abs(crossed - sum(shares)) < 4 * se
    # the correlation between rounds is worth something: below the union bound's z
    bonferroni = scipy_stats.norm.ppf(1 - np.asarray(shares))
    assert all(a < b for a, b in zip(z[1:], bonferroni[1:], strict=True))
    assert z[0] == pytest.approx(bonferroni[0], abs=0.05)  # the first round is alone


def test_order_is_a_function_of_the_seed_and_the_items() -> None:
    queries = [f"q{i % 7}" for i in range(50)]
    results = [f"d{i}" for i in range(50)]
    order = race.race_order(4, queries, results)
    flipped = race.race_order(4, queries[::-1], results[::-1])
    assert [results[i] for i in order] == [results[::-1][i] for i in flipped]
    assert sorted(order.tolist()) == list(range(50))
    assert race.race_order(5, queries, results).tolist() != order.tolist()


def test_the_full_data_decides_exactly_only_where_the_items_are_the_target() -> None:
    """Every item judged: with ``race.target=items`` the intervals are exact and the choice
    is the full grid's own; by default a pair the items cannot separate stays unsettled, and
    the race says so instead of printing an interval of no width."""
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 4, 300).astype(float)
    judges = np.vstack([noisy_judge(rng, truth, p) for p in (0.6, 0.58, 0.2)])
    prices = [3.0, 1.0, 0.5]
    inputs = race.race_inputs(truth, judges, prices, SCALE)
    exact = RaceConfig(round_items=75, target="items")
    last = race.decide_round(inputs, [300] * 3, exact, 4)
    _, choice = full_data_choice(truth, judges, prices, scale=SCALE, delta=exact.delta)
    assert last.chosen == choice and last.ending == "settled" and last.z == 0.0
    assert all(e.low == e.high == e.difference for e in last.settled)
    population = dataclasses.replace(exact, target="population")
    sampled = race.decide_round(inputs, [300] * 3, population, 4)
    assert sampled.ending == "items ran out" and sampled.chosen == choice == 0
    assert all(e.high > e.low for e in sampled.settled) and sampled.target == "population"
    # the cheaper judge, 0.12 below the choice here, might be within δ of it on the
    # population: 300 items cannot tell
    assert [e.cell for e in unsettled(sampled)] == [1]


def test_dollar_cap_ends_the_race_without_the_guarantee() -> None:
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 4, 2000).astype(float)
    judges = np.vstack([noisy_judge(rng, truth, p) for p in (0.5, 0.49)])
    rule = RaceConfig(round_items=100, max_usd=0.5, target="items")
    out = simulate_race(truth, judges, [0.002, 0.001], np.arange(2000), rule, scale=SCALE)
    assert out.ending == "dollar cap" and not out.guarantee
    assert out.list_usd <= 0.5


class Synthetic(NamedTuple):
    """A simulated race: its outcome, each judge's κ on the whole pool, the race's inputs."""

    out: race.RaceOutcome
    kappas: np.ndarray
    inputs: race.RaceInputs


def synthetic_race(seed: int, rule: RaceConfig, pool: int = 1500) -> Synthetic:
    """Five judges, two of them near-tied at the top, one answering at random, raced on 1,500
    items drawn from ``pool`` items (the same items: the full data is the whole population)."""
    rng = np.random.default_rng(seed)
    n = 1500
    truth = rng.integers(0, 4, pool).astype(float)
    keeps = (0.62, 0.60, 0.5, 0.35, 0.0)
    judges = np.vstack([noisy_judge(rng, truth, p) for p in keeps])
    judges[1, rng.random(pool) < 0.02] = np.nan
    prices = [10.0, 4.0, 2.0, 1.0, 0.1]
    drawn = rng.permutation(pool)[:n]
    order = race.race_order(seed, ["q"] * n, [str(i) for i in range(n)])
    out = simulate_race(truth[drawn], judges[:, drawn], prices, order, rule, scale=SCALE)
    kappas, _ = full_data_choice(truth, judges, prices, scale=SCALE, delta=rule.delta)
    raced = drawn[order]
    return Synthetic(out, kappas, race.race_inputs(truth[raced], judges[:, raced], prices, SCALE))


@pytest.mark.slow  # over a second
def test_simulated_races_keep_the_guarantee_and_drop_a_random_judge_early() -> None:
    """With the items as the target (the full data decides exactly), every race: its choice
    is within δ of the full data's best but with chance at most α."""
    rule = RaceConfig(alpha=0.1, delta=0.02, round_items=100, target="items")
    trials, misses, random_prefixes, spent = 60, 0, [], []
    for seed in range(trials):
        out, kappas, _ = synthetic_race(seed, rule)
        misses += kappas[out.chosen] < kappas.max() - rule.delta - 1e-12
        random_prefixes.append(out.prefixes[4])
        spent.append(out.list_usd / out.full_list_usd)
    # P(Binomial(60, 0.1) > 13) < 0.01: a rule that broke its budget would fail here.
    assert misses <= 13
    assert np.median(random_prefixes) <= 300, random_prefixes
    assert np.mean(spent) < 1.0


@pytest.mark.slow  # over a second
def test_races_on_a_sample_keep_the_guarantee_they_claim_and_say_when_they_claim_none() -> None:
    """With the population as the target, races on 1,500 items drawn from 30,000: a race that
    claims the guarantee chooses within δ of the population's best but with chance at most α;
    one that does not (the top two cannot be separated at this size) says so, with how many
    more labelled items would."""
    rule = RaceConfig(alpha=0.1, delta=0.02, round_items=100)
    trials, wrong, claimed = 60, 0, 0
    for seed in range(trials):
        out, kappas, inputs = synthetic_race(seed, rule, pool=30_000)
        if out.guarantee:
            claimed += 1
            wrong += kappas[out.chosen] < kappas.max() - rule.delta - 1e-12
            continue
        assert out.ending in ("items ran out", "cannot separate")
        lines = race_warnings(inputs, out, rule)
        assert any("cannot separate" in line and "more labelled items" in line for line in lines)
    assert wrong <= 13 and claimed > 0


@pytest.mark.slow  # over a second
def test_a_stopped_cell_resumes_when_the_candidate_changes() -> None:
    """Rounds record who stops and resumes; the active set always holds the candidate; the
    items each cell judged follow from the rounds alone."""
    rule = RaceConfig(alpha=0.2, delta=0.0, round_items=50)
    for seed in range(10):
        out, _, _ = synthetic_race(seed, rule)
        assert cell_prefixes(out.rounds, 5) == list(out.prefixes)
        for decision in out.rounds:
            if decision.ending is None:
                assert decision.candidate in decision.active
            for change in decision.changes:
                if change.action == "resumed":
                    assert change.evidence.reason is None
                elif decision.ending is None:  # only the end stops a cell not settled
                    assert change.evidence.reason is not None


def test_a_cells_fate_is_its_last_stop_and_the_chosen_cell_is_chosen() -> None:
    def decision(number: int, *changes: tuple[int, str]) -> RoundDecision:
        evidence = Evidence(0, None, 1, 0.0, -0.1, 0.1, 10)
        moves = tuple(CellChange(c, action, evidence) for c, action in changes)  # type: ignore[arg-type]
        return RoundDecision(
            1, number, 10 * number, 0.0, 0.0, 2.0, (0.5,) * 3, 0, None, None, (), moves, (), 0, 0.0
        )

    rounds = [decision(1, (2, "stopped")), decision(2, (2, "resumed")), decision(3, (2, "stopped"))]
    assert cell_fates(rounds, 3) == ["judging", "judging", "stopped after round 3"]
    rounds.append(dataclasses.replace(decision(4, (1, "stopped")), chosen=0, ending="settled"))
    assert cell_fates(rounds, 3) == ["chosen", "stopped after round 4", "stopped after round 3"]


def test_a_judge_without_a_single_grade_leaves_the_race_instead_of_keeping_it_going() -> None:
    rng = np.random.default_rng(3)
    n = 2000
    truth = rng.integers(0, 4, n).astype(float)
    good, fair = noisy_judge(rng, truth, 0.9), noisy_judge(rng, truth, 0.5)
    broken = np.full(n, np.nan)  # every call failed, or no answer could be read
    order = race.race_order(3, ["q"] * n, [str(i) for i in range(n)])
    rule = RaceConfig(round_items=100)
    alone = simulate_race(truth, [good, fair], [2.0, 1.0], order, rule, scale=SCALE)
    out = simulate_race(truth, [good, fair, broken], [2.0, 1.0, 0.5], order, rule, scale=SCALE)
    # it stops in the first round, and the others decide as they would without it (with the
    # error budget of a race of three)
    assert out.prefixes[2] == 100 and out.chosen == alone.chosen == 0
    first = out.rounds[0]
    assert [(c.cell, c.evidence.reason) for c in first.changes if c.cell == 2] == [
        (2, "cannot judge")
    ]
    assert cell_prefixes(out.rounds, 3) == list(out.prefixes)
    assert out.runner_up == 1 and cell_fates(out.rounds, 3)[2] == ("cannot judge after round 1")


def test_a_cell_the_runner_reports_out_is_never_chosen_nor_resumed() -> None:
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 4, 600).astype(float)
    judges = [noisy_judge(rng, truth, 0.9), noisy_judge(rng, truth, 0.6)]
    inputs = race.race_inputs(truth, judges, [1.0, 2.0], SCALE)
    rule = RaceConfig(round_items=100)
    decision = race.decide_round(inputs, [100, 100], rule, 1, cannot_judge=[0])
    assert decision.chosen == 1 and decision.ending == "settled"
    assert decision.changes[0].evidence.reason == "cannot judge"
    with pytest.raises(race.NoCellCanJudge):
        race.decide_round(inputs, [100, 100], rule, 1, cannot_judge=[0, 1])


def test_a_kappa_that_is_not_known_reads_n_a() -> None:
    assert kappa_text(0.94949) == "0.949"
    assert kappa_text(None) == kappa_text(math.nan) == "n/a"


def test_a_pair_that_never_disagrees_is_not_known_exactly() -> None:
    """Two judges that grade every item of a prefix alike have a jackknife error of 0; the
    interval the race uses still has the width of what the prefix could hide, so the pair
    is not settled at δ = 0 (it was, for whichever cell came first: 62% failures)."""
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 4, 400).astype(float)
    best = noisy_judge(rng, truth, 0.6)
    copy = best.copy()
    copy[300:304] = (copy[300:304] + 1) % 4  # they differ only beyond the first round
    inputs = race.race_inputs(truth, [copy, best], [1.0, 1.0], SCALE)
    stats = race_pairs.pair_stats(inputs.reference, inputs.grades, np.array([50, 50]), 4)
    assert stats.se[0] == 0.0 and stats.disagreements[0] == 0 and stats.difference[0] == 0.0
    level = race.unseen_level(RaceConfig(delta=0.0), 50, 400, 2)
    hidden = 50 * (1 - level ** (1 / 50))  # a sample with no disagreement may hide this many
    assert race_pairs.bounded_se(stats, level)[0] == pytest.approx(
        stats.influence[0] * math.sqrt(hidden) / 50
    )
    decision = race.decide_round(inputs, [50, 50], RaceConfig(delta=0.0, round_items=50), 1)
    assert decision.ending is None and decision.active == (0, 1)


def test_the_largest_influence_is_the_largest_change_one_more_disagreement_makes() -> None:
    """Against a plain loop: add one item graded (r, a) by one judge and (r, b) by the other,
    a ≠ b, and recompute both κ with the project's κ."""
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 4, 40).astype(float)
    a, b = noisy_judge(rng, truth, 0.7), noisy_judge(rng, truth, 0.6)
    inputs = race.race_inputs(truth, [a, b], [1.0, 1.0], SCALE)
    stats = race_pairs.pair_stats(inputs.reference, inputs.grades, np.array([40, 40]), 4)
    base = metrics.cohen_kappa(truth, a, SCALE) - metrics.cohen_kappa(truth, b, SCALE)
    largest = 0.0
    for r in SCALE:
        for ga in SCALE:
            for gb in SCALE:
                if ga == gb:
                    continue
                ref, x, y = np.append(truth, r), np.append(a, ga), np.append(b, gb)
                moved = metrics.cohen_kappa(ref, x, SCALE) - metrics.cohen_kappa(ref, y, SCALE)
                largest = max(largest, abs(moved - base))
    assert stats.influence[0] == pytest.approx(40 * largest, rel=1e-10)


def test_the_disagreement_bound_is_the_exact_binomial_one() -> None:
    found = race_pairs.disagreement_bound(np.array([0, 3, 10]), np.array([50, 200, 10]), 0.01)
    expected = [scipy_stats.beta.ppf(0.99, 1, 50), scipy_stats.beta.ppf(0.99, 4, 197), 1.0]
    assert found == pytest.approx(expected, rel=1e-9)
    assert found[0] == pytest.approx(1 - 0.01 ** (1 / 50))  # no disagreement seen


def test_a_cells_own_jackknife_matches_a_plain_loop() -> None:
    rng = np.random.default_rng(6)
    truth = rng.integers(0, 4, 45).astype(float)
    judge = noisy_judge(rng, truth, 0.5)
    judge[[2, 7]] = np.nan
    inputs = race.race_inputs(truth, [judge], [1.0], SCALE)
    found = race_pairs.own_stats(inputs.reference, inputs.grades, np.array([30]), 4)
    keep = ~np.isnan(judge[:30])
    r, x = truth[:30][keep], judge[:30][keep]
    values = np.asarray(
        [metrics.cohen_kappa(np.delete(r, i), np.delete(x, i), SCALE) for i in range(r.size)]
    )
    n = r.size
    expected = math.sqrt((n - 1) / n * ((values - values.mean()) ** 2).sum())
    assert found.se[0] == pytest.approx(expected, rel=1e-10) and found.n_items[0] == n
    assert found.kappa[0] == pytest.approx(metrics.cohen_kappa(r, x, SCALE), abs=1e-12)


def test_more_items_grow_with_the_square_of_the_width_to_lose() -> None:
    # Δ = −0.01 on 400 items, half-width 0.06; not better by more than δ = 0.02 needs a
    # half-width of 0.03: (0.06 / 0.03)² = 4 times the items
    e = Evidence(1, None, 0, -0.01, -0.07, 0.05, 400)
    assert more_items(e, 0.02, not_cheaper=True) == pytest.approx(1600)
    # a cheaper cell must be shown more than δ below: 0.06 / (0.01 − 0.02) is out of reach
    assert more_items(e, 0.02, not_cheaper=False) == math.inf
    below = Evidence(1, None, 0, -0.05, -0.11, 0.01, 400)  # needs a half-width of 0.03
    assert more_items(below, 0.02, not_cheaper=False) == pytest.approx(1600)
    text = cannot_separate_text("A", "B", e, 1600)
    assert text.startswith("cannot separate A from B at this size (κ diff of B -0.010")
    assert text.endswith("about 1,200 more labelled items would")
    assert more_items(Evidence(1, None, 0, -0.01, -0.02, 0.0, 400), 0.02, not_cheaper=True) == 400


def test_the_race_warns_when_its_choice_may_be_no_better_than_chance() -> None:
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 4, 60).astype(float)
    coins = [rng.integers(0, 4, 60).astype(float) for _ in range(2)]  # κ about 0
    rule = RaceConfig(round_items=200)  # on 60 items: rounds of 25
    out = simulate_race(truth, coins, [1.0, 2.0], np.arange(60), rule, scale=SCALE)
    inputs = race.race_inputs(truth, coins, [1.0, 2.0], SCALE)
    found = chosen_kappa(inputs, out, rule)
    assert found.low < 0 < found.high and not found.above_chance
    lines = race_warnings(inputs, out, rule)
    assert any("may be no better than chance" in line and "60 items" in line for line in lines)
    # a judge far above chance draws no such warning
    good = [noisy_judge(rng, truth, 0.9), coins[0]]
    out = simulate_race(truth, good, [1.0, 2.0], np.arange(60), rule, scale=SCALE)
    inputs = race.race_inputs(truth, good, [1.0, 2.0], SCALE)
    assert out.chosen == 0
    assert not any("chance" in line for line in race_warnings(inputs, out, rule))


def test_a_version_1_round_reads_as_a_version_2_record() -> None:
    """A race started before the upgrade resumes: its rounds' ``usd`` read as ``list_usd``,
    their intervals as the items' own."""
    evidence = {"cell": 1, "reason": None, "comparator": 0, "difference": 0.1}
    evidence |= {"low": -0.1, "high": 0.3, "n_items": 40}
    old = {
        "schema_version": 1, "round": 1, "prefix": 40, "alpha_round": 0.01,
        "alpha_total": 0.01, "z": 2.5, "kappas": [0.5, None], "candidate": 0,
        "chosen": None, "ending": None, "active": [0, 1], "changes": [],
        "settled": [evidence], "judgments": 80, "usd": 0.25,
    }  # fmt: skip
    settings = {"alpha": 0.05, "delta": 0.02, "round_items": 40, "rho": 1.0, "max_usd": None}
    cells = [
        {"index": i, "name": n, "overrides": [], "run_dir": n, "usd_per_judgment": 0.001,
         "forecast_usd": 0.1}
        for i, n in enumerate("ab")
    ]  # fmt: skip
    first = {"schema_version": 1, "settings": settings, "seed": 0, "population": 100}
    first |= {"cells": cells, "rounds": [old], "spent_usd": 0.0, "outcome": None}
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "race.json").write_text(json.dumps(first))
        race = read_race_file(Path(folder))
        assert race is not None
        (found,) = race.rounds
        assert found.list_usd == 0.25 and found.target == "items"
        assert found.schema_version == 2 and math.isnan(found.kappas[1])
        write_race_file(Path(folder), race)  # written again, read again
        assert read_race_file(Path(folder)) == race


def test_a_dear_pair_the_items_cannot_settle_stops_saying_so() -> None:
    """With the population as the target, two judges of one skill (κ̂ 0.001 apart on 500
    items, disagreeing on about half) need far more than the 2,000 items to show the dearer
    one not better than the cheaper by more than δ = 0.02: it stops (``cannot separate at
    this size``) and the race ends choosing the cheaper, with no guarantee claimed and how
    many more items would separate them; with the items as the target it judges on."""
    rng = np.random.default_rng(1)
    n = 2000
    truth = rng.integers(0, 4, n).astype(float)
    cheap, dear = noisy_judge(rng, truth, 0.5), noisy_judge(rng, truth, 0.5)
    inputs = race.race_inputs(truth, [cheap, dear], [1.0, 3.0], SCALE)
    rule = RaceConfig(round_items=500)
    decision = race.decide_round(inputs, [500, 500], rule, 1)
    assert abs(decision.kappas[0] - decision.kappas[1]) < 0.002
    assert decision.ending == "cannot separate" and decision.chosen == 0
    assert [e.reason for e in decision.settled] == ["cannot separate at this size"]
    outcome = race.outcome_of(
        decision, (decision,), np.array([500, 500]), inputs.prices, ("cheap", "dear"), n
    )
    assert not outcome.guarantee
    lines = race_warnings(inputs, outcome, rule)
    assert lines[-1].startswith("cannot separate cheap from dear at this size")
    assert (
        race.decide_round(inputs, [500, 500], dataclasses.replace(rule, target="items"), 1).ending
        is None
    )
