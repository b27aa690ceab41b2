"""Prediction-powered means stratified by query (mmjudge.agreement.strata): each query's part
equal to ppi_py's own functions on that query's items, combined by the queries' shares, and
used only where the fixed rule allows it."""

from __future__ import annotations

import numpy as np
import pytest

from mmjudge.agreement import estimates, prediction, strata
from tests.agreement.test_prediction import llmjudge, real_setup  # noqa: F401

ppi_py = pytest.importorskip("ppi_py", reason="needs the estimate extra (ppi-python)")


def _by_hand(columns, items, labelled, codes, k):
    """Column ``k``'s stratified estimate from ppi_py per query, combined here."""
    point, square = 0.0, 0.0
    for q in range(int(codes.max()) + 1):
        lab, rest = labelled & (codes == q), ~labelled & (codes == q)
        y = columns.values(items.human[lab], lab)[:, k]
        yhat = columns.values(items.judge[lab], lab)[:, k]
        yrest = columns.values(items.judge[rest], rest)[:, k]
        share = (codes == q).sum() / codes.size
        centre = ppi_py.ppi_mean_pointestimate(y, yhat, yrest).item()
        low, high = ppi_py.ppi_mean_ci(y, yhat, yrest, alpha=0.05)
        point += share * centre
        square += (share * (high.item() - low.item()) / 2) ** 2
    half = np.sqrt(square)
    return point, point - half, point + half


def test_every_query_labelled_enough_is_estimated_per_query(llmjudge) -> None:  # noqa: F811
    """2,500 of the 4,423 LLMJudge items labelled (every one of the 25 queries then has at
    least 40): the mean grade and the share relevant are ppi_py's per-query estimates and
    intervals combined by the queries' shares of the items, to 1e-9; the system measures
    stay pooled."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 2500, seed=3)
    assert strata.usable(design.codes, labelled, design.n_queries)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    found = prediction.estimate_columns(columns, items, labelled, queries=design.codes)
    pooled = prediction.estimate_columns(columns, items, labelled)
    for k, e in enumerate(found):
        if e.name in strata.COLUMNS:
            assert e.strata == design.n_queries == 25
            assert e.ppi == pytest.approx(
                _by_hand(columns, items, labelled, design.codes, k), abs=1e-9
            )
            assert e.human_only == pooled[k].human_only
            assert e.ppi[2] - e.ppi[1] < pooled[k].ppi[2] - pooled[k].ppi[1]
            assert 0 <= e.lam <= 1
        else:
            assert e.strata == 1 and e.ppi == pooled[k].ppi
    again = prediction.estimate(design, items, labelled)
    assert [e.ppi for e in again] == [e.ppi for e in found]


def test_too_few_labels_in_a_query_pool_every_item(llmjudge) -> None:  # noqa: F811
    """500 labelled items leave some query with fewer than 40: pooled, as ppi_py gives it
    for all items; a draw with unequal chances and a single query are pooled too."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 500, seed=3)
    assert not strata.usable(design.codes, labelled, design.n_queries)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    (mean, share) = prediction.estimate_columns(columns, items, labelled, queries=design.codes)[:2]
    y = columns.values(items.human[labelled], labelled)[:, 0]
    yhat = columns.values(items.judge[labelled], labelled)[:, 0]
    rest = columns.values(items.judge[~labelled], ~labelled)[:, 0]
    low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05)
    assert mean.strata == share.strata == 1
    assert mean.ppi[1:] == pytest.approx((low.item(), high.item()), abs=1e-9)
    many = prediction.draw_labelled(items.human.size, 2500, seed=3)
    chances = np.full(int(many.sum()), 2500 / items.human.size)
    weighted = prediction.estimate(design, items, many, probabilities=chances)
    assert weighted[0].strata == 1
    assert not strata.usable(np.zeros(10, dtype=np.intp), np.arange(10) < 8, 1)


def test_the_command_says_which_estimate_it_made(llmjudge) -> None:  # noqa: F811
    """The JSON's ``stratified`` line and each row's ``strata`` say per query or pooled."""
    items, _, _ = real_setup(llmjudge)
    many = estimates.held_back(items, None, [0, 1, 2, 3], 2, 2500, seed=3)
    few = estimates.held_back(items, None, [0, 1, 2, 3], 2, 500, seed=3)
    assert "within each of 25 queries" in estimates.as_dict(many)["stratified"]
    assert "pooled over all items" in estimates.as_dict(few)["stratified"]
    assert [r["ppi"]["strata"] for r in estimates.as_dict(many)["estimates"]] == [25, 25]
