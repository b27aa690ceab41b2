"""The cheapest judge, panel or cascade not distinguishably worse than the best judge."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pytest

from mmjudge import metrics
from mmjudge.cli import frontier
from mmjudge.ensembles.cascades import build_cascade
from mmjudge.ensembles.panels import build_panel
from mmjudge.store import Bounds, completed_runs
from mmjudge.studies.frontier import KappaDifference, frontier_answer
from tests.fake_runs import make_run

GRADES = [0, 1, 2]


def toy_sweep(tmp_path: Path) -> tuple[Path, dict[str, dict[tuple[str, str], int | None]]]:
    rng = np.random.default_rng(11)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(20) for d in range(5)]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    human = {key: {"x": truth[key]} for key in keys}

    def noisy(rate: float, seed: int) -> dict[tuple[str, str], int | None]:
        r = np.random.default_rng(seed)
        return {k: (int(r.integers(0, 3)) if r.random() < rate else v) for k, v in truth.items()}

    labels = {
        "best": noisy(0.1, 1),
        "close": noisy(0.12, 2),
        "poor": noisy(0.7, 3),
    }
    sweep = tmp_path / "sweep"
    make_run(sweep, "best", labels["best"], human, model="big", cost=0.01)
    make_run(sweep, "close", labels["close"], human, model="mid", cost=0.002)
    make_run(sweep, "poor", labels["poor"], human, model="tiny", cost=0.0001)
    return sweep, labels


def test_answer_is_the_cheapest_candidate_not_distinguishably_worse(tmp_path: Path) -> None:
    sweep, labels = toy_sweep(tmp_path)
    (answer,) = frontier_answer(completed_runs(sweep), n_boot=300, seed=2)
    assert answer.dataset == "toy"
    assert answer.best.name == "big/default/text"
    assert answer.best.usd_per_million == pytest.approx(10_000.0)
    by_name = {c.name: c for c in answer.candidates}
    assert not by_name["tiny/default/text"].qualifies
    assert by_name["mid/default/text"].qualifies
    assert answer.answer.name == "mid/default/text"
    assert answer.answer.usd_per_million == pytest.approx(2_000.0)
    assert "optimistic" in answer.note

    # the numbers are those of metrics' paired bootstrap on the common items
    keys = list(labels["best"])
    rows = (sweep / "best" / "judgments.jsonl").read_text().splitlines()
    human = np.array([json.loads(line)["human_labels"]["x"] for line in rows], dtype=float)
    a = np.array([labels["best"][k] for k in keys], dtype=float)
    b = np.array([labels["close"][k] for k in keys], dtype=float)
    queries = [k[0] for k in keys]
    kappa = functools.partial(metrics.cohen_kappa, labels=GRADES)
    paired = metrics.paired_bootstrap(kappa, queries, human, a, b, n_boot=300, seed=2)
    got = answer.answer
    assert got.difference.estimate == pytest.approx(paired.difference)
    assert got.difference.low == pytest.approx(paired.low)
    assert got.difference.high == pytest.approx(paired.high)
    assert got.difference.p_value == pytest.approx(paired.p_value)
    assert got.difference.low <= 0.0
    assert got.kappa == pytest.approx(metrics.cohen_kappa(human, b, GRADES))
    assert got.kappa_best == pytest.approx(answer.best.kappa.estimate)
    assert got.n_items == 100 and got.n_queries == 20
    # the best judge's own κ: its interval on all its items, as in its summary
    ci = metrics.bootstrap_ci(kappa, queries, human, a, n_boot=300, seed=2)
    assert answer.best.kappa == Bounds(estimate=ci.estimate, low=ci.low, high=ci.high)
    assert answer.best.n_items == 100


def test_panels_and_cascades_are_candidates_but_never_the_best(tmp_path: Path) -> None:
    sweep, _ = toy_sweep(tmp_path)
    summary = build_panel(
        [sweep / "best", sweep / "close"], sweep / "ensembles" / "p", how="majority-max"
    )
    assert summary.kind == "panel"
    cascade = build_cascade(
        sweep / "poor", sweep / "best", sweep / "ensembles" / "c", rules=["middle", "unparseable"]
    )
    (answer,) = frontier_answer(completed_runs(sweep), n_boot=200, seed=0)
    kinds = {c.name: c.kind for c in answer.candidates}
    assert kinds[f"{summary.cell.model}/default/text"] == "panel"
    assert kinds[f"{cascade.cell.model}/default/text"] == "cascade"
    # the best single judge is never a panel or a cascade
    assert answer.best.kind == "single"
    best_self = next(c for c in answer.candidates if c.name == answer.best.name)
    assert best_self.qualifies and best_self.difference.estimate == 0.0
    qualifying = [c for c in answer.candidates if c.qualifies]
    assert answer.answer.usd_per_million == min(c.usd_per_million for c in qualifying)


def test_cli_says_on_which_items_each_kappa_is(tmp_path: Path, capsys) -> None:
    sweep, _ = toy_sweep(tmp_path)
    assert frontier.main([str(sweep), "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "best single judge   big/default/text  κ " in out
    assert "on its 100 items" in out
    assert "cheapest as good    mid/default/text (single)  $2,000 per million" in out
    assert "on the 100 items both graded: κ(best)" in out
    assert "κ(best) − κ:" in out and "paired bootstrap over 20 queries" in out
    assert "shared items" in out  # every candidate's κ says which items it is on
    assert frontier.main([str(sweep), "--n-boot", "200", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)["datasets"]
    assert data[0]["answer"]["name"] == "mid/default/text" and data[0]["n_boot"] == 200


def test_cli_errors_exit_2(tmp_path: Path, capsys) -> None:
    assert frontier.main([str(tmp_path)]) == 2
    assert "no completed run" in capsys.readouterr().err
    sweep, _ = toy_sweep(tmp_path)
    assert frontier.main([str(sweep), "--n-boot", "0"]) == 2
    assert "--n-boot" in capsys.readouterr().err


@pytest.mark.slow  # over half a second
def test_frontier_and_report_give_the_same_numbers_for_a_comparison(tmp_path: Path, capsys) -> None:
    """One function computes a comparison: the report's "best against the others" and the
    frontier's candidates agree to the last digit, items and queries included."""
    from mmjudge.report import build_report
    from mmjudge.report.analysis import analyse
    from mmjudge.report.load import cell_table
    from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

    root = tmp_path / "sweeps" / "s"
    judges = [
        FakeJudge("top", accuracy=0.85, usd_per_judgment=0.003, unparseable=0.05),
        FakeJudge("near", accuracy=0.8, usd_per_judgment=0.001, unparseable=0.1),
        FakeJudge("far", accuracy=0.4),
    ]
    write_sweep(root, [FakeDataset("shop", n_queries=20, images=0)], judges)
    (stats,) = analyse(cell_table(root), n_boot=300).datasets
    (answer,) = frontier_answer(completed_runs(root), n_boot=300)

    best = stats.ranked[0]
    assert answer.best.name == f"{best.judge.model}/default/text"
    assert answer.best.kappa == Bounds(**best.kappa.as_dict())
    assert best.score is not None and answer.best.alpha == best.score.alpha
    assert best.score is not None and answer.best.n_items == best.score.n_items
    candidates = {c.name: c for c in answer.candidates}
    assert len(stats.best_vs_others) == 2
    for c in stats.best_vs_others:
        mine = candidates[f"{c.b.judge.model}/default/text"]
        assert mine.n_items == c.n_items and mine.n_queries == c.paired.n_queries
        assert (mine.kappa_best, mine.kappa) == (c.kappa_a, c.kappa_b)
        assert mine.difference == KappaDifference(
            estimate=c.difference, low=c.low, high=c.high, p_value=c.p_value
        )
    near = next(c for c in stats.best_vs_others if c.b.judge.model == "near")
    assert near.n_items < stats.items.n  # shared items, not all of them

    # and the printed pages say the same
    page = (build_report(root, tmp_path / "reports", n_boot=300) / "index.html").read_text()
    assert f"on {near.n_items:,} shared items" in page
    assert frontier.main([str(root), "--n-boot", "300"]) == 0
    text = capsys.readouterr().out
    assert f"{near.difference:.3f} [{near.low:.3f}, {near.high:.3f}]" in text
    assert f"{best.kappa.estimate:.3f} [{best.kappa.low:.3f}, {best.kappa.high:.3f}]" in text
