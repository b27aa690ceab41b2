"""Items to label next (mmjudge.estimation.next_items): inclusion probabilities, the
systematic draw that honours them, and estimates weighted by them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmjudge.data.qrels import read_qrels
from mmjudge.estimation import next_items, prediction

LLMJUDGE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "llmjudge"


def test_probabilities_are_proportional_capped_and_sum_to_n() -> None:
    pi = next_items.inclusion_probabilities([1, 1, 2, 10, 1, 1], 3)
    assert pi.sum() == pytest.approx(3)
    assert pi[3] == 1.0  # would be above 1: certain
    rest = pi[[0, 1, 2, 4, 5]]
    assert rest == pytest.approx(2 * np.array([1, 1, 2, 1, 1]) / 6)
    with pytest.raises(ValueError):
        next_items.inclusion_probabilities([1, 2], 3)


def test_systematic_draw_has_n_items_at_their_probabilities() -> None:
    rng = np.random.default_rng(0)
    pi = next_items.inclusion_probabilities(rng.integers(1, 4, 30), 8)
    counts = np.zeros(30)
    draws = 4000
    for seed in range(draws):
        picked = next_items.systematic_sample(pi, seed)
        assert picked.size == 8
        counts[picked] += 1
    standard_error = np.sqrt(pi * (1 - pi) / draws) + 1e-9
    assert np.all(np.abs(counts / draws - pi) <= 4 * standard_error + 1e-3)


def test_draw_next_favours_disagreement() -> None:
    keys = [(f"q{i % 5}", f"d{i}") for i in range(50)]
    grades = np.zeros((50, 3))
    grades[:10, 1] = 2  # judges split on the first ten items
    drawn = next_items.draw_next(keys, grades, 10, seed=1)
    assert len(drawn.keys) == 10 and drawn.pool == 50
    pi = dict(zip(drawn.keys, drawn.probabilities, strict=True))
    split = [p for k, p in pi.items() if int(k[1][1:]) < 10]
    agreed = [p for k, p in pi.items() if int(k[1][1:]) >= 10]
    if split and agreed:
        assert min(split) == pytest.approx(2 * max(agreed))


def llmjudge_items():
    human = LLMJUDGE / "test_qrels_human.txt"
    if not human.is_file():
        pytest.skip(f"the LLMJudge label files are not at {LLMJUDGE} (../shared/data)")
    names = ("Olz-gpt4o", "RMITIR-llama70B", "TREMA-direct")
    judges = {name: read_qrels(LLMJUDGE / "runs" / f"{name}.txt") for name in names}
    items = prediction.shared_items(read_qrels(human), judges["Olz-gpt4o"])
    others = np.column_stack(
        [
            [
                float(min(max(judges[name][q][d], 0), 3))
                for q, d in zip(items.queries, items.docs, strict=True)
            ]
            for name in ("RMITIR-llama70B", "TREMA-direct")
        ]
    )
    return items._replace(judge=np.clip(items.judge, 0, 3)), others


@pytest.mark.slow
def test_weighted_estimates_equal_ppi_py() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    items, others = llmjudge_items()
    keys = list(zip(items.queries, items.docs, strict=True))
    drawn = next_items.draw_next(keys, np.column_stack([items.judge, others]), 400, seed=2)
    row = {key: i for i, key in enumerate(keys)}
    labelled = np.zeros(len(keys), dtype=bool)
    pi = np.zeros(len(keys))
    for key, p in zip(drawn.keys, drawn.probabilities, strict=True):
        labelled[row[key]], pi[row[key]] = True, p
    assert len(set(drawn.probabilities)) > 1  # not an equal-chance draw
    design = prediction.prepare(items, None, [0, 1, 2, 3], 2)
    (mean, share) = prediction.estimate(design, items, labelled, probabilities=pi[labelled])
    w = 1 / pi[labelled]
    for k, e in enumerate((mean, share)):
        f = (lambda g: g) if k == 0 else (lambda g: (g >= 2).astype(float))
        y, yhat, everything = f(items.human[labelled]), f(items.judge[labelled]), f(items.judge)
        point = ppi_py.ppi_mean_pointestimate(y, yhat, everything, w=w)
        low, high = ppi_py.ppi_mean_ci(y, yhat, everything, alpha=0.05, w=w)
        assert e.ppi == pytest.approx((point.item(), low.item(), high.item()), abs=1e-9)
        c_low, c_high = ppi_py.ppi_mean_ci(y, yhat, everything, alpha=0.05, lam=0, w=w)
        assert e.human_only[1:] == pytest.approx((c_low.item(), c_high.item()), abs=1e-9)
        tuned = ppi_py.ppi_mean_pointestimate(y, yhat, everything, lam=e.lam, w=w)
        assert tuned.item() == pytest.approx(e.ppi[0], abs=1e-9)


@pytest.mark.slow
def test_weighted_estimates_cover_the_truth() -> None:
    """500 items drawn by disagreement, 400 times: the weighted PPI++ interval of the mean
    grade holds the value on all human labels in at least 94% of draws, and the estimates
    average to it; the unweighted mean of the drawn items would be biased."""
    items, others = llmjudge_items()
    keys = list(zip(items.queries, items.docs, strict=True))
    row = {key: i for i, key in enumerate(keys)}
    grades = np.column_stack([items.judge, others])
    design = prediction.prepare(items, None, [0, 1, 2, 3], 2)
    truth = items.human.mean()
    hits, points, naive = 0, [], []
    for seed in range(400):
        drawn = next_items.draw_next(keys, grades, 500, seed)
        labelled = np.zeros(len(keys), dtype=bool)
        pi = np.zeros(len(keys))
        for key, p in zip(drawn.keys, drawn.probabilities, strict=True):
            labelled[row[key]], pi[row[key]] = True, p
        mean = prediction.estimate(design, items, labelled, probabilities=pi[labelled])[0]
        hits += mean.ppi[1] <= truth <= mean.ppi[2]
        points.append(mean.ppi[0])
        naive.append(items.human[labelled].mean())
    assert hits / 400 >= 0.94
    assert np.mean(points) == pytest.approx(truth, abs=0.01)
    assert abs(np.mean(naive) - truth) > 0.03
