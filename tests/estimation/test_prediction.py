"""Prediction-powered estimates (mmjudge.estimation.prediction): equal to ppi_py's own
functions, exact where the quantity is linear, the nDCG@10 values equal to ir_measures', and
intervals that cover the truth on the real LLMJudge label files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmjudge.data.qrels import Qrels, read_qrels
from mmjudge.estimation import estimates, prediction, small_sample
from mmjudge.metrics.ranking import system_ranking_agreement

ppi_py = pytest.importorskip("ppi_py", reason="needs the estimate extra (ppi-python)")

LLMJUDGE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "llmjudge"
GRADES = [0, 1, 2, 3]


def systems_from(labels: dict[str, Qrels], seed: int) -> dict[str, dict[str, dict[str, float]]]:
    """Retrieval runs made from label files: each ranks a query's documents by one file's
    grade plus seeded noise (the LLMJudge data has no system runs of its own)."""
    rng = np.random.default_rng(seed)
    return {
        f"by-{name}": {
            query: {doc: float(min(max(g, 0), 3)) + 1.5 * rng.random() for doc, g in docs.items()}
            for query, docs in qrels.items()
        }
        for name, qrels in labels.items()
    }


@pytest.fixture(scope="module")
def llmjudge() -> tuple[Qrels, dict[str, Qrels]]:
    human = LLMJUDGE / "test_qrels_human.txt"
    runs = sorted((LLMJUDGE / "runs").glob("*.txt"))
    if not human.is_file() or not runs:
        pytest.skip(f"the LLMJudge label files are not at {LLMJUDGE} (../shared/data)")
    return read_qrels(human), {p.stem: read_qrels(p) for p in runs}


def real_setup(llmjudge, judge: str = "Olz-gpt4o"):
    human, judges = llmjudge
    items = prediction.shared_items(human, judges[judge])
    items = items._replace(judge=np.clip(items.judge, 0, 3))
    others = {name: q for name, q in judges.items() if name != judge}
    systems = systems_from(others, seed=1)
    return items, systems, prediction.prepare(items, systems, GRADES, 2)


TINY_HUMAN = {
    "q1": {"a": 3, "b": 0, "c": 2, "d": 1, "e": 0},
    "q2": {"f": 1, "g": 2, "h": 0, "i": 3},
}
TINY_JUDGE = {
    "q1": {"a": 2, "b": 1, "c": 2, "d": 1, "e": 0},
    "q2": {"f": 2, "g": 2, "h": 0, "i": 3},
}
TINY_RUNS = {
    "sysA": {"q1": {"a": 5, "b": 4, "x": 3, "c": 2}, "q2": {"i": 2, "h": 1}},
    "sysB": {"q1": {"e": 5, "d": 4, "c": 3}, "q2": {"f": 3, "g": 2, "i": 1}},
}


def test_exact_values_equal_ir_measures() -> None:
    items = prediction.shared_items(TINY_HUMAN, TINY_JUDGE)
    design = prediction.prepare(items, TINY_RUNS, GRADES, 2)
    for labels, grades in ((TINY_HUMAN, items.human), (TINY_JUDGE, items.judge)):
        exact = prediction.exact_values(design, grades)
        reference = system_ranking_agreement(labels, labels, TINY_RUNS, relevant_from=2)
        for system in TINY_RUNS:
            ndcg, p = prediction.measure_names(system)
            assert exact[ndcg] == pytest.approx(
                reference["nDCG@10"].human_scores[system], abs=1e-12
            )
            assert exact[p] == pytest.approx(
                reference["P(rel=2)@10"].human_scores[system], abs=1e-12
            )
    assert prediction.exact_values(design, items.human)["mean grade"] == pytest.approx(12 / 9)


def test_real_exact_values_equal_ir_measures(llmjudge) -> None:
    human, _ = llmjudge
    items, systems, design = real_setup(llmjudge)
    exact = prediction.exact_values(design, items.human)
    shared = {q: {d: human[q][d] for d in docs} for q, docs in human.items()}
    reference = system_ranking_agreement(shared, shared, systems, relevant_from=2)
    for system in systems:
        ndcg, p = prediction.measure_names(system)
        assert exact[ndcg] == pytest.approx(reference["nDCG@10"].human_scores[system], abs=1e-12)
        assert exact[p] == pytest.approx(reference["P(rel=2)@10"].human_scores[system], abs=1e-12)


def test_columns_are_exact_at_their_own_point() -> None:
    """With every item labelled and the judge right, the pilot is the human labels and the
    linearised nDCG (and the linear quantities) equal the exact values."""
    items = prediction.shared_items(TINY_HUMAN, TINY_HUMAN)
    design = prediction.prepare(items, TINY_RUNS, GRADES, 2)
    everything = np.ones(items.human.size, dtype=bool)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, everything)
    )
    linear = columns.values(items.human).mean(axis=0) + columns.offset
    exact = prediction.exact_values(design, items.human)
    for k, name in enumerate(columns.names):
        assert linear[k] == pytest.approx(exact[name], abs=1e-12), name


def test_linear_quantities_are_exact_under_any_labels(llmjudge) -> None:
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 300, seed=4)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    exact = prediction.exact_values(design, items.human)
    means = columns.values(items.human).mean(axis=0) + columns.offset
    for k, name in enumerate(columns.names):
        if not name.startswith("nDCG"):
            assert means[k] == pytest.approx(exact[name], abs=1e-12), name


def _with_pseudo_items(y, yhat, rest, bounds, lam=None):
    """(estimate, low, high) of one column from ppi_py's estimator with the two pseudo-items
    as rows of weight z²/2 (``small_sample.weighted_ppi``, itself checked against ppi_py in
    test_small_sample): human values at the range's ends, judge value the judge's mean."""
    z = 1.959963984540054
    judge_mean = (yhat.sum() + rest.sum()) / (yhat.size + rest.size)
    rows_y = np.append(y, bounds)[:, None]
    rows_yhat = np.append(yhat, [judge_mean, judge_mean])[:, None]
    weights = np.append(np.ones(y.size), [z * z / 2, z * z / 2])
    found = small_sample.weighted_ppi(rows_y, rows_yhat, rest[:, None], weights, lam)
    point, se = found.point.item(), found.se.item()
    return np.array([point, point - z * se, point + z * se])


def test_estimates_equal_ppi_py(llmjudge) -> None:
    """400 labelled items: each system column is ppi_py's PPI++ and classical interval to
    1e-9; the mean grade and the share relevant are the same estimator with the two
    pseudo-items (small_sample), within 5% of the interval's width of ppi_py's own (the
    pseudo-items' weight fades as 1/n)."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 400, seed=7)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    estimates = prediction.estimate_columns(columns, items, labelled)
    y = columns.values(items.human[labelled], labelled)
    yhat = columns.values(items.judge[labelled], labelled)
    rest = columns.values(items.judge[~labelled], ~labelled)
    for k, e in enumerate(estimates):
        shift = columns.offset[k]
        point = ppi_py.ppi_mean_pointestimate(y[:, k], yhat[:, k], rest[:, k])
        low, high = ppi_py.ppi_mean_ci(y[:, k], yhat[:, k], rest[:, k], alpha=0.05)
        c_low, c_high = ppi_py.classical_mean_ci(y[:, k], alpha=0.05)
        # cut to the values the quantity can take (nDCG and P in [0, 1])
        bounds = small_sample.value_range(e.name, columns.grades)
        plain = np.array([point.item(), low.item(), high.item(), c_low, c_high]) + shift
        expected = plain
        at_lam = ppi_py.ppi_mean_pointestimate(y[:, k], yhat[:, k], rest[:, k], lam=e.lam)
        if e.name in small_sample.MEANS:
            tuned = _with_pseudo_items(y[:, k], yhat[:, k], rest[:, k], bounds)
            alone = _with_pseudo_items(y[:, k], yhat[:, k], rest[:, k], bounds, np.zeros(1))
            # the estimate is ppi_py's at the weight tuned with the pseudo-items, which
            # make the intervals
            expected = np.concatenate([[at_lam.item()], tuned[1:], alone[1:]])
            assert expected == pytest.approx(plain, abs=0.05 * (high - low).item())
        assert e.human_only[0] == pytest.approx(y[:, k].mean() + shift, abs=1e-9)
        assert np.clip(at_lam.item() + shift, *bounds) == pytest.approx(e.ppi[0], abs=1e-9)
        cut = np.clip(expected, *bounds)
        assert e.ppi == pytest.approx(tuple(cut[:3]), abs=1e-9)
        assert e.human_only[1:] == pytest.approx(tuple(cut[3:]), abs=1e-9)
        assert e.clipped == bool((cut != expected).any())
        assert 0 <= e.lam <= 1
    assert estimates[0].judge_only == pytest.approx(items.judge.mean(), abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("measure", ["nDCG@10", "P@10"])
def test_coverage_on_llmjudge(llmjudge, measure) -> None:
    """1,000 random labelled subsets of the 4,423 items, of the smallest size the docs and
    the command claim for the measure (``estimates.COVERED_FROM``: 500 for both): the 95%
    intervals of the mean grade and of every system's ``measure`` hold the value on all human
    labels in at least 94% of draws, and are narrower than the human-only ones (the judge
    correlates, r≈0.5)."""
    items, systems, design = real_setup(llmjudge)
    assert np.corrcoef(items.human, items.judge)[0, 1] > 0.4
    truth = prediction.exact_values(design, items.human)
    draws, n = 1000, estimates.COVERED_FROM[measure]
    covered: dict[str, int] = {}
    ppi_width: dict[str, list[float]] = {}
    human_width: dict[str, list[float]] = {}
    for seed in range(draws):
        labelled = prediction.draw_labelled(items.human.size, n, seed)
        for e in prediction.estimate(design, items, labelled):
            covered[e.name] = covered.get(e.name, 0) + (e.ppi[1] <= truth[e.name] <= e.ppi[2])
            ppi_width.setdefault(e.name, []).append(e.ppi[2] - e.ppi[1])
            human_width.setdefault(e.name, []).append(e.human_only[2] - e.human_only[1])
    checked = ["mean grade"] + [f"{measure} {s}" for s in systems]
    for name in checked:
        assert covered[name] / draws >= 0.94, (name, covered[name] / draws)
        assert np.median(ppi_width[name]) < np.median(human_width[name]), name
