"""Label planning (mmjudge.estimation.planning): the analytic standard error of κ against
statsmodels and the bootstrap, the planner's predicted half-width against the one realised
when that many labels are drawn from held-back data, and small pilots: widened for their own
uncertainty, refused when too small, never certain from a spread of zero."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmjudge.estimation import pilot, planning
from mmjudge.metrics import scoring
from mmjudge.metrics.jackknife import kappa_jackknife


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
    """A pilot of 200 queries plans κ to ±0.025 from its own spread (``central``); drawing
    the planned number of queries from the 1,300 held back gives about that half-width
    (eight pilots; the plan's interval, jackknife over queries with t)."""
    queries, human, judge = labelled_pool(0)
    target, ratios = TARGET, []
    for rep in range(8):
        rng = np.random.default_rng(100 + rep)
        order = rng.permutation(1500)
        chosen = np.isin(queries, order[:PILOT])
        found = planning.plan_kappa(
            "j", queries[chosen], human[chosen], judge[chosen], [0, 1, 2, 3], target, n_boot=0
        )
        assert found.design_effect > 1  # the queries cluster
        per_query = found.n_items / found.n_queries
        drawn = rng.choice(order[PILOT:], math.ceil(found.needed / per_query), replace=False)
        held = np.isin(queries, drawn)
        realised = kappa_jackknife(queries[held], human[held], judge[held], [0, 1, 2, 3])
        ratios.append(target / realised.half_width)
    # one pilot's own interval is an estimate: each is within 20%, their mean within 5%
    # (measured: over 40 pilots 0.83 to 1.18, mean 0.995, sd 0.084, and 0.82 to 1.16
    # against the mean of 20 held-back draws: the spread is the pilot's own noise, not a
    # bias; benchmarks/plan_accuracy.py)
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


@pytest.mark.slow
@pytest.mark.parametrize("pilot_queries", [4, 8])
def test_small_pilots_are_widened_for_their_own_uncertainty(pilot_queries) -> None:
    """Pilots of 4 and 8 whole queries plan κ for the half-width that 40 held-back queries
    realise (the plan's interval). From the pilot's own spread about half ask too few; from
    its upper 95% bound, with the queries' effective degrees of freedom, few do (measured on
    the LLMJudge files: 8% of 4-query and 4% of 8-query pilots, where the bootstrap's
    widening asked too few in 38% and 25%; benchmarks/plan_accuracy.py --llmjudge)."""
    queries, human, judge = labelled_pool(1, n_queries=400)
    grades, too_few = [0, 1, 2, 3], {"central": 0, "plan": 0}
    pilots = 60
    for rep in range(pilots):
        rng = np.random.default_rng(rep)
        order = rng.permutation(400)
        held = np.isin(queries, order[pilot_queries : pilot_queries + 40])
        realised = kappa_jackknife(queries[held], human[held], judge[held], grades).half_width
        chosen = np.isin(queries, order[:pilot_queries])
        found = planning.plan_kappa(
            "j", queries[chosen], human[chosen], judge[chosen], grades, realised, n_boot=0
        )
        per_query = found.n_items / found.n_queries
        too_few["central"] += found.needed / per_query < 40
        too_few["plan"] += found.queries_needed < 40
    # measured: central 56% and 54%, the plan 2% and 5% (of 100 pilots)
    assert too_few["central"] / pilots > 0.4, too_few
    assert too_few["plan"] / pilots <= 0.10, too_few


def test_a_target_below_what_the_pilots_queries_reach_needs_more_queries() -> None:
    """All items of the pilot's queries labelled: nothing narrower than the pilot's own
    half-width is reachable in them, and the plan says how many queries it takes."""
    queries, human, judge = labelled_pool(2, n_queries=25)
    found = planning.plan_kappa(
        "j", queries, human, judge, [0, 1, 2, 3], 0.05, items_there=queries.size, pool_queries=25
    )
    assert found.reachable_half_width == pytest.approx(found.half_width)
    assert found.needs_more_queries(0.05) and not found.needs_more_queries(1.0)
    assert found.queries_needed > 25
    half = planning.plan_kappa(
        "j", queries, human, judge, [0, 1, 2, 3], 0.05, items_there=10 * queries.size
    )
    assert half.reachable_half_width < found.reachable_half_width


def _even_pool(seed: int, n_queries: int = 30, size: int = 40):
    """``n_queries`` queries of ``size`` items each, judge accuracy differing by query."""
    rng = np.random.default_rng(seed)
    queries = np.repeat(np.arange(n_queries), size)
    cumulative = rng.dirichlet([3, 2, 1.5, 1], n_queries).cumsum(axis=1)[queries]
    human = (rng.random(queries.size)[:, None] > cumulative).sum(axis=1).astype(float)
    accuracy = rng.beta(4, 2, n_queries)[queries]
    noise = rng.integers(0, 4, queries.size)
    return queries, human, np.where(rng.random(queries.size) < accuracy, human, noise)


@pytest.mark.slow
def test_what_every_item_gives_is_the_central_estimate_not_the_widened_one() -> None:
    """A pilot labels half the items of its 30 queries; the target is 15% above the
    half-width every item of those queries gives. "Needs more queries" must then be rare:
    it is said when the target is below what the pilot estimates every item would give
    (measured: 3% of 60 pilots; from the widened half-width, as before, most of them)."""
    says, pilots = 0, 30
    for seed in range(pilots):
        queries, human, judge = _even_pool(seed)
        every = kappa_jackknife(queries, human, judge, [0, 1, 2, 3]).half_width
        half = np.random.default_rng(1000 + seed).random(queries.size) < 0.5
        found = planning.plan_kappa(
            "j",
            queries[half],
            human[half],
            judge[half],
            [0, 1, 2, 3],
            1.15 * every,
            n_boot=0,
            items_there=queries.size,
        )
        assert found.reachable_half_width < found.half_width  # more items do narrow it
        says += found.needs_more_queries(1.15 * every)
    assert says / pilots <= 0.10, says


def test_a_pilot_too_small_is_refused_not_planned() -> None:
    """5 labels in one query, 20 in 2 (which planned 28,000 items before), and grades that
    never vary: each refused in one line that says what pilot would do."""
    grades = [0, 1, 2]
    with pytest.raises(pilot.PilotTooSmall, match="5 human labels in 1 query"):
        planning.plan_kappa("j", ["q"] * 5, [0, 1, 2, 1, 0], [0, 1, 2, 2, 0], grades, 0.05)
    two = np.repeat(["q1", "q2"], 10)
    labels = np.tile([0, 1, 2, 1, 0], 4).astype(float)
    with pytest.raises(pilot.PilotTooSmall, match="20 human labels in 2 queries"):
        planning.plan_kappa("j", two, labels, labels[::-1], grades, 0.05)
    five = np.repeat([f"q{i}" for i in range(5)], 6)
    with pytest.raises(pilot.PilotTooSmall, match="every one of the pilot's 30 human labels is 1"):
        planning.plan_kappa("j", five, np.ones(30), np.ones(30), grades, 0.05)


def test_a_judge_that_agrees_everywhere_is_not_known_to_zero_width() -> None:
    """κ is 1 whichever query is left out: a standard error of 0 would plan no labels at
    all and show "± 0.000"; the pilot is refused instead."""
    five = np.repeat([f"q{i}" for i in range(5)], 6)
    human = np.tile([0, 1, 2], 10).astype(float)
    with pytest.raises(pilot.PilotTooSmall, match=r"κ is 1\.000 whichever of the pilot's 5"):
        planning.plan_kappa("j", five, human, human, [0, 1, 2], 0.05)


def test_judges_that_grade_alike_are_never_told_apart() -> None:
    """Identical grades: a difference of 0 with no interval, never "already told apart"."""
    five = np.repeat([f"q{i}" for i in range(5)], 6)
    human = np.tile([0, 1, 2], 10).astype(float)
    judge = np.roll(human, 1)
    found = planning.plan_separation_clustered("a", "b", five, human, judge, judge, [0, 1, 2])
    assert found.difference == 0 and not found.separated
    assert math.isnan(found.half_width) and math.isnan(found.needed_upper)


def test_a_bootstrap_comparison_without_width_says_nothing() -> None:
    """Every resample alike (5 labels in one query): the interval has no width, and the
    report's line must not call the judges told apart ("Δκ 0.238 ± 0.000 … already told
    apart at 95%")."""
    flat = scoring.PairedComparison(0.7, 0.462, 0.238, 0.238, 0.238, 0.0, 5, 1)
    assert planning.plan_separation("a", "b", flat) is None
    # judges that graded alike: still said to be beyond any number of labels
    same = scoring.PairedComparison(0.7, 0.7, 0.0, 0.0, 0.0, 1.0, 240, 30)
    found = planning.plan_separation("a", "b", same)
    assert found is not None and not found.separated and math.isnan(found.needed)


@pytest.mark.slow
def test_four_query_pilots_seldom_tell_equal_judges_apart() -> None:
    """Two judges of one accuracy (so no pilot should tell them apart): from 4-query pilots
    the paired jackknife says "told apart" about as rarely as a 95% interval may, where the
    report's paired bootstrap says it far more often."""
    queries, human, judge = labelled_pool(3, n_queries=400)
    rng = np.random.default_rng(9)
    twin = np.where(rng.random(human.size) < 0.7, human, rng.integers(0, 4, human.size))
    judge = np.where(rng.random(human.size) < 0.7, human, rng.integers(0, 4, human.size))
    apart = {"jackknife": 0, "bootstrap": 0}
    pilots = 100
    for rep in range(pilots):
        chosen = np.isin(queries, np.random.default_rng(rep).choice(400, 4, replace=False))
        q, h, a, b = queries[chosen], human[chosen], judge[chosen], twin[chosen]
        found = planning.plan_separation_clustered("a", "b", q, h, a, b, [0, 1, 2, 3])
        apart["jackknife"] += found.separated
        boot = scoring.compare_judges(q, h, a, b, [0, 1, 2, 3], n_boot=200, seed=rep)
        plan = planning.plan_separation("a", "b", boot)
        apart["bootstrap"] += plan is not None and plan.separated
    assert apart["jackknife"] / pilots <= 0.08, apart
    assert apart["bootstrap"] > apart["jackknife"], apart


def test_budget_split_of_a_pilot_too_small_is_refused_in_one_line() -> None:
    """Two labels: ppi_py's optimum is undefined (it raised ``ValueError: cannot convert
    float NaN to integer``); refused, saying what pilot would do."""
    with pytest.raises(pilot.PilotTooSmall, match="no budget split from 2 paired grades"):
        planning.budget_split(
            [1.0, 2.0], [1.0, 1.0], budget=100.0, cost_per_label=0.5, judge_cost_per_label=1e-5
        )


def test_a_judge_whose_grades_never_vary_leaves_the_budget_to_people() -> None:
    human = np.tile([0.0, 1.0, 2.0, 3.0], 10)
    split = planning.budget_split(
        human, np.ones(40), budget=100.0, cost_per_label=0.5, judge_cost_per_label=1e-5
    )
    assert (split.human_labels, split.judge_only_labels, split.effective_n) == (200, 0, 200)
    assert math.isnan(split.correlation)
