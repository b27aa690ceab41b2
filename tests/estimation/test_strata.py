"""Prediction-powered means stratified by query (mmjudge.estimation.strata): each query's part
equal to ppi_py's own functions on that query's items, combined by the queries' shares, and
used only where the fixed rule allows it."""

from __future__ import annotations

import numpy as np
import pytest

from mmjudge.estimation import estimates, prediction, strata
from tests.estimation.test_prediction import llmjudge, real_setup  # noqa: F401

GRADES = [0, 1, 2, 3]

ppi_py = pytest.importorskip("ppi_py", reason="needs the estimate extra (ppi-python)")


def _by_hand(columns, items, labelled, codes, k, lam=None):
    """Column ``k``'s stratified estimate from ppi_py per query, combined here (``lam=0``:
    the human-only one)."""
    point, square = 0.0, 0.0
    for q in range(int(codes.max()) + 1):
        lab, rest = labelled & (codes == q), ~labelled & (codes == q)
        y = columns.values(items.human[lab], lab)[:, k]
        yhat = columns.values(items.judge[lab], lab)[:, k]
        yrest = columns.values(items.judge[rest], rest)[:, k]
        share = (codes == q).sum() / codes.size
        centre = ppi_py.ppi_mean_pointestimate(y, yhat, yrest, lam=lam).item()
        low, high = ppi_py.ppi_mean_ci(y, yhat, yrest, alpha=0.05, lam=lam)
        point += share * centre
        square += (share * (high.item() - low.item()) / 2) ** 2
    half = np.sqrt(square)
    return point, point - half, point + half


def test_every_query_labelled_enough_is_estimated_per_query(llmjudge) -> None:  # noqa: F811
    """2,500 of the 4,423 LLMJudge items labelled (every one of the 25 queries then has at
    least 40): the mean grade and the share relevant are ppi_py's per-query estimates and
    intervals combined by the queries' shares of the items, to 1e-9; the system measures
    are split by their top tens as without the queries."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 2500, seed=3)
    assert strata.usable(design.codes, labelled, design.n_queries)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    inside = prediction.top_ten_items(design, columns)
    found = prediction.estimate_columns(
        columns, items, labelled, queries=design.codes, inside=inside
    )
    pooled = prediction.estimate_columns(columns, items, labelled, inside=inside)
    for k, e in enumerate(found):
        if e.name in strata.COLUMNS:
            assert e.strata == design.n_queries == 25
            assert e.ppi == pytest.approx(
                _by_hand(columns, items, labelled, design.codes, k), abs=1e-9
            )
            by_hand = _by_hand(columns, items, labelled, design.codes, k, lam=0)
            assert e.human_only == pytest.approx(by_hand, abs=1e-9)
            assert e.ppi[2] - e.ppi[1] < pooled[k].ppi[2] - pooled[k].ppi[1]
            assert 0 <= e.lam <= 1
        else:
            assert e.strata == 2 and e.ppi == pooled[k].ppi
    again = prediction.estimate(design, items, labelled)
    assert [e.ppi for e in again] == [e.ppi for e in found]


def test_too_few_labels_in_a_query_pool_every_item(llmjudge) -> None:  # noqa: F811
    """500 labelled items leave some query with fewer than 40: pooled, as without the
    queries (ppi_py's estimator with the two pseudo-items, test_prediction); a draw with
    unequal chances and a single query are pooled too."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 500, seed=3)
    assert not strata.usable(design.codes, labelled, design.n_queries)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    (mean, share) = prediction.estimate_columns(columns, items, labelled, queries=design.codes)[:2]
    pooled = prediction.estimate_columns(columns, items, labelled)[:2]
    assert mean.strata == share.strata == 1
    assert [mean, share] == pooled
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


def _split_by_hand(columns, items, labelled, inside, k, weights=None):
    """Column ``k`` estimated in its top tens and outside them apart from ppi_py's functions
    (human-only at ``lam=0``), combined with a Welch–Satterthwaite t interval. With
    ``weights`` (one per item; used for the labelled ones) the judge is imputed on every
    item, and a part counts Kish's effective number of labelled items."""
    from scipy import stats

    z = stats.norm.ppf(0.975)
    rest_mask = ~labelled if weights is None else np.ones_like(labelled)
    y_all = columns.values(items.human[labelled], labelled)[:, k]
    yhat_all = columns.values(items.judge[labelled], labelled)[:, k]
    rest_all = columns.values(items.judge[rest_mask], rest_mask)[:, k]
    found = []
    for lam in (None, 0):
        point, pieces = 0.0, []
        for part in (inside[:, k], ~inside[:, k]):
            lab, unlab = part[labelled], part[rest_mask]
            y, yhat, rest = y_all[lab], yhat_all[lab], rest_all[unlab]
            w = None if weights is None else weights[labelled][lab]
            share = part.sum() / part.size
            if lam is None and not (y.any() or yhat.any() or rest.any()):
                centre, half = 0.0, 0.0  # P@10 outside the top tens: zero throughout
            else:
                centre = ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=lam, w=w).item()
                low, high = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=lam, w=w)
                half = (high.item() - low.item()) / 2
            m = lab.sum() if w is None else w.sum() ** 2 / (w**2).sum()
            point += share * centre
            pieces.append(((share * half / z) ** 2 * m / (m - 1), m - 1))
        variance = sum(v for v, _ in pieces)
        freedom = variance**2 / sum(v * v / df for v, df in pieces)
        half = stats.t.ppf(0.975, freedom) * np.sqrt(variance)
        shift = columns.offset[k]
        found.append((point + shift, point - half + shift, point + half + shift))
    return found


def test_system_measures_are_split_by_their_top_tens(llmjudge) -> None:  # noqa: F811
    """500 of the LLMJudge items labelled: each system's nDCG@10 and P@10, prediction-powered
    and human-only, equal ppi_py's estimates within the system's top tens and outside them,
    combined by their shares with a t interval, to 1e-9; the mean grade is not split."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 500, seed=5)
    found = prediction.estimate(design, items, labelled)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    inside = prediction.top_ten_items(design, columns)
    assert found[0].strata == found[1].strata == 1 and not inside[:, :2].any()
    for k, e in enumerate(found[2:], start=2):
        ppi, human = _split_by_hand(columns, items, labelled, inside, k)
        assert e.strata == 2
        assert e.ppi == pytest.approx(ppi, abs=1e-9), e.name
        assert e.human_only == pytest.approx(human, abs=1e-9), e.name
        # the weight reported is the one tuned in the top tens: it gives their estimate
        top = inside[:, k]
        part = (
            columns.values(items.human[labelled & top], labelled & top)[:, k],
            columns.values(items.judge[labelled & top], labelled & top)[:, k],
            columns.values(items.judge[~labelled & top], ~labelled & top)[:, k],
        )
        tuned = ppi_py.ppi_mean_pointestimate(*part).item()
        assert ppi_py.ppi_mean_pointestimate(*part, lam=e.lam).item() == pytest.approx(tuned)
        assert 0 <= e.lam <= 1


def test_too_few_labels_in_a_top_ten_pool_the_system_column(llmjudge) -> None:  # noqa: F811
    """One labelled item in a system's top tens is too few to estimate them apart: the
    column is pooled (as ppi_py gives it for all items)."""
    items, _, design = real_setup(llmjudge)
    pilot_mask = prediction.draw_labelled(items.human.size, 500, seed=5)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, pilot_mask)
    )
    inside = prediction.top_ten_items(design, columns)
    anywhere = inside.any(axis=1)
    labelled = np.zeros(items.human.size, dtype=bool)
    labelled[np.flatnonzero(~anywhere)[:300]] = True
    labelled[np.flatnonzero(inside[:, 2])[0]] = True  # one item in the first system's top tens
    split = prediction.estimate_columns(columns, items, labelled, inside=inside)
    pooled = prediction.estimate_columns(columns, items, labelled)
    assert [e.strata for e in split] == [1] * len(split)
    assert [e.ppi for e in split] == [e.ppi for e in pooled]


def test_a_weighted_draw_is_split_with_its_weights(llmjudge) -> None:  # noqa: F811
    """Labelled items drawn with unequal chances (as mmjudge plan --next draws them): each
    system measure is split by its top tens with every labelled item weighed by one over its
    chance and the judge imputed on every item, equal to ppi_py's weighted functions per
    part, to 1e-9; the mean grade is pooled."""
    items, _, design = real_setup(llmjudge)
    labelled = prediction.draw_labelled(items.human.size, 500, seed=9)
    chance = np.where(items.judge >= 2, 0.2, 0.08)  # judged relevant: drawn more often
    weights = 1.0 / chance
    found = prediction.estimate(design, items, labelled, probabilities=chance[labelled])
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, labelled)
    )
    inside = prediction.top_ten_items(design, columns)
    assert found[0].strata == 1
    for k, e in enumerate(found[2:], start=2):
        ppi, human = _split_by_hand(columns, items, labelled, inside, k, weights)
        assert e.strata == 2
        assert e.ppi == pytest.approx(ppi, abs=1e-9), e.name
        assert e.human_only == pytest.approx(human, abs=1e-9), e.name


def _queries_apart(judge: str, size: int = 2500, seed: int = 0) -> prediction.ItemLabels:
    """25 queries of 100 items whose mean grades differ widely (query q's items are mostly
    relevant when q is high), and a judge that is the human grade (``judge="human"``) or a
    grade drawn at random (``"random"``)."""
    rng = np.random.default_rng(seed)
    queries = [f"q{i % 25}" for i in range(size)]
    level = np.array([(i % 25) / 24 for i in range(size)])
    human = np.clip(np.round(3 * level + rng.normal(0, 0.6, size)), 0, 3)
    graded = human.copy() if judge == "human" else rng.integers(0, 4, size).astype(float)
    return prediction.ItemLabels(queries, [f"d{i}" for i in range(size)], human, graded)


def test_a_random_judge_gains_nothing_over_the_same_stratified_human_only() -> None:
    """A judge that grades at random adds nothing: estimated per query, its effective n is
    the labels' own (within 3%), since the human-only interval is stratified by query
    too. Against a pooled human-only interval the queries' spread was credited to it."""
    items = _queries_apart("random")
    result = estimates.held_back(items, None, GRADES, 2, 1500, seed=1)
    assert "within each of 25 queries" in estimates.strata_line(result)
    for e in result.estimates:
        assert abs(e.effective_n - 1500) < 0.03 * 1500, (e.name, e.effective_n)


def test_effective_n_is_capped_at_the_items(tmp_path) -> None:
    """A judge that gives the human grades, 2,000 of 2,500 items labelled: the PPI++
    interval is worth more labels than there are items; the effective n is the 2,500
    items, marked capped, and the table says so."""
    from mmjudge.cli import estimate as command

    items = _queries_apart("human")
    result = estimates.held_back(items, None, GRADES, 2, 2000, seed=1)
    for e in result.estimates:
        assert e.uncapped_effective_n > 2500 and e.effective_n == 2500 and e.capped
    rows = estimates.as_dict(result)["estimates"]
    assert [(r["effective_n"], r["effective_n_capped"]) for r in rows] == [(2500, True)] * 2
    table = command.format_table(result)
    assert "2500 (+500) capped" in table and "capped: an effective n above the 2,500" in table
