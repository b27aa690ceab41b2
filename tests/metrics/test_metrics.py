"""Metrics against reference implementations (scikit-learn, krippendorff, scipy) and
hand-computed values."""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn import metrics as sk

from mmjudge import metrics as m

WEIGHTS = [None, "linear", "quadratic"]


def sk_kappa(a, b, **kwargs) -> float:
    """scikit-learn's κ on the items where both labels are present."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(sk.cohen_kappa_score(a[keep], b[keep], **kwargs))


def same(x: float, y: float) -> bool:
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)


# --------------------------------------------------------------------------- κ


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("weights", WEIGHTS)
def test_kappa_matches_sklearn_on_random_labels(seed: int, weights) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 300))
    a = rng.integers(0, 5, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(0, 5, n))
    assert same(m.cohen_kappa(a, b, weights=weights), sk_kappa(a, b, weights=weights))


@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize(
    ("a", "b", "labels"),
    [
        ([0, 1, 2, 3, 3, 2], [1, 1, 2, 4, 4, 0], None),  # 4 only in b, 3 only in a
        ([0, 0, 0, 2, 2], [0, 0, 2, 2, 2], None),  # middle grade 1 unused
        ([0, 0, 0, 2, 2], [0, 0, 2, 2, 2], [0, 1, 2]),  # ... but on the scale
        ([0, 1, 2, 3, 3, 2], [1, 1, 2, 0, 3, 0], [3, 1, 0, 2]),  # reordered labels
        ([0, 1, 2, 3, 3, 2], [1, 1, 2, 0, 3, 0], [1, 2]),  # subset: others dropped
        ([0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3, 4, 5, 6]),  # unused labels at the end
        ([1, 1, 1, 1], [1, 1, 1, 0], None),  # one rater constant
        ([2, 2, 2], [2, 2, 2], None),  # both constant: undefined
        ([0, 1], [1, 0], None),
    ],
)
def test_kappa_matches_sklearn_on_edge_cases(a, b, labels, weights) -> None:
    assert same(
        m.cohen_kappa(a, b, labels, weights), sk_kappa(a, b, labels=labels, weights=weights)
    )


def test_kappa_drops_items_with_a_missing_label() -> None:
    a = [0, 1, None, 2, 2, np.nan, 1]
    b = [0, 1, 2, None, 2, 1, 0]
    expected = sk.cohen_kappa_score([0, 1, 2, 1], [0, 1, 2, 0])
    assert m.cohen_kappa(a, b) == pytest.approx(expected)
    series = pd.Series(a, dtype="Int64")
    assert m.cohen_kappa(series, b) == pytest.approx(expected)


def test_kappa_undefined_values() -> None:
    assert math.isnan(m.cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert m.cohen_kappa([1, 1, 1], [1, 1, 1], undefined=1.0) == 1.0
    assert math.isnan(m.cohen_kappa([], []))
    assert math.isnan(m.cohen_kappa([1, None], [None, 2]))
    assert m.cohen_kappa([0, 1, 2], [0, 1, 2]) == 1.0


def test_kappa_rejects_unknown_weights_and_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="weights"):
        m.cohen_kappa([0, 1], [0, 1], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="differ in length"):
        m.cohen_kappa([0, 1], [0, 1, 2])


def test_binary_kappa_matches_sklearn_on_binarised_labels() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, 200)
    b = np.clip(a + rng.integers(-1, 2, 200), 0, 3)
    expected = sk.cohen_kappa_score(a >= 2, b >= 2)
    assert m.binary_kappa(a, b, relevant_from=2) == pytest.approx(expected)
    assert m.binarise([0, 1, 2, 3, None], 2).tolist()[:4] == [0.0, 0.0, 1.0, 1.0]
    assert math.isnan(m.binarise([None], 2)[0])


@pytest.mark.parametrize(
    ("grades", "expected"), [([0, 1, 2, 3], 2), ([0, 1, 2], 1), ([1, 2, 3, 4], 3)]
)
def test_default_relevance_threshold_is_upper_half(grades, expected) -> None:
    assert m.default_relevant_from(grades) == expected


# --------------------------------------------------------------------------- simple metrics


def test_accuracy_mae_and_confusion_matrix_by_hand() -> None:
    a = [0, 1, 2, 2, None, 1]
    b = [0, 2, 2, 0, 1, 1]
    assert m.accuracy(a, b) == pytest.approx(3 / 5)
    assert m.mean_absolute_error(a, b) == pytest.approx((0 + 1 + 0 + 2 + 0) / 5)
    assert m.confusion_matrix(a, b).tolist() == [[1, 0, 0], [0, 1, 1], [1, 0, 1]]
    assert m.confusion_matrix(a, b, [2, 1, 0, 3]).tolist() == [
        [1, 0, 1, 0],
        [1, 1, 0, 0],
        [0, 0, 1, 0],
        [0, 0, 0, 0],
    ]


def test_simple_metrics_match_sklearn() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    assert m.accuracy(a, b) == pytest.approx(sk.accuracy_score(a, b))
    assert m.mean_absolute_error(a, b) == pytest.approx(sk.mean_absolute_error(a, b))
    labels = [3, 0, 2, 1]
    assert (m.confusion_matrix(a, b, labels) == sk.confusion_matrix(a, b, labels=labels)).all()


def test_label_distribution() -> None:
    dist = m.label_distribution([0, 2, 2, None, 5], grades=[0, 1, 2, 3])
    assert dist == {0: 1, 1: 0, 2: 2, 3: 0, 5: 1}
    assert all(type(k) is int for k in dist)
    assert m.label_distribution([]) == {}


# --------------------------------------------------------------------------- Krippendorff α


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(4))
def test_alpha_matches_krippendorff_package(level, seed: int) -> None:
    rng = np.random.default_rng(seed)
    raters, items = int(rng.integers(2, 6)), int(rng.integers(10, 150))
    truth = rng.integers(0, 5, items)
    data = np.where(rng.random((raters, items)) < 0.7, truth, rng.integers(0, 5, (raters, items)))
    data = data.astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan  # missing ratings, some single-rated items
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert m.krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)


def test_alpha_on_a_textbook_style_matrix_with_gaps() -> None:
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    array = np.array(data, dtype=float)
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=array, level_of_measurement=level)
        assert m.krippendorff_alpha(data, level) == pytest.approx(expected, abs=1e-12)
    frame = pd.DataFrame(data, dtype="Int64")
    assert m.krippendorff_alpha(frame) == pytest.approx(
        krippendorff.alpha(reliability_data=array, level_of_measurement="ordinal")
    )


def test_alpha_undefined_cases_are_nan() -> None:
    assert math.isnan(m.krippendorff_alpha([[1, 1, 1], [1, 1, 1]]))  # one value only
    assert math.isnan(m.krippendorff_alpha([[1, None, 2], [None, 3, None]]))  # no pairs
    assert m.krippendorff_alpha([[0, 1, 2, 3], [0, 1, 2, 3]]) == pytest.approx(1.0)


# --------------------------------------------------------------------------- pairwise preference


def test_pairwise_preference_by_hand() -> None:
    # q1: human 2>1, 2>0, 1>0; the judge agrees, agrees, ties. q2: one reversed pair.
    # q3: humans tie, so no pair. The judge-only item (human None) pairs with nothing.
    queries = ["q1", "q1", "q1", "q2", "q2", "q3", "q3", "q1"]
    human = [2, 1, 0, 1, 0, 1, 1, None]
    judge = [2, 0, 0, 0, 1, 0, 2, 2]
    result = m.pairwise_preference_agreement(queries, human, judge)
    assert result.n_pairs == 4
    assert (result.concordant, result.discordant, result.judge_ties) == (2, 1, 1)
    assert result.agreement == pytest.approx((2 + 0.5) / 4)


def test_pairwise_preference_matches_brute_force() -> None:
    rng = np.random.default_rng(11)
    n = 300
    queries = rng.integers(0, 12, n)
    human = rng.integers(0, 4, n).astype(float)
    judge = rng.integers(0, 4, n).astype(float)
    judge[rng.random(n) < 0.1] = np.nan
    conc = disc = ties = 0
    for i, j in itertools.combinations(range(n), 2):
        if queries[i] != queries[j] or human[i] == human[j]:
            continue
        if np.isnan(judge[i]) or np.isnan(judge[j]):
            continue
        product = (human[i] - human[j]) * (judge[i] - judge[j])
        conc += product > 0
        disc += product < 0
        ties += product == 0
    result = m.pairwise_preference_agreement(queries, human, judge)
    assert (result.concordant, result.discordant, result.judge_ties) == (conc, disc, ties)
    assert result.agreement == pytest.approx((conc + ties / 2) / (conc + disc + ties))


def test_pairwise_preference_without_pairs_is_nan() -> None:
    result = m.pairwise_preference_agreement(["a", "b"], [1, 2], [1, 2])
    assert result.n_pairs == 0 and math.isnan(result.agreement)


# --------------------------------------------------------------------------- consensus


def test_consensus_odd_number_of_annotators_is_the_median() -> None:
    out = m.consensus({"a": [0, 3, 1, 2], "b": [2, 3, 1, 0], "c": [1, 0, 3, 0]})
    assert out.tolist() == [1.0, 3.0, 1.0, 0.0]


def test_consensus_even_number_takes_the_lower_middle_grade() -> None:
    out = m.consensus({"a": [0, 3, 1, 2], "b": [2, 3, 2, 2], "c": [1, 0, 3, 1], "d": [3, 1, 0, 2]})
    # sorted: [0,1,2,3] → 1; [0,1,3,3] → 1; [0,1,2,3] → 1; [1,2,2,2] → 2
    assert out.tolist() == [1.0, 1.0, 1.0, 2.0]
    assert m.consensus({"a": [0, 2], "b": [1, 3]}).tolist() == [0.0, 2.0]


def test_consensus_ignores_missing_grades_and_annotator_order() -> None:
    labels = {"a": [2, None, None, 1], "b": [0, 3, None, 2], "c": [1, None, None, 3]}
    out = m.consensus(labels)
    assert out[[0, 1, 3]].tolist() == [1.0, 3.0, 2.0]
    assert math.isnan(out[2])
    reordered = m.consensus(dict(reversed(list(labels.items()))))
    np.testing.assert_array_equal(out, reordered)
    with pytest.raises(ValueError, match="differ in length"):
        m.consensus({"a": [1, 2], "b": [1]})


# --------------------------------------------------------------------------- bootstrap


def clustered(n_queries: int = 30, per_query: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    queries = np.repeat([f"q{i}" for i in range(n_queries)], per_query)
    human = rng.integers(0, 4, queries.size).astype(float)
    noise = rng.random(queries.size) < 0.35
    judge = np.where(noise, rng.integers(0, 4, queries.size), human).astype(float)
    return queries, human, judge


def test_bootstrap_interval_contains_estimate_and_is_deterministic() -> None:
    queries, human, judge = clustered()
    first = m.bootstrap_ci(m.cohen_kappa, queries, human, judge, n_boot=500, seed=7)
    again = m.bootstrap_ci(m.cohen_kappa, queries, human, judge, n_boot=500, seed=7)
    other = m.bootstrap_ci(m.cohen_kappa, queries, human, judge, n_boot=500, seed=8)
    assert first == again
    assert (first.low, first.high) != (other.low, other.high)
    assert first.estimate == pytest.approx(m.cohen_kappa(human, judge))
    assert first.low < first.estimate < first.high
    assert first.n_queries == 30 and first.n_boot == 500 and first.n_undefined == 0


@pytest.mark.parametrize(
    "metric",
    [
        m.cohen_kappa,
        m.accuracy,
        m.mean_absolute_error,
        functools.partial(m.binary_kappa, relevant_from=2),
        functools.partial(m.cohen_kappa, labels=[0, 1, 2, 3], weights="quadratic"),
    ],
)
def test_fast_bootstrap_equals_recomputing_the_metric_per_resample(metric) -> None:
    queries, human, judge = clustered(n_queries=12, per_query=5)
    judge[3] = np.nan
    fast = m.bootstrap_ci(metric, queries, human, judge, n_boot=200, seed=3)
    slow = m.bootstrap_ci(lambda a, b: metric(a, b), queries, human, judge, n_boot=200, seed=3)
    assert fast.estimate == pytest.approx(slow.estimate, abs=1e-12)
    assert fast.low == pytest.approx(slow.low, abs=1e-12)
    assert fast.high == pytest.approx(slow.high, abs=1e-12)


def test_bootstrap_resamples_queries_not_rows() -> None:
    # Ten queries of 50 results: in half of them the judge always agrees, in the other half
    # never. Rows are far from independent, so the query bootstrap must be much wider than
    # a row bootstrap (each row its own cluster).
    queries = np.repeat(np.arange(10), 50)
    human = np.tile([0, 1], 250).astype(float)
    agrees = np.repeat(np.arange(10) % 2 == 0, 50)
    judge = np.where(agrees, human, 1 - human)
    by_query = m.bootstrap_ci(m.accuracy, queries, human, judge, n_boot=1000)
    by_row = m.bootstrap_ci(m.accuracy, np.arange(500), human, judge, n_boot=1000)
    assert by_query.estimate == by_row.estimate == pytest.approx(0.5)
    assert by_query.n_queries == 10 and by_row.n_queries == 500
    assert (by_query.high - by_query.low) > 3 * (by_row.high - by_row.low)


def test_bootstrap_of_pairwise_preference_uses_the_query_ids() -> None:
    queries, human, judge = clustered()
    result = m.bootstrap_ci(m.pairwise_preference_agreement, queries, human, judge, n_boot=300)
    expected = m.pairwise_preference_agreement(queries, human, judge).agreement
    assert result.estimate == pytest.approx(expected)
    assert result.low < result.estimate < result.high


def test_bootstrap_counts_undefined_resamples() -> None:
    # One query where both raters give a single grade: κ is undefined in resamples made of it.
    queries = ["a"] * 4 + ["b"] * 4
    human = [1, 1, 1, 1, 0, 1, 2, 0]
    judge = [1, 1, 1, 1, 0, 1, 1, 0]
    result = m.bootstrap_ci(m.cohen_kappa, queries, human, judge, n_boot=400)
    assert 0 < result.n_undefined < 400
    assert math.isfinite(result.low) and math.isfinite(result.high)


def test_bootstrap_validates_arguments() -> None:
    with pytest.raises(ValueError, match="level"):
        m.bootstrap_ci(m.accuracy, [1], [1], [1], level=1.5)
    with pytest.raises(ValueError, match="query_ids"):
        m.bootstrap_ci(m.accuracy, [1, 2], [1], [1])


def test_paired_bootstrap_separates_a_better_judge() -> None:
    queries, human, _ = clustered(n_queries=40, per_query=10, seed=2)
    rng = np.random.default_rng(9)
    good = np.where(rng.random(human.size) < 0.1, rng.integers(0, 4, human.size), human)
    noise = np.where(rng.random(human.size) < 0.8, rng.integers(0, 4, human.size), human)
    result = m.paired_bootstrap(m.cohen_kappa, queries, human, good, noise, n_boot=1000)
    assert result.difference == pytest.approx(
        m.cohen_kappa(human, good) - m.cohen_kappa(human, noise)
    )
    assert result.difference > 0 and result.low > 0
    assert result.p_value < 0.01
    swapped = m.paired_bootstrap(m.cohen_kappa, queries, human, noise, good, n_boot=1000)
    assert swapped.difference == pytest.approx(-result.difference)
    assert swapped.p_value < 0.01


def test_paired_bootstrap_of_identical_judges_is_not_significant() -> None:
    queries, human, judge = clustered()
    result = m.paired_bootstrap(m.cohen_kappa, queries, human, judge, judge.copy())
    assert result.difference == 0 and result.low == result.high == 0
    assert result.p_value == 1.0


def test_paired_bootstrap_scores_both_judges_on_the_same_items() -> None:
    queries, human, judge = clustered(n_queries=10, per_query=6)
    other = judge.copy()
    other[:5] = np.nan
    result = m.paired_bootstrap(m.accuracy, queries, human, judge, other, n_boot=50)
    assert result.estimate_a == pytest.approx(m.accuracy(human[5:], judge[5:]))
    assert result.estimate_b == result.estimate_a
    slow = m.paired_bootstrap(
        lambda a, b: m.accuracy(a, b), queries, human, judge, other, n_boot=50
    )
    assert slow.difference == 0 and slow.p_value == 1.0


# --------------------------------------------------------------------------- rankings


@pytest.mark.parametrize("seed", range(5))
def test_rank_correlations_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, 40).astype(float)  # plenty of ties
    y = x + rng.integers(-2, 3, 40)
    assert m.kendall_tau(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert m.spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    z = rng.random(25)
    w = rng.random(25)
    assert m.kendall_tau(z, w) == pytest.approx(stats.kendalltau(z, w).statistic, abs=1e-12)
    assert m.spearman_rho(z, w) == pytest.approx(stats.spearmanr(z, w).statistic, abs=1e-12)


def test_rank_correlations_of_constant_scores_are_nan() -> None:
    assert math.isnan(m.kendall_tau([1, 1, 1], [1, 2, 3]))
    assert math.isnan(m.spearman_rho([1, 1, 1], [1, 2, 3]))
    assert math.isnan(m.kendall_tau([1], [2]))


def test_rbo_by_hand() -> None:
    # depths 1..4: overlaps 0, 2, 2, 4; with p = 0.5:
    # (1 - p)/p · Σ (X_d/d) p^d + (X_4/4) p^4 = (0 + 1/4 + 1/12 + 1/16) + 1/16 = 11/24
    assert m.rank_biased_overlap("abcd", "badc", p=0.5) == pytest.approx(11 / 24)
    # uneven: S = ab, L = acb; X = 1, 1, 2; Σ X_d/d p^d = 1/2 + 1/8 + 1/12;
    # tail term X_s (d - s)/(s d) p^d at d = 3: 1/48; last term (1/3 + 1/2) / 8
    assert m.rank_biased_overlap("ab", "acb", p=0.5) == pytest.approx(5 / 6)
    assert m.rank_biased_overlap("acb", "ab", p=0.5) == pytest.approx(5 / 6)
    assert m.rank_biased_overlap(["x", "y", "z"], ["x", "y", "z"]) == pytest.approx(1.0)
    assert m.rank_biased_overlap(["x", "y"], ["u", "v"]) == 0.0
    with pytest.raises(ValueError, match="repeat"):
        m.rank_biased_overlap("aab", "ab")


def test_system_ranking_agreement_on_a_tiny_collection(tmp_path) -> None:
    from mmjudge.data.qrels import read_run

    human = {"q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 2}, "q2": {"d5": 2, "d6": 0, "d7": 1}}
    judge = {"q1": {"d1": 0, "d2": 2, "d3": 2, "d4": 0}, "q2": {"d5": 0, "d6": 2, "d7": 2}}
    rankings = {
        "A": {"q1": ["d1", "d4", "d2", "d3"], "q2": ["d5", "d7", "d6"]},
        "B": {"q1": ["d3", "d2"], "q2": ["d6", "d7"]},
        "C": {"q1": ["d1", "d3"], "q2": ["d6"]},
        "D": {"q1": ["d2"], "q2": ["d5", "d6"]},
    }
    runs = {}
    for name, by_query in rankings.items():
        path = tmp_path / f"{name}.run"
        path.write_text(
            "".join(
                f"{q} Q0 {doc} {rank} {10 - rank} {name}\n"
                for q, docs in by_query.items()
                for rank, doc in enumerate(docs, start=1)
            )
        )
        runs[name] = read_run(path)

    result = m.system_ranking_agreement(human, judge, runs, relevant_from=2)
    assert set(result) == {"nDCG@10", "P(rel=2)@10"}
    precision = result["P(rel=2)@10"]
    # P@10 by hand: grade ≥ 2 documents in the top ten, over ten, averaged over q1 and q2
    assert precision.human_scores == pytest.approx({"A": 0.15, "B": 0.0, "C": 0.05, "D": 0.05})
    assert precision.judge_scores == pytest.approx({"A": 0.2, "B": 0.2, "C": 0.1, "D": 0.1})
    h = [precision.human_scores[s] for s in "ABCD"]
    j = [precision.judge_scores[s] for s in "ABCD"]
    assert precision.kendall_tau == pytest.approx(stats.kendalltau(h, j).statistic)
    assert precision.spearman_rho == pytest.approx(stats.spearmanr(h, j).statistic)
    assert precision.rbo == pytest.approx(m.rank_biased_overlap("ACDB", "ABCD", 0.9))

    same_qrels = m.system_ranking_agreement(human, human, runs)
    for agreement in same_qrels.values():
        assert agreement.kendall_tau == pytest.approx(1.0)
        assert agreement.spearman_rho == pytest.approx(1.0)
        assert agreement.rbo == pytest.approx(1.0)


def test_bootstrap_many_equals_one_bootstrap_per_metric() -> None:
    rng = np.random.default_rng(12)
    queries = np.repeat(np.arange(30), 7)
    human = rng.integers(0, 4, queries.size).astype(float)
    judge = np.where(rng.random(queries.size) < 0.6, human, rng.integers(0, 4, queries.size))
    fns = [
        functools.partial(m.cohen_kappa, labels=(0, 1, 2, 3), weights=w)
        for w in (None, "linear", "quadratic")
    ] + [m.accuracy]
    many = m.bootstrap_ci_many(fns, queries, human, judge, n_boot=300, seed=4)
    one = [m.bootstrap_ci(fn, queries, human, judge, n_boot=300, seed=4) for fn in fns]
    assert many == one
    slow = [lambda a, b: m.accuracy(a, b)]  # no fast path: evaluated one by one
    assert m.bootstrap_ci_many(slow, queries, human, judge, n_boot=50) == [
        m.bootstrap_ci(slow[0], queries, human, judge, n_boot=50)
    ]
