"""The report's system leaderboards: every system's score and rank under the human labels
and under each judge's, on the page and in ``leaderboard.csv``, with the numbers
``mmjudge.agree`` gives for the same labels."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mmjudge.cli import agree, export
from mmjudge.report.build import build_report
from tests.cli.test_export import HUMAN, RUNS
from tests.fake_runs import make_run


def _with_runs(run_dir: Path, runs_dir: Path) -> None:
    """Point the run's dataset config at the system run files."""
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text(encoding="utf-8"))
    dataset = summary["config"]["dataset"]
    dataset["path"] = str(runs_dir)
    dataset["runs"] = sorted(p.name for p in runs_dir.iterdir())
    summary["config"]["dataset"]["scale"]["relevant_from"] = 1
    path.write_text(json.dumps(summary), encoding="utf-8")


def test_leaderboard_csv_matches_agree(tmp_path: Path, capsys) -> None:
    runs_dir = tmp_path / "systems"
    runs_dir.mkdir()
    for name, text in RUNS.items():
        (runs_dir / f"{name}.txt").write_text(text, encoding="utf-8")
    sweep = tmp_path / "sweep"
    judge = {("q1", "d1"): 0, ("q1", "d2"): 2, ("q1", "d3"): 1, ("q2", "d1"): 2, ("q2", "d4"): 2}
    a = make_run(sweep, "a", judge, HUMAN, model="m1")
    b = make_run(sweep, "b", {k: 1 for k in HUMAN}, HUMAN, model="m2")
    for run in (a, b):
        _with_runs(run, runs_dir)
    out = build_report(sweep, tmp_path / "reports", n_boot=50)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Leaderboard: toy, nDCG@10" in page and 'href="leaderboard.csv"' in page
    rows = list(csv.DictReader((out / "leaderboard.csv").open(encoding="utf-8")))
    assert {r["judge"] for r in rows} == {"m1 · text · default", "m2 · text · default"}
    assert len(rows) == 2 * 2 * len(RUNS)  # judges × default measures × systems

    qrels = tmp_path / "qrels"
    assert export.main([str(sweep), "--out", str(qrels)]) == 0
    args = [qrels / "toy.human.qrels", qrels / "toy.m1.text.default.qrels", "--runs", runs_dir]
    capsys.readouterr()  # the export's lines
    assert agree.main([*map(str, args), "--relevant-from", "1", "--format", "json"]) == 0
    rankings = json.loads(capsys.readouterr().out)["runs"][0]["rankings"]
    for row in (r for r in rows if r["judge"].startswith("m1")):
        expected = rankings[row["measure"]]
        assert float(row["judge_score"]) == pytest.approx(expected["judge_scores"][row["system"]])
        assert float(row["human_score"]) == pytest.approx(expected["human_scores"][row["system"]])
        for key in ("kendall_tau", "spearman_rho", "rbo"):
            value = None if row[key] == "" else float(row[key])
            assert value == pytest.approx(expected[key])
    assert all(int(r["human_rank"]) in (1, 2, 3) for r in rows)
