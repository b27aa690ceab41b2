"""The report's card says how many more human labels would tell the best judge from the
runner-up, with the numbers mmjudge.estimation.planning gives for the paired comparison."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mmjudge.estimation import planning
from mmjudge.estimation.estimates import estimates_for
from mmjudge.estimation.prediction import ItemLabels
from mmjudge.metrics import scoring
from mmjudge.report import cards
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

N_BOOT = 200


def _text(markup: object) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", str(markup)))


@pytest.mark.parametrize(("accuracies", "separated"), [((0.8, 0.78), False), ((0.9, 0.4), True)])
def test_card_counts_the_labels_to_separate_the_best_two(
    tmp_path: Path, accuracies: tuple[float, float], separated: bool
) -> None:
    root = tmp_path / "sweeps" / "s"
    judges = [
        FakeJudge("big", accuracy=accuracies[0], usd_per_judgment=0.001),
        FakeJudge("small", accuracy=accuracies[1], usd_per_judgment=0.0001),
    ]
    write_sweep(root, [FakeDataset("shop", n_queries=20, images=0)], judges)
    analysis = analyse(cell_table(root), n_boot=N_BOOT)
    (card,) = cards.cards(analysis)
    (stats,) = analysis.datasets
    comparison = stats.best_vs_others[0]
    found = planning.plan_separation("a", "b", comparison.paired)
    assert found is not None and found.separated is separated
    text = _text(card.labels)
    if separated:
        assert "already tell" in text
    else:
        more = planning.extra_labels(found.needed, found.n_items)
        assert f"you need about {more:,.0f} more labelled items" in text
        assert f"≈{math.ceil(found.needed):,} in all" in text


def _close_judges(tmp_path: Path) -> Path:
    root = tmp_path / "sweeps" / "s"
    judges = [
        FakeJudge("big", accuracy=0.8, usd_per_judgment=0.001),
        FakeJudge("small", accuracy=0.78, usd_per_judgment=0.0001),
    ]
    write_sweep(root, [FakeDataset("shop", n_queries=20, images=0)], judges)
    return root


def test_a_human_price_prices_the_labels_and_splits_the_money(tmp_path: Path) -> None:
    """With ``report.human_cost_per_label`` the More labels line gives dollars (the count
    times the price) and a Label budget line gives planning.budget_split's numbers for that
    sum; without it, neither."""
    pytest.importorskip("ppi_py", reason="the split of a priced judge needs the estimate extra")
    analysis = analyse(cell_table(_close_judges(tmp_path)), n_boot=N_BOOT)
    (stats,) = analysis.datasets
    found = planning.plan_separation("a", "b", stats.best_vs_others[0].paired)
    assert found is not None and not found.separated
    more = planning.extra_labels(found.needed, found.n_items)
    (unpriced,) = cards.cards(analysis)
    assert "$" not in _text(unpriced.labels) and unpriced.split is None
    (card,) = cards.cards(analysis, human_cost_per_label=0.5)
    spend = more * 0.5
    assert f"{more:,.0f} more labelled items, about ${spend:,.0f}" in _text(card.labels)
    best = stats.ranked[0]
    human = stats.items.consensus[best.labels.items]
    split = planning.budget_split(
        human,
        best.labels.label,
        budget=spend,
        cost_per_label=0.5,
        judge_cost_per_label=best.usd_per_million / 1e6,
    )
    text = _text(card.split)
    assert f"as {split.human_labels:,} human labels" in text
    assert f"{split.judge_only_labels:,} more items" in text
    assert f"as {split.effective_n:,.0f} human labels alone" in text
    # every item here has human labels: no prediction-powered mean grade to show
    assert card.mean_grade is None


def test_a_label_budget_is_what_the_card_splits(tmp_path: Path) -> None:
    """With ``report.label_budget_usd`` the Label budget line splits that sum (not the cost
    of the More labels line), with planning.budget_split's numbers; the More labels line is
    unchanged, and a budget without a human price shows no split."""
    pytest.importorskip("ppi_py", reason="the split of a priced judge needs the estimate extra")
    analysis = analyse(cell_table(_close_judges(tmp_path)), n_boot=N_BOOT)
    (stats,) = analysis.datasets
    (priced,) = cards.cards(analysis, human_cost_per_label=0.5)
    (card,) = cards.cards(analysis, human_cost_per_label=0.5, label_budget_usd=40.0)
    assert _text(card.labels) == _text(priced.labels)
    best = stats.ranked[0]
    split = planning.budget_split(
        stats.items.consensus[best.labels.items],
        best.labels.label,
        budget=40.0,
        cost_per_label=0.5,
        judge_cost_per_label=best.usd_per_million / 1e6,
    )
    text = _text(card.split)
    assert text.startswith("For the mean grade, $40.00 goes furthest")
    assert f"as {split.human_labels:,} human labels" in text
    assert f"against {split.human_only_n:,} bought without the judge" in text
    assert split.human_only_n == 80 and text != _text(priced.split)
    (unpriced,) = cards.cards(analysis, label_budget_usd=40.0)
    assert unpriced.split is None


def _forget_human_labels(root: Path, every: int = 3) -> None:
    """Every ``every``-th result of each query loses its human labels in every run's
    judgments (as items people never graded)."""
    for path in root.rglob("judgments.jsonl"):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for row in rows:
            if int(row["result_id"][1:]) % every == 0:
                row["human_labels"] = {}
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _card_and_mean_grade(root: Path, pooled: bool = False) -> tuple[cards.Card, Any, Any]:
    """The card of a sweep whose items lost some human labels, the mean grade estimates_for
    gives with the best judge's labels (its items' real queries, or one pool of them), and
    which items people graded."""
    _forget_human_labels(root)
    analysis = analyse(cell_table(root), n_boot=N_BOOT)
    (card,) = cards.cards(analysis)
    (stats,) = analysis.datasets
    best = stats.ranked[0]
    judge = np.asarray(best.labels.label, dtype=float)
    human = stats.items.consensus[best.labels.items]
    labelled = ~np.isnan(human)
    queries = [str(q) for q in stats.items.item_query[best.labels.items]]
    names = ["q"] * judge.size if pooled else queries
    items = ItemLabels(names, [str(i) for i in range(judge.size)], human, judge)
    threshold = scoring.relevance_threshold(np.asarray(stats.grades, float), None)
    found = estimates_for(items, None, sorted(stats.grades), threshold, labelled).estimates[0]
    return card, found, labelled


def test_the_card_shows_the_prediction_powered_mean_grade(tmp_path: Path) -> None:
    """Where the best judge graded items no person graded, the card shows the mean grade
    prediction-powered beside the human labels alone, with the numbers mmjudge estimate
    computes (estimates_for on the same labels)."""
    pytest.importorskip("ppi_py", reason="needs the estimate extra")
    card, found, labelled = _card_and_mean_grade(_close_judges(tmp_path))
    assert 0 < (~labelled).sum() < labelled.sum()
    text = _text(card.mean_grade)
    assert f"{found.ppi[0]:.2f} [{found.ppi[1]:.2f}, {found.ppi[2]:.2f}]" in text
    assert f"{found.human_only[0]:.2f} [{found.human_only[1]:.2f}" in text
    assert f"the {int((~labelled).sum()):,} items no person graded (prediction-powered)" in text


def test_the_card_estimates_the_mean_grade_per_query_when_each_has_labels_enough(
    tmp_path: Path,
) -> None:
    """Two queries of 90 results, a third of them never graded by people: 60 labelled items
    in each query, so the card's mean grade is estimated within each query (the rule of
    mmjudge estimate), with the numbers estimates_for gives on the real queries, and not
    the numbers of one pool."""
    pytest.importorskip("ppi_py", reason="needs the estimate extra")

    def sweep(name: str) -> Path:
        root = tmp_path / name / "sweeps" / "s"
        judges = [FakeJudge("big", accuracy=0.8), FakeJudge("small", accuracy=0.6)]
        shop = FakeDataset("shop", n_queries=2, results_per_query=90, images=0)
        write_sweep(root, [shop], judges)
        return root

    card, by_query, _ = _card_and_mean_grade(sweep("a"))
    _, pooled, _ = _card_and_mean_grade(sweep("b"), pooled=True)
    assert by_query.strata == 2 and pooled.strata == 1 and by_query.ppi != pooled.ppi
    text = _text(card.mean_grade)
    assert f"{by_query.ppi[0]:.2f} [{by_query.ppi[1]:.2f}, {by_query.ppi[2]:.2f}]" in text
    assert "(prediction-powered, within each of 2 queries)" in text


def test_without_the_estimate_extra_the_card_says_nothing_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ppi-python missing (load_ppi refuses): no split for a priced judge and no
    prediction-powered mean grade, and the card is still built."""
    from mmjudge.errors import MMJudgeError
    from mmjudge.estimation import prediction

    def missing() -> None:
        raise MMJudgeError("prediction-powered estimates need the ppi-python package")

    monkeypatch.setattr(prediction, "load_ppi", missing)
    root = _close_judges(tmp_path)
    _forget_human_labels(root)
    analysis = analyse(cell_table(root), n_boot=N_BOOT)
    (card,) = cards.cards(analysis, human_cost_per_label=0.5)
    assert "$" in _text(card.labels)
    assert card.split is None and card.mean_grade is None


@pytest.mark.slow
def test_mmjudge_report_takes_the_human_price(tmp_path: Path, capsys) -> None:
    """``mmjudge report --human-cost-per-label`` puts the dollars and the Label budget line on
    the page; a price of 0 is refused in one line naming the flag."""
    pytest.importorskip("ppi_py", reason="the split of a priced judge needs the estimate extra")
    from mmjudge.cli import report

    root = _close_judges(tmp_path)
    assert report.main([str(root), "--human-cost-per-label", "0"]) == 2
    err = capsys.readouterr().err
    assert "--human-cost-per-label 0.0: give a price above 0" in err and err.count("\n") == 1
    out = tmp_path / "reports"
    args = [str(root), "--out", str(out), "--n-boot", str(N_BOOT), "--human-cost-per-label", "2"]
    assert report.main(args) == 0
    page = (out / "s" / "index.html").read_text(encoding="utf-8")
    assert "<dt>Label budget</dt>" in page and "more labelled items, about $" in page


def test_mmjudge_report_refuses_a_label_budget_of_nothing(tmp_path: Path, capsys) -> None:
    """``--label-budget`` below or at 0 is refused in one line naming the flag."""
    from mmjudge.cli import report

    assert report.main([str(tmp_path), "--label-budget", "0"]) == 2
    err = capsys.readouterr().err
    assert "--label-budget 0.0: give a budget above 0 in USD" in err and err.count("\n") == 1


def test_the_card_estimates_each_systems_ndcg_with_the_judged_pool(tmp_path: Path) -> None:
    """A TREC collection with two runs whose top tens hold three documents the qrels lack
    (dataset.allow_unlabelled judges them): the card's Systems line gives each run's nDCG@10
    prediction-powered and from the human labels alone, with the numbers estimates_for gives
    on the same items and runs, and says to read them as a guide with so few labels."""
    pytest.importorskip("ppi_py", reason="needs the estimate extra")
    from mmjudge.data.qrels import read_qrels, read_run
    from mmjudge.engine.cell import run_cell
    from mmjudge.estimation.prediction import pick
    from mmjudge.report.findings.prose import num
    from tests.helpers import REPO_ROOT, compose_config

    root = tmp_path / "trec"
    root.mkdir()
    for source in (REPO_ROOT / "tests" / "fixtures" / "trec_tiny").iterdir():
        (root / source.name).write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    (root / "run_a.txt").write_text(
        "q1 Q0 d1 1 3.0 a\nq1 Q0 d4 2 2.0 a\nq1 Q0 d3 3 1.0 a\nq2 Q0 d3 1 2.0 a\n", "utf-8"
    )
    (root / "run_b.txt").write_text(
        "q1 Q0 d2 1 2.0 b\nq2 Q0 d4 1 2.0 b\nq2 Q0 d1 2 1.0 b\n", "utf-8"
    )
    overrides = [
        "model=lexical",
        "dataset=trec_example",
        f"dataset.path={root}",
        "dataset.allow_unlabelled=true",
        "dataset.runs=[run_a.txt,run_b.txt]",
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        "runner.progress=false",
    ]
    summary = run_cell(compose_config(overrides), tmp_path / "sweep" / "run")
    assert summary.n_judgments == 7 and summary.metrics.n_scored == 4
    analysis = analyse(cell_table(tmp_path / "sweep"), n_boot=N_BOOT)
    (card,) = cards.cards(analysis)
    (stats,) = analysis.datasets
    best = stats.ranked[0]
    keys = [stats.items.keys[code].split("\t") for code in best.labels.items]
    human = stats.items.consensus[best.labels.items]
    items = ItemLabels(
        [q for q, _ in keys],
        [d for _, d in keys],
        human,
        np.asarray(best.labels.label, dtype=float),
    )
    runs = {name: read_run(root / f"{name}.txt") for name in ("run_a", "run_b")}
    found = estimates_for(items, runs, [0, 1, 2, 3], 2, ~np.isnan(human)).estimates
    text = _text(card.systems)
    assert text.startswith("nDCG@10, prediction-powered: ")
    for name, e in pick(found, "nDCG@10").items():
        assert f"{name} {num(e.ppi[0])} [{num(e.ppi[1])}, {num(e.ppi[2])}]" in text
        assert f"(human labels alone {num(e.human_only[0])} [{num(e.human_only[1])}" in text
    assert "With 4 human labels, fewer than the 500" in text
    assert read_qrels(root / "qrels.txt")["q1"] == {"d1": 3, "d2": 0}
    assert "Share of relevant results:" in _text(card.mean_grade)
