"""Honest selection: choose on half of the queries, score on the other half."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mmjudge import metrics
from mmjudge.cli import select as select_command
from mmjudge.errors import MMJudgeError
from mmjudge.store import completed_runs, load_run
from mmjudge.studies import selection as sel
from tests.fake_runs import make_run

GRADES = [0, 1, 2]


def toy_sweep(tmp_path: Path, n_queries: int = 12, per_query: int = 6) -> Path:
    """Four candidates with different, query-dependent errors."""
    rng = np.random.default_rng(7)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(n_queries) for d in range(per_query)]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    human = {key: {"x": truth[key], "y": truth[key]} for key in keys}

    def noisy(rate: float, seed: int) -> dict[tuple[str, str], int | None]:
        r = np.random.default_rng(seed)
        return {key: (int(r.integers(0, 3)) if r.random() < rate else truth[key]) for key in keys}

    sweep = tmp_path / "sweep"
    make_run(sweep, "good", noisy(0.2, 1), human, model="m", prompt_id="default")
    make_run(sweep, "alt", noisy(0.25, 2), human, model="m", prompt_id="aspects")
    make_run(sweep, "bad", noisy(0.6, 3), human, model="m", prompt_id="terse")
    other = noisy(0.3, 4)
    other[keys[0]] = None  # a missing label is left out of this candidate's κ only
    make_run(sweep, "n.default", other, human, model="n", prompt_id="default")
    return sweep


def test_kappa_of_tables_matches_cohen_kappa() -> None:
    rng = np.random.default_rng(0)
    human = rng.integers(0, 3, 200).astype(float)
    judge = np.where(rng.random(200) < 0.3, rng.integers(0, 3, 200), human).astype(float)
    judge[:5] = np.nan
    queries = np.repeat(np.arange(20), 10)
    tables, order = sel.query_tables(human, judge, queries, GRADES)
    assert tables.shape == (20, 3, 3) and order == list(range(20))
    assert sel.kappa_of_tables(tables.sum(axis=0)) == pytest.approx(
        metrics.cohen_kappa(human, judge, GRADES)
    )
    half = tables[:10].sum(axis=0)
    assert sel.kappa_of_tables(half) == pytest.approx(
        metrics.cohen_kappa(human[:100], judge[:100], GRADES)
    )
    assert math.isnan(sel.kappa_of_tables(np.zeros((3, 3))))
    assert math.isnan(sel.kappa_of_tables(np.diag([4.0, 0, 0])))  # one grade only


def naive_study(runs, baseline: int, splits: int, seed: int) -> dict[str, float]:
    """The selection loop written out with cohen_kappa on explicit item subsets."""
    keys = [k for k in runs[0].rows if all(k in r.rows for r in runs)]
    rows = runs[0].rows
    human = np.array(
        [metrics.consensus({n: [v] for n, v in rows[k].human_labels.items()})[0] for k in keys]
    )
    queries = np.array([k[0] for k in keys])
    order = list(pd.unique(queries))
    labels = [r.labels(keys) for r in runs]
    rng = np.random.default_rng(seed)
    chosen_a, chosen_b, regret, beats = [], [], [], []
    for _ in range(splits):
        half = {order[i] for i in rng.permutation(len(order))[: len(order) // 2]}
        in_a = np.array([q in half for q in queries])

        def kappa(mask, j):
            return metrics.cohen_kappa(human[mask], labels[j][mask], GRADES)

        ka = [kappa(in_a, j) for j in range(len(runs))]
        kb = [kappa(~in_a, j) for j in range(len(runs))]
        c = int(np.argmax(ka))
        chosen_a.append(ka[c])
        chosen_b.append(kb[c])
        regret.append(max(kb) - kb[c])
        beats.append(c != baseline and kb[c] > kb[baseline])
    return {
        "held_out_kappa": float(np.mean(chosen_b)),
        "selection_kappa": float(np.mean(chosen_a)),
        "expected_regret": float(np.mean(regret)),
        "beaten_rate": float(np.mean(beats)),
    }


def test_study_matches_a_naive_loop(tmp_path: Path) -> None:
    sweep = toy_sweep(tmp_path)
    runs = sorted((load_run(p) for p in sweep.iterdir()), key=lambda r: r.name)
    baseline = sel.resolve_baseline(runs, "m/default/text")
    assert baseline is not None
    result = sel.selection_study(runs, baseline=baseline, splits=60, seed=5)
    expected = naive_study(runs, baseline, 60, 5)
    for key in ("held_out_kappa", "selection_kappa", "expected_regret"):
        assert getattr(result, key) == pytest.approx(expected[key])
    assert result.baseline.beaten_rate == pytest.approx(expected["beaten_rate"])
    assert result.optimism == pytest.approx(
        expected["selection_kappa"] - expected["held_out_kappa"]
    )
    assert result.optimism > 0  # the winner's own half flatters it
    assert result.n_items == 72  # a row without a label still counts as an item
    assert sum(c.chosen_rate for c in result.candidates) == pytest.approx(1.0)
    assert result.candidates[0].chosen_rate >= result.candidates[-1].chosen_rate


def test_a_perfect_candidate_is_always_chosen_with_no_regret(tmp_path: Path) -> None:
    keys = [(f"q{q}", f"d{d}") for q in range(6) for d in range(3)]
    human = {k: {"x": (i % 3)} for i, k in enumerate(keys)}
    truth = {k: h["x"] for k, h in human.items()}
    worse = {k: (v + 1) % 3 if i % 4 == 0 else v for i, (k, v) in enumerate(truth.items())}
    make_run(tmp_path, "perfect", truth, human, prompt_id="aspects")
    make_run(tmp_path, "worse", worse, human, prompt_id="default")
    (result,) = sel.select(completed_runs(tmp_path, include_virtual=False), splits=30)
    assert result.held_out_kappa == 1.0 and result.expected_regret == 0.0
    assert result.optimism == 0.0
    assert result.baseline.name == "m/default/text"  # the one 'default' run
    assert result.baseline.beaten_rate == 1.0 and result.baseline.chosen_rate == 0.0
    assert result.candidates[0] == sel.CandidateResult(
        name="m/aspects/text",
        run_dir=str(tmp_path / "perfect"),
        chosen_rate=1.0,
        held_out_kappa_when_chosen=1.0,
        selection_kappa_when_chosen=1.0,
        mean_half_kappa=1.0,
    )


def test_baseline_resolution(tmp_path: Path) -> None:
    sweep = toy_sweep(tmp_path)
    runs = sorted((load_run(p) for p in sweep.iterdir()), key=lambda r: r.name)
    names = [r.name for r in runs]
    assert names[sel.resolve_baseline(runs, "aspects")] == "m/aspects/text"
    assert names[sel.resolve_baseline(runs, "bad")] == "m/terse/text"  # directory name
    assert names[sel.resolve_baseline(runs, "n")] == "n/default/text"  # model
    assert sel.resolve_baseline(runs, None) is None  # two runs use prompt 'default'
    with pytest.raises(MMJudgeError, match="matches 2 candidates"):
        sel.resolve_baseline(runs, "default")
    with pytest.raises(MMJudgeError, match="matches no candidate"):
        sel.resolve_baseline(runs, "nothing")


def test_cli_table_and_json(tmp_path: Path, capsys) -> None:
    sweep = toy_sweep(tmp_path)
    assert select_command.main([str(sweep), "--splits", "50", "--baseline", "m/default/text"]) == 0
    table = capsys.readouterr().out
    assert "toy: 4 candidates, 12 queries" in table
    assert "held-out κ of the chosen candidate" in table and "optimism" in table
    assert "beats the baseline m/default/text" in table
    assert (
        select_command.main([str(sweep), "--splits", "50", "--format", "json", "--model", "m"]) == 0
    )
    data = json.loads(capsys.readouterr().out)["datasets"][0]
    assert data["n_candidates"] == 3 and data["splits"] == 50
    assert data["baseline"]["name"] == "m/default/text"
    assert {c["name"] for c in data["candidates"]} == {
        "m/default/text",
        "m/aspects/text",
        "m/terse/text",
    }


def test_cli_errors_exit_2(tmp_path: Path, capsys) -> None:
    sweep = toy_sweep(tmp_path)
    assert select_command.main([str(sweep), "--dataset", "nope"]) == 2
    assert "no completed runs on dataset 'nope'" in capsys.readouterr().err
    assert select_command.main([str(sweep), "--baseline", "default"]) == 2
    assert "matches 2 candidates" in capsys.readouterr().err
    assert select_command.main([str(tmp_path / "empty")]) == 2


def test_panels_are_not_candidates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mmjudge.ensembles.panels import build_panel

    sweep = toy_sweep(tmp_path)
    build_panel([sweep / "good", sweep / "alt"], sweep / "ensembles" / "p")
    assert select_command.main([str(sweep), "--splits", "10", "--format", "json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["datasets"]
    assert result["n_candidates"] == 4
