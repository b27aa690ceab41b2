"""Label planning (mmjudge.estimation.planning): the analytic standard error of κ against
statsmodels and the bootstrap, and the planner's predicted half-width against the one
realised when that many labels are drawn from held-back data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmjudge.estimation import planning
from mmjudge.metrics import scoring


def expand(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.nonzero(table)
    counts = table[rows, cols]
    return np.repeat(rows, counts).astype(float), np.repeat(cols, counts).astype(float)


@pytest.mark.parametrize(
    "table",
    [
        np.array([[20, 5, 1], [4, 30, 6], [2, 3, 29]]),
        np.array([[50, 3, 0, 0], [10, 12, 4, 1], [2, 8, 15, 6], [0, 1, 7, 22]]),
    ],
)
def test_standard_error_equals_statsmodels(table) -> None:
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater")
    reference = inter_rater.cohens_kappa(table).std_kappa
    x, y = expand(table)
    grades = list(range(table.shape[0]))
    assert planning.kappa_standard_error(x, y, grades) == pytest.approx(reference, abs=1e-12)


def test_standard_error_matches_the_bootstrap_for_independent_items() -> None:
    """With one item per query, the report's query bootstrap resamples items: its half-width
    and 1.96 analytic standard errors agree."""
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 2000).astype(float)
    judge = np.where(rng.random(2000) < 0.6, human, rng.integers(0, 4, 2000)).astype(float)
    score = scoring.score_judge(np.arange(2000), human, judge, [0, 1, 2, 3], n_boot=2000)
    boot = (score.kappa.high - score.kappa.low) / 2
    analytic = planning.Z95 * planning.kappa_standard_error(human, judge, [0, 1, 2, 3])
    assert analytic == pytest.approx(boot, rel=0.05)


def test_items_scale_with_the_square_of_the_width_ratio() -> None:
    assert planning.items_for_half_width(400, 0.1, 0.05) == pytest.approx(1600)
    assert math.isnan(planning.items_for_half_width(400, math.nan, 0.05))
    assert planning.extra_labels(1600.2, 400) == 1201
    assert planning.extra_labels(100, 400) == 0
    assert planning.cost(10, 0.5) == 5.0 and planning.cost(10, None) is None


def labelled_pool(seed: int, n_queries: int = 1500):
    """Queries of 5–24 items with their own grade mix and a judge whose accuracy differs by
    query (so the queries cluster, as real ones do)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 25, n_queries)
    queries = np.repeat(np.arange(n_queries), sizes)
    mix = rng.dirichlet([3, 2, 1.5, 1], n_queries)
    cumulative = mix.cumsum(axis=1)[queries]
    human = (rng.random(queries.size)[:, None] > cumulative).sum(axis=1).astype(float)
    accuracy = rng.beta(4, 2, n_queries)[queries]
    noise = rng.integers(0, 4, queries.size)
    judge = np.where(rng.random(queries.size) < accuracy, human, noise).astype(float)
    return queries, human, judge


PILOT, TARGET = 200, 0.025


def test_predicted_half_width_is_realised_on_held_back_queries() -> None:
    """A pilot of 200 queries plans κ to ±0.025; drawing the planned number of queries from
    the 1,300 held back gives about that half-width (eight pilots)."""
    queries, human, judge = labelled_pool(0)
    target, ratios = TARGET, []
    for rep in range(8):
        rng = np.random.default_rng(100 + rep)
        order = rng.permutation(1500)
        pilot = np.isin(queries, order[:PILOT])
        found = planning.plan_kappa(
            "j", queries[pilot], human[pilot], judge[pilot], [0, 1, 2, 3], target, n_boot=4000
        )
        assert found.design_effect > 1  # the queries cluster
        per_query = found.n_items / found.n_queries
        drawn = rng.choice(order[PILOT:], math.ceil(found.needed / per_query), replace=False)
        held = np.isin(queries, drawn)
        score = scoring.score_judge(
            queries[held], human[held], judge[held], [0, 1, 2, 3], n_boot=4000
        )
        realised = (score.kappa.high - score.kappa.low) / 2
        ratios.append(target / realised)
    # one pilot's own interval is an estimate: each is within 20%, their mean within 5%
    # (measured: 0.84 to 1.15, mean 1.01; over 40 pilots 0.79 to 1.20, mean 0.99, sd 0.08,
    # and 0.81 to 1.17 against the mean of 20 held-back draws: the spread is the pilot's
    # own noise, not a bias; benchmarks/plan_accuracy.py)
    assert all(abs(r - 1) <= 0.20 for r in ratios), str([round(r, 3) for r in ratios])
    assert np.mean(ratios) == pytest.approx(1, abs=0.05)


def test_separation_needs_more_items_the_closer_the_judges() -> None:
    found = scoring.PairedComparison(0.7, 0.65, 0.05, 0.0, 0.1, 0.2, 400, 40)
    plan = planning.plan_separation("a", "b", found)
    assert plan is not None and not plan.separated
    assert plan.needed == pytest.approx(400 * (0.05 / 0.05) ** 2)
    wide = scoring.PairedComparison(0.7, 0.68, 0.02, -0.03, 0.07, 0.5, 400, 40)
    assert planning.plan_separation("a", "b", wide).needed == pytest.approx(
        400 * (0.05 / 0.02) ** 2
    )
    assert planning.plan_separation("a", "b", None) is None


def test_budget_split_is_ppi_mean_power() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(3)
    human = rng.integers(0, 4, 400).astype(float)
    judge = np.where(rng.random(400) < 0.7, human, rng.integers(0, 4, 400)).astype(float)
    split = planning.budget_split(
        human, judge, budget=200.0, cost_per_label=0.4, judge_cost_per_label=0.001
    )
    reference = ppi_py.ppi_mean_power(human, judge, cost_Y=0.4, cost_Yhat=0.001, budget=200.0)
    assert (split.human_labels, split.judge_only_labels) == (reference["n"], reference["N"])
    assert split.effective_n == reference["effective_n"] and split.cost == reference["cost"]
    assert split.human_only_n == 500 and split.effective_n > 500
    assert split.correlation == pytest.approx(np.corrcoef(human, judge)[0, 1])


def test_a_free_judge_labels_every_item() -> None:
    rng = np.random.default_rng(3)
    human = rng.integers(0, 4, 400).astype(float)
    judge = np.where(rng.random(400) < 0.7, human, rng.integers(0, 4, 400)).astype(float)
    split = planning.budget_split(
        human, judge, budget=100.0, cost_per_label=0.5, judge_cost_per_label=0.0
    )
    rho = np.corrcoef(human, judge)[0, 1]
    assert split.human_labels == 200 and split.judge_only_labels is None
    assert split.effective_n == pytest.approx(200 / (1 - rho**2))
    capped = planning.budget_split(
        human, judge, budget=100.0, cost_per_label=0.5, judge_cost_per_label=0.0, pool=1000
    )
    assert capped.human_labels + (capped.judge_only_labels or 0) <= 1000
    assert capped.effective_n < split.effective_n


def test_small_pilots_are_widened_for_their_own_uncertainty() -> None:
    """Pilots of 8 whole queries plan κ for the half-width that 40 held-back queries
    realise. From the pilot's own half-width most ask too few; widened to its upper 80%
    bound (:func:`planning.pilot_widening`) about one in five does (measured on the LLMJudge
    files: 76% and 25% of 280 pilots; benchmarks/plan_accuracy.py --llmjudge 8)."""
    queries, human, judge = labelled_pool(1, n_queries=400)
    grades, too_few = [0, 1, 2, 3], {"central": 0, "widened": 0}
    pilots = 40
    for rep in range(pilots):
        rng = np.random.default_rng(rep)
        order = rng.permutation(400)
        held = np.isin(queries, order[8:48])
        score = scoring.score_judge(queries[held], human[held], judge[held], grades, n_boot=500)
        realised = (score.kappa.high - score.kappa.low) / 2
        pilot = np.isin(queries, order[:8])
        found = planning.plan_kappa(
            "j", queries[pilot], human[pilot], judge[pilot], grades, realised, n_boot=500
        )
        per_query = found.n_items / found.n_queries
        too_few["central"] += found.needed / per_query < 40
        too_few["widened"] += found.queries_needed < 40
    assert too_few["central"] / pilots > 0.5, too_few
    assert too_few["widened"] / pilots <= 0.35, too_few


def test_a_target_below_what_the_pilots_queries_reach_needs_more_queries() -> None:
    """All items of the pilot's queries labelled: nothing narrower than the widened pilot
    half-width is reachable in them, and the plan says how many queries it takes."""
    queries, human, judge = labelled_pool(2, n_queries=25)
    found = planning.plan_kappa(
        "j", queries, human, judge, [0, 1, 2, 3], 0.05, items_there=queries.size, pool_queries=25
    )
    assert found.reachable_half_width == pytest.approx(
        found.half_width * planning.pilot_widening(25)
    )
    assert found.needs_more_queries(0.05) and not found.needs_more_queries(1.0)
    assert found.queries_needed > 25
    half = planning.plan_kappa(
        "j", queries, human, judge, [0, 1, 2, 3], 0.05, items_there=10 * queries.size
    )
    assert half.reachable_half_width < found.reachable_half_width
