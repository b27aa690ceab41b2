"""One definition of a judge's scores: κ, α and intervals on the items both graded."""

from __future__ import annotations

import json
import warnings

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from mmjudge import metrics
from mmjudge.metrics import scoring


def sk_kappa(a, b, **kwargs) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(a[keep], b[keep], **kwargs))


def k_alpha(*rows: np.ndarray) -> float:
    return float(
        krippendorff.alpha(
            reliability_data=np.vstack(rows).astype(float), level_of_measurement="ordinal"
        )
    )


def humans_who_agree(n: int, seed: int, agreement: float = 0.9) -> dict[str, np.ndarray]:
    """Three annotators who give the true grade with probability ``agreement``."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n)
    out = {}
    for name in ("ann", "bob", "cy"):
        noise = rng.integers(0, 4, n)
        out[name] = np.where(rng.random(n) < agreement, truth, noise).astype(float)
    return out


# --------------------------------------------------------------------------- α


def test_a_random_judge_has_alpha_near_zero_where_humans_agree() -> None:
    n = 3000
    humans = humans_who_agree(n, seed=1)
    judge = np.random.default_rng(2).integers(0, 4, n).astype(float)
    queries = np.repeat(np.arange(n // 10), 10)
    summary = scoring.agreement_summary(judge, humans, grades=[0, 1, 2, 3], query_ids=queries)

    assert abs(summary.value("kappa")) < 0.05
    assert abs(summary.value("alpha")) < 0.05  # the judge against the humans: chance level
    assert summary.value("alpha_humans") > 0.7  # the humans agree with one another...
    assert summary.value("alpha_pooled") > 0.3  # ...which is all a pooled α would show
    assert summary.value("alpha_pooled") < summary.value("alpha_humans")  # the judge pulls it down

    reference = metrics.consensus(humans)
    assert summary.value("alpha") == pytest.approx(k_alpha(reference, judge), abs=1e-12)
    assert summary.value("alpha_humans") == pytest.approx(k_alpha(*humans.values()), abs=1e-12)
    assert summary.value("alpha_pooled") == pytest.approx(
        k_alpha(judge, *(humans[k] for k in sorted(humans))), abs=1e-12
    )


def test_alpha_is_on_the_items_of_kappa_failed_answers_left_out() -> None:
    n = 400
    humans = humans_who_agree(n, seed=3, agreement=0.7)
    reference = metrics.consensus(humans)
    rng = np.random.default_rng(4)
    judge = np.where(rng.random(n) < 0.6, reference, rng.integers(0, 4, n)).astype(float)
    judge[::7] = np.nan  # unparseable answers
    queries = np.repeat(np.arange(40), 10)
    summary = scoring.agreement_summary(judge, humans, grades=[0, 1, 2, 3], query_ids=queries)

    scored = ~np.isnan(judge)
    assert summary.n_scored == int(scored.sum()) and summary.n_unparseable == n - scored.sum()
    assert summary.value("kappa") == pytest.approx(sk_kappa(reference[scored], judge[scored]))
    assert summary.value("alpha") == pytest.approx(
        k_alpha(reference[scored], judge[scored]), abs=1e-12
    )
    pooled = np.vstack([judge, *(humans[k] for k in sorted(humans))])[:, scored]
    assert summary.value("alpha_pooled") == pytest.approx(k_alpha(pooled), abs=1e-12)
    only_humans = np.vstack([humans[k] for k in sorted(humans)])[:, scored]
    assert summary.value("alpha_humans") == pytest.approx(k_alpha(only_humans), abs=1e-12)


# --------------------------------------------------------------------------- summary block


def test_agreement_summary_against_the_individual_metrics() -> None:
    rng = np.random.default_rng(4)
    n = 120
    queries = np.repeat(np.arange(12), 10)
    humans = {name: rng.integers(0, 4, n).astype(float) for name in ("ann", "bob", "cy")}
    humans["bob"][:3] = np.nan
    judge = np.where(rng.random(n) < 0.5, humans["ann"], rng.integers(0, 4, n)).astype(float)
    judge[10:16] = np.nan
    summary = scoring.agreement_summary(
        judge, humans, grades=[0, 1, 2, 3], query_ids=queries, n_boot=200
    )
    json.dumps(summary.to_json(), allow_nan=False)  # JSON-ready, no NaN

    reference = metrics.consensus(humans)
    assert summary.n == n and summary.n_unparseable == 6
    assert summary.n_scored == n - 6 and summary.n_queries == 12
    assert summary.unparseable_rate == pytest.approx(6 / n)
    assert summary.relevant_from == 2
    assert summary.value("kappa") == pytest.approx(sk_kappa(reference, judge))
    assert summary.value("kappa_quadratic") == pytest.approx(
        sk_kappa(reference, judge, weights="quadratic")
    )
    assert summary.value("kappa_binary") == pytest.approx(metrics.binary_kappa(reference, judge, 2))
    assert summary.value("accuracy") == pytest.approx(metrics.accuracy(reference, judge))
    assert summary.value("mae") == pytest.approx(metrics.mean_absolute_error(reference, judge))
    assert summary.pairwise["n_pairs"] > 0
    assert np.sum(summary.confusion_matrix) == n - 6
    assert sum(summary.label_distribution["judge"].values()) == n - 6
    assert set(summary.by_rater["kappa_by_annotator"]) == {"ann", "bob", "cy"}
    assert summary.by_rater["kappa_by_annotator"]["bob"] == pytest.approx(
        sk_kappa(humans["bob"], judge)
    )
    assert set(summary.by_rater["human_human_kappa"]) == {"ann vs bob", "ann vs cy", "bob vs cy"}
    assert summary.by_rater["human_human_kappa"]["ann vs cy"] == pytest.approx(
        sk_kappa(humans["ann"], humans["cy"])
    )
    # the interval is the query bootstrap of κ on the scored items, seed 0
    scored = ~np.isnan(judge)
    ci = metrics.bootstrap_ci(
        scoring.kappa_metric([0, 1, 2, 3]),
        queries[scored],
        reference[scored],
        judge[scored],
        n_boot=200,
        seed=0,
    )
    assert summary.intervals["kappa"] == {
        "estimate": ci.estimate,
        "low": ci.low,
        "high": ci.high,
    }
    assert summary.bootstrap == {"n_boot": 200, "seed": 0, "level": 0.95, "resampled": "queries"}


def test_agreement_summary_undefined_values_are_none() -> None:
    summary = scoring.agreement_summary([None, None], {"a": [1, 1]}, grades=[0, 1])
    assert summary.n_unparseable == 2 and summary.unparseable_rate == 1.0
    assert (
        summary.value("kappa") is None
        and summary.value("accuracy") is None
        and summary.value("alpha") is None
    )
    assert summary.value("alpha_humans") is None  # one annotator: no humans-only α
    assert summary.pairwise is None and summary.by_rater["human_human_kappa"] == {}
    assert summary.intervals["kappa"] == {"estimate": None, "low": None, "high": None}


# --------------------------------------------------------------------------- intervals


def _toy(seed: int = 0, n_queries: int = 25, per_query: int = 8):
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    queries = np.array([f"q{i // per_query:03d}" for i in range(n)], dtype=object)
    reference = rng.integers(0, 3, n).astype(float)
    judge = np.where(rng.random(n) < 0.6, reference, rng.integers(0, 3, n)).astype(float)
    return queries, reference, judge


def test_an_interval_does_not_depend_on_the_order_of_rows() -> None:
    queries, reference, judge = _toy()
    first = scoring.score_judge(queries, reference, judge, [0, 1, 2], n_boot=300)
    order = np.random.default_rng(9).permutation(queries.size)
    shuffled = scoring.score_judge(
        queries[order], reference[order], judge[order], [0, 1, 2], n_boot=300
    )
    assert shuffled == first
    assert first.kappa.low < first.kappa.estimate < first.kappa.high


def test_queries_without_a_scored_item_take_no_part() -> None:
    queries, reference, judge = _toy()
    base = scoring.score_judge(queries, reference, judge, [0, 1, 2], n_boot=300)
    # a query whose every answer failed adds nothing, not an empty resampling unit
    extra_q = np.concatenate([queries, np.array(["q999"] * 8, dtype=object)])
    extra_ref = np.concatenate([reference, np.ones(8)])
    extra_judge = np.concatenate([judge, np.full(8, np.nan)])
    padded = scoring.score_judge(extra_q, extra_ref, extra_judge, [0, 1, 2], n_boot=300)
    assert padded == base and padded.n_queries == 25


def test_off_scale_grades_leave_their_items_out_and_are_counted() -> None:
    queries, reference, judge = _toy()
    judge[:3] = 5
    score = scoring.score_judge(queries, reference, judge, [0, 1, 2], n_boot=0)
    assert score.n_off_scale == 3 and score.n_items == queries.size - 3
    assert score.accuracy == pytest.approx(metrics.accuracy(reference[3:], judge[3:]))
    assert np.isnan(score.kappa.low)  # n_boot=0: no interval


# --------------------------------------------------------------------------- comparisons


def test_comparison_is_the_paired_bootstrap_on_the_shared_items() -> None:
    queries, reference, a = _toy(1)
    _, _, b = _toy(2)
    b[::5] = np.nan
    a[1::9] = np.nan
    found = scoring.compare_judges(queries, reference, a, b, [0, 1, 2], n_boot=300)
    assert found is not None
    shared = ~(np.isnan(a) | np.isnan(b))
    paired = metrics.paired_bootstrap(
        scoring.kappa_metric([0, 1, 2]),
        queries[shared],
        reference[shared],
        a[shared],
        b[shared],
        n_boot=300,
        seed=0,
    )
    assert found.n_items == int(shared.sum()) and found.n_queries == 25
    assert (found.difference, found.low, found.high, found.p_value) == (
        paired.difference,
        paired.low,
        paired.high,
        paired.p_value,
    )
    assert found.kappa_a == pytest.approx(sk_kappa(reference[shared], a[shared]))
    assert scoring.compare_judges(queries, reference, a, np.full(a.size, np.nan), [0, 1, 2]) is None
