"""The means' intervals with two pseudo-items (mmjudge.estimation.small_sample): ppi_py's
estimator with the pseudo-items as weighted rows, Agresti–Coull's interval at weight 0, and
no collapsed, zero-width or point intervals from a handful of labels (issue 46)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from mmjudge.estimation import estimates, prediction, small_sample
from tests.estimation.test_prediction import llmjudge, real_setup  # noqa: F401

ppi_py = pytest.importorskip("ppi_py", reason="needs the estimate extra (ppi-python)")

GRADES = [0, 1, 2, 3]
Z = 1.959963984540054


def _data(n: int, big_n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two columns (a 0-3 grade and a 0/1 share) of a judge that follows the humans loosely."""
    rng = np.random.default_rng(seed)
    human = rng.integers(0, 4, n + big_n).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, human.size), 0, 3)
    both = [np.column_stack([g, (g >= 2).astype(float)]) for g in (human, judge)]
    return both[0][:n], both[1][:n], both[1][n:]


def test_unit_weights_are_ppi_py() -> None:
    """With every row weighted 1 the estimator is ppi_py's PPI++ (weight tuned per column),
    and at a given weight ppi_py's interval at that weight, to 1e-12."""
    y, yhat, rest = _data(40, 300, seed=1)
    found = small_sample.weighted_ppi(y, yhat, rest, np.ones(40))
    point = ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam_optim_mode="element")
    low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam_optim_mode="element")
    assert found.point == pytest.approx(np.ravel(point), abs=1e-12)
    assert found.point - Z * found.se == pytest.approx(np.ravel(low), abs=1e-12)
    assert found.point + Z * found.se == pytest.approx(np.ravel(high), abs=1e-12)
    assert found.lam == pytest.approx(prediction.tuned_weights(y, yhat, rest), abs=1e-12)
    fixed = small_sample.weighted_ppi(y, yhat, rest, np.ones(40), lam=np.array([0.3, 0.0]))
    for k, lam in enumerate((0.3, 0.0)):
        low, high = ppi_py.ppi_mean_ci(y[:, k], yhat[:, k], rest[:, k], alpha=0.05, lam=lam)
        assert fixed.point[k] - Z * fixed.se[k] == pytest.approx(low.item(), abs=1e-12)
        assert fixed.point[k] + Z * fixed.se[k] == pytest.approx(high.item(), abs=1e-12)


def test_whole_number_weights_are_rows_repeated() -> None:
    """A row of weight 3 counts as three equal rows: ppi_py on the rows repeated."""
    y, yhat, rest = _data(12, 200, seed=2)
    weights = np.array([1, 1, 2, 1, 3, 1, 1, 1, 2, 1, 1, 4], dtype=float)
    found = small_sample.weighted_ppi(y, yhat, rest, weights)
    rows = np.repeat(np.arange(12), weights.astype(int))
    point = ppi_py.ppi_mean_pointestimate(y[rows], yhat[rows], rest, lam_optim_mode="element")
    low, high = ppi_py.ppi_mean_ci(y[rows], yhat[rows], rest, alpha=0.05, lam_optim_mode="element")
    assert found.point == pytest.approx(np.ravel(point), abs=1e-12)
    assert found.point - Z * found.se == pytest.approx(np.ravel(low), abs=1e-12)
    assert found.point + Z * found.se == pytest.approx(np.ravel(high), abs=1e-12)


@pytest.mark.parametrize(("count", "n"), [(0, 10), (3, 10), (10, 10), (1, 2), (7, 40)])
def test_human_only_share_is_agresti_coull(count: int, n: int) -> None:
    """At weight 0 a 0/1 column with the two pseudo-items gives Agresti and Coull's interval
    (statsmodels' ``proportion_confint(method="agresti_coull")`` before it cuts to [0, 1])."""
    y = np.zeros((n, 1))
    y[:count] = 1.0
    yhat, rest = np.zeros((n, 1)), np.tile([0.0, 1.0], 50)[:, None]
    found = small_sample.with_pseudo_items(y, yhat, rest, (np.zeros(1), np.ones(1)), 0.05)
    centre = (count + Z**2 / 2) / (n + Z**2)
    half = Z * math.sqrt(centre * (1 - centre) / (n + Z**2))
    assert found.human.point[0] == pytest.approx(centre, abs=1e-12)
    assert Z * found.human.se[0] == pytest.approx(half, abs=1e-12)
    low, high = proportion_confint(count, n, alpha=0.05, method="agresti_coull")
    assert (max(centre - half, 0.0), min(centre + half, 1.0)) == pytest.approx((low, high))


def _population(size: int = 2000, seed: int = 0) -> prediction.ItemLabels:
    """A collection of ``size`` items with human grades like the LLMJudge files' (mean about
    0.9, about 27% relevant) and a judge grading one step too low, so it rarely calls an
    item relevant."""
    rng = np.random.default_rng(seed)
    human = rng.choice(4, size=size, p=[0.45, 0.28, 0.185, 0.085]).astype(float)
    judge = np.maximum(human - 1, 0)
    judge[(human == 3) & (rng.random(size) < 0.75)] = 1  # relevant by the judge: about 2%
    return prediction.ItemLabels(
        [f"q{i % 5}" for i in range(size)], [f"d{i}" for i in range(size)], human, judge
    )


def _estimate(items: prediction.ItemLabels, labelled: np.ndarray) -> dict[str, object]:
    design = prediction.prepare(items, None, GRADES, 2)
    return {e.name: e for e in prediction.estimate(design, items, labelled)}


def test_a_judge_agreeing_with_every_labelled_item_does_not_collapse() -> None:
    """The issue's draw: 10 labelled items, one relevant, and the judge agreeing with each
    on relevance, a judge that calls 2% relevant where 27% are. Before: the share relevant
    0.020 [0.015, 0.025], effective n capped at every item (PPI++ put the whole weight on
    the judge and estimated the rectifier's variance as zero). Now the interval is as wide
    as ten items allow, holds the truth, and is worth about the ten labels, not the
    collection."""
    items = _population()
    share_true = float((items.human >= 2).mean())
    judge_share = float((items.judge >= 2).mean())
    assert share_true > 0.25 and judge_share < 0.03
    relevant = np.flatnonzero((items.human >= 2) & (items.judge >= 2))[:1]
    agree = np.flatnonzero((items.human < 2) & (items.judge < 2))[:9]
    labelled = np.zeros(items.human.size, dtype=bool)
    labelled[np.concatenate([relevant, agree])] = True
    share = _estimate(items, labelled)["share relevant"]
    low, high = share.ppi[1], share.ppi[2]  # type: ignore[attr-defined]
    human_width = share.human_only[2] - share.human_only[1]  # type: ignore[attr-defined]
    assert low <= share_true <= high
    assert high - low > 0.5 * human_width > 0.1
    assert not share.capped and share.effective_n < 30  # type: ignore[attr-defined]


def test_a_judge_off_by_one_everywhere_gives_no_point_interval() -> None:
    """The issue's zero-width mean grade: 3 labelled items with human grades 0, 2, 0 and
    judge grades 1, 3, 1 (the judge one grade high on each, so the rectifier did not vary).
    Before: PPI++ lay wholly below 0 and was cut to 0.0 [0.0, 0.0]. Now it has width, is
    inside the scale (or, were it outside, shown so and uncut) and holds the truth."""
    items = _population(seed=3)
    human = items.human.copy()
    judge = items.judge.copy()
    human[:3], judge[:3] = [0, 2, 0], [1, 3, 1]
    items = items._replace(human=human, judge=judge)
    labelled = np.zeros(human.size, dtype=bool)
    labelled[:3] = True
    mean = _estimate(items, labelled)["mean grade"]
    low, high = mean.ppi[1], mean.ppi[2]  # type: ignore[attr-defined]
    assert high - low > 0.5
    assert low <= human.mean() <= high
    assert not mean.outside  # type: ignore[attr-defined]


@pytest.mark.slow
def test_no_draw_gives_an_interval_of_no_width() -> None:
    """2 to 5 labels of judges that agree, disagree or ignore the humans: both means always
    have an interval of positive width, inside the quantity's range or marked outside; the
    effective n is defined and never above the items."""
    items = _population(size=300, seed=4)
    judges = {
        "low": items.judge,
        "same": items.human,
        "inverted": 3 - items.human,
        "constant": np.zeros_like(items.human),
    }
    for judge in judges.values():
        these = items._replace(judge=judge)
        design = prediction.prepare(these, None, GRADES, 2)
        columns = prediction.build_columns(
            design, prediction.pilot(design, judge, judge, judge >= 0)
        )
        for n in (2, 3, 5):
            for seed in range(30):
                mask = prediction.draw_labelled(300, n, seed)
                for e in prediction.estimate_columns(columns, these, mask):
                    top = 3.0 if e.name == "mean grade" else 1.0
                    for low, high in (e.ppi[1:], e.human_only[1:]):
                        assert high > low, (n, seed, e)
                        assert e.outside or (low >= 0 and high <= top), (n, seed, e)
                    assert 0 < e.effective_n <= 300, (n, seed, e)


def test_effective_n_of_a_random_judge_is_the_labels() -> None:
    """A judge grading at random (the human grades shuffled) adds nothing: at 20 labels its
    effective n is the 20 labels give or take one (the median over draws), since both
    standard errors are made the same way. Before: a Wilson interval against a t-widened
    PPI++ one, about -5 labels for the share relevant."""
    items = _population(size=1000, seed=5)
    shuffled = items._replace(judge=np.random.default_rng(6).permutation(items.human))
    design = prediction.prepare(shuffled, None, GRADES, 2)
    gains: dict[str, list[float]] = {}
    columns = prediction.build_columns(
        design, prediction.pilot(design, *shuffled[2:], np.ones(1000, bool))
    )
    for seed in range(40):
        mask = prediction.draw_labelled(1000, 20, seed)
        for e in prediction.estimate_columns(columns, shuffled, mask):
            gains.setdefault(e.name, []).append(e.effective_n - 20)
    for name, found in gains.items():
        assert abs(float(np.median(found))) < 1.0, (name, np.median(found))


def test_fit_cuts_an_overlapping_interval_and_keeps_one_outside() -> None:
    """Cut to the range where the interval overlaps it; left whole and marked where it lies
    outside, or touches the range at one end only (cut, it would be a point); an interval of
    no width is no interval."""
    assert small_sample.fit((0.1, -0.2, 0.4), 0.0, 3.0) == ((0.1, 0.0, 0.4), True, False, False)
    assert small_sample.fit((-0.5, -0.8, -0.2), 0.0, 3.0) == (
        (-0.5, -0.8, -0.2),
        False,
        True,
        False,
    )
    assert small_sample.fit((-0.2, -0.4, 0.0), 0.0, 3.0).outside
    gone = small_sample.fit((0.0, 0.0, 0.0), 0.0, 1.0)
    assert gone.no_width and math.isnan(gone.values[1]) and gone.values[0] == 0.0
    assert small_sample.fit((0.5, 0.2, 0.7), 0.0, 1.0) == ((0.5, 0.2, 0.7), False, False, False)


def test_the_notes_name_what_was_outside_or_left_out() -> None:
    """The lines above the table name an interval left uncut outside the range and one not
    given for lack of variation, each once."""
    base = prediction.Estimate("mean grade", (1.0, 0.5, 1.5), 1.0, (1.0, 0.5, 1.5), 0.5, 10)
    result = estimates.HeldBack(
        100,
        10,
        [
            base._replace(name="mean grade", ppi=(-0.5, -0.9, -0.1), outside=True),
            base._replace(name="P@10 sysA", ppi=(0.0, math.nan, math.nan), no_width=True),
        ],
        None,
        [],
    )
    lines = estimates.notes(result)
    assert [line.split(":")[0] for line in lines if not line.startswith("caution")] == [
        "outside",
        "no interval",
    ]
    assert "outside: mean grade: an interval lies wholly outside" in lines[-2]
    assert "no interval: P@10 sysA: " in lines[-1]


@pytest.mark.slow
@pytest.mark.parametrize("judge", ["Olz-gpt4o", "TREMA-direct"])
def test_few_label_coverage_on_llmjudge(llmjudge, judge) -> None:  # noqa: F811
    """1,000 random draws of 2, 5, 10 and 20 of the 4,423 LLMJudge items (the draws of
    ``benchmarks/estimate_few_labels.py``): PPI++'s 95% intervals of the mean grade and the
    share relevant hold the value on all human labels in at least 90% of draws at 2 and 5
    labels and 93% from 10, and none collapses onto the judge (under a quarter of the
    human-only width) or has no width. Before: 0.89-0.91 for the share at 5-20 labels,
    and intervals collapsed onto the judge in up to 5% of draws."""
    items, _, design = real_setup(llmjudge, judge)
    plain = prediction.prepare(items, None, GRADES, 2)
    every = np.ones(items.human.size, dtype=bool)
    columns = prediction.build_columns(
        plain, prediction.pilot(plain, items.human, items.judge, every)
    )
    truth = prediction.exact_values(plain, items.human)
    for n, bar in ((2, 0.90), (5, 0.90), (10, 0.93), (20, 0.93)):
        held = dict.fromkeys(small_sample.MEANS, 0)
        for seed in range(1000):
            mask = prediction.draw_labelled(items.human.size, n, seed)
            for e in prediction.estimate_columns(columns, items, mask, queries=design.codes):
                ppi, human = e.ppi[2] - e.ppi[1], e.human_only[2] - e.human_only[1]
                assert ppi > human / 4 and human > 0, (n, seed, e)
                held[e.name] += e.ppi[1] <= truth[e.name] <= e.ppi[2]
        for name, count in held.items():
            assert count / 1000 >= bar, (judge, n, name, count)


def test_the_caution_follows_how_the_labels_were_drawn() -> None:
    """Drawn with equal chances the means count the pseudo-items: the caution only below 5
    labels, saying to read PPI++; drawn with unequal chances (``--sample``) they keep
    ppi_py's normal intervals, and the caution below 200 says to read them as a guide."""
    base = prediction.Estimate("mean grade", (1.0, 0.5, 1.5), 1.0, (1.0, 0.5, 1.5), 0.5, 4)
    few = estimates.HeldBack(100, 4, [base], None, [])
    assert estimates.coverage_caution(few) == (
        "caution (4 labelled): for the mean grade and share relevant read PPI++: below 5 "
        "labels their human-only 95% intervals held the truth in as few as 92% of simulated "
        "draws on real labels, PPI++'s in at least 93%"
    )
    assert estimates.coverage_caution(few._replace(labelled=5)) is None
    weighted = few._replace(labelled=40, weighted=True)
    assert estimates.coverage_caution(weighted) == (
        "caution (40 labelled): with labels drawn with unequal chances the mean grade's and "
        "share relevant's 95% intervals are ppi-python's normal ones, which held the truth in "
        "fewer than 94% of simulated draws on real labels below 200 labels: read them as a "
        "guide"
    )
    assert estimates.coverage_caution(weighted._replace(labelled=200)) is None
