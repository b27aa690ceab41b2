"""mmjudge plan: labels needed per judge and to separate the best two, from a saved sweep."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mmjudge.agreement import planning, scoring
from mmjudge.agreement.frontier import compare_runs
from mmjudge.agreement.members import human_consensus
from mmjudge.cli import plan
from mmjudge.runs import completed_runs
from tests.fake_runs import make_run


def toy_sweep(tmp_path: Path) -> Path:
    rng = np.random.default_rng(11)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(30) for d in range(6)]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    human = {key: {"x": truth[key]} for key in keys}

    def noisy(rate: float, seed: int) -> dict[tuple[str, str], int | None]:
        r = np.random.default_rng(seed)
        return {k: (int(r.integers(0, 3)) if r.random() < rate else v) for k, v in truth.items()}

    sweep = tmp_path / "sweep"
    make_run(sweep, "best", noisy(0.2, 1), human, model="big", cost=0.01)
    make_run(sweep, "close", noisy(0.25, 2), human, model="mid", cost=0.002)
    make_run(sweep, "poor", noisy(0.7, 3), human, model="tiny", cost=0.0001)
    return sweep


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = plan.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_counts_follow_the_pilot_intervals(tmp_path, capsys) -> None:
    sweep = toy_sweep(tmp_path)
    code, out, err = run_cli(
        capsys, sweep, "--halfwidth", 0.04, "--cost-per-label", 0.5, "--format", "json"
    )
    assert code == 0 and err == ""
    (dataset,) = json.loads(out)["datasets"]
    assert dataset["half_width"] == 0.04 and dataset["cost_per_label"] == 0.5
    judges = {j["judge"].split("/")[0]: j for j in dataset["judges"]}
    assert list(judges) == ["big", "mid", "tiny"]  # by κ, highest first
    runs = {run.name.split("/")[0]: run for run in completed_runs(sweep)}
    for name, entry in judges.items():
        run = runs[name]
        keys = list(run.rows)
        score = scoring.score_judge(
            np.array([k[0] for k in keys], dtype=object),
            human_consensus([run], keys),
            run.labels(keys),
            run.grades,
        )
        half = (score.kappa.high - score.kappa.low) / 2
        assert entry["half_width"] == pytest.approx(half)
        assert entry["needed_items"] == math.ceil(180 * (half / 0.04) ** 2)
        assert entry["needed_queries"] == math.ceil(entry["needed_items"] / 6)
        assert entry["more_items"] == max(0, entry["needed_items"] - 180)
        assert entry["usd"] == pytest.approx(entry["more_items"] * 0.5)
        assert entry["usd_per_million"] == pytest.approx(run.usd_per_million)
    sep = dataset["separation"]
    assert (sep["best"].split("/")[0], sep["runner_up"].split("/")[0]) == ("big", "mid")
    found = compare_runs(runs["big"], runs["mid"], n_boot=1000, seed=0, level=0.95)
    assert found is not None
    assert sep["difference"] == pytest.approx(found.difference)
    half = (found.high - found.low) / 2
    assert sep["half_width"] == pytest.approx(half)
    assert sep["needed_items"] == math.ceil(
        planning.items_for_half_width(180, half, abs(found.difference))
    )


def test_table_says_what_separating_costs(tmp_path, capsys) -> None:
    sweep = toy_sweep(tmp_path)
    code, out, _ = run_cli(capsys, sweep, "--cost-per-label", 0.5)
    assert code == 0
    assert "κ to ±0.05 (95% interval, query bootstrap)" in out
    line = next(line for line in out.splitlines() if "to separate them you need about" in line)
    assert "more labelled items" in line and "$" in line


def test_without_a_price_there_is_no_cost(tmp_path, capsys) -> None:
    code, out, _ = run_cli(capsys, toy_sweep(tmp_path), "--format", "json")
    assert code == 0
    (dataset,) = json.loads(out)["datasets"]
    assert all(j["usd"] is None for j in dataset["judges"])


@pytest.mark.parametrize("flag", ["--halfwidth", "--cost-per-label"])
def test_non_positive_settings_are_refused(tmp_path, capsys, flag) -> None:
    with pytest.raises(SystemExit) as info:
        plan.main([str(tmp_path), flag, "0"])
    assert info.value.code == 2
    assert f"argument {flag}: must be above 0" in capsys.readouterr().err


def test_an_empty_folder_is_refused_in_one_line(tmp_path, capsys) -> None:
    code, out, err = run_cli(capsys, tmp_path)
    assert code == 2 and out == ""
    assert err.startswith("mmjudge plan: ") and err.count("\n") == 1


def test_budget_is_split_per_judge(tmp_path, capsys) -> None:
    sweep = toy_sweep(tmp_path)
    args = [sweep, "--cost-per-label", 0.5, "--budget", 100]
    code, out, _ = run_cli(capsys, *args, "--format", "json")
    assert code == 0
    (dataset,) = json.loads(out)["datasets"]
    assert dataset["budget"] == 100
    for judge in dataset["judges"]:
        split = judge["budget_split"]
        assert split["human_only_n"] == 200
        assert split["cost"] <= 100 + 0.5
        assert split["effective_n"] >= split["human_labels"]
    code, table, _ = run_cli(capsys, *args)
    assert "a budget of $100.00 for the mean grade" in table


def test_budget_without_a_price_is_refused(tmp_path, capsys) -> None:
    code, _, err = run_cli(capsys, toy_sweep(tmp_path), "--budget", 100)
    assert code == 2
    assert err == "mmjudge plan: --budget needs --cost-per-label (what one human label costs)\n"
