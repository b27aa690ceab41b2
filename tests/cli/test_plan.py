"""mmjudge plan: labels needed per judge and to separate the best two, from a saved sweep."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mmjudge.cli import estimate, plan, review
from mmjudge.data.qrels import write_qrels
from mmjudge.estimation import planning
from mmjudge.metrics import scoring
from mmjudge.store import completed_runs
from mmjudge.store.plan_file import read_plan
from mmjudge.studies.frontier import compare_runs
from mmjudge.studies.members import human_consensus
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
    kept = tmp_path / "plan.json"  # what a user keeps reads back through the one reader
    kept.write_text(out, encoding="utf-8")
    assert [j.judge for j in read_plan(kept).datasets[0].judges] == [
        j["judge"] for j in dataset["judges"]
    ]
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
        wide = half * planning.pilot_widening(30)
        assert entry["needed_items"] == math.ceil(180 * (wide / 0.04) ** 2)
        assert entry["needed_items_central"] == math.ceil(180 * (half / 0.04) ** 2)
        assert entry["needed_queries"] == math.ceil(entry["needed_items"] / 6)
        # every item of the pilot's 30 queries is labelled: only new queries narrow κ
        assert entry["reachable_half_width"] == pytest.approx(wide)
        assert entry["needs_more_queries"] == (wide > 0.04) and entry["pool_queries"] == 30
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
    assert "κ to ±0.05 (95% interval, query bootstrap;" in out
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


def sweep_with_unlabelled(tmp_path: Path):
    """Three judges over 30 queries of 6 items; people have graded the first 10 queries."""
    rng = np.random.default_rng(5)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(30) for d in range(6)]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    human = {key: ({"x": truth[key]} if int(key[0][1:]) < 10 else {}) for key in keys}
    labels = {}
    for name, rate, seed in (("big", 0.2, 1), ("mid", 0.35, 2), ("tiny", 0.7, 3)):
        r = np.random.default_rng(seed)
        labels[name] = {
            k: (int(r.integers(0, 3)) if r.random() < rate else v) for k, v in truth.items()
        }
    sweep = tmp_path / "sweep"
    for name, cost in (("big", 0.01), ("mid", 0.002), ("tiny", 0.0001)):
        make_run(sweep, name, labels[name], human, model=name, cost=cost)
    return sweep, truth, labels


def _drawn_and_graded(tmp_path, capsys):
    """plan --next draws 40 of the 120 unlabelled items; a person grades them (the truth)
    and review import writes their qrels. Returns the review file, the imported qrels, the
    truth and the judges' labels."""
    sweep, truth, labels = sweep_with_unlabelled(tmp_path)
    out = tmp_path / "next.csv"
    code, _, err = run_cli(capsys, sweep, "--next", 40, "--out", out, "--seed", 3)
    assert code == 0 and f"{out}: toy: 40 of 120 unlabelled items" in err
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 40 and rows[0]["reasons"] == "drawn for labelling"
    assert all(int(r["query_id"][1:]) >= 10 for r in rows)  # only unlabelled items
    assert all(0 < float(r["inclusion_probability"]) <= 1 for r in rows)
    assert {r["pool_size"] for r in rows} == {"120"}
    for row in rows:
        row["corrected_grade"] = str(truth[(row["query_id"], row["result_id"])])
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert review.main(["import", str(out), "--assessor", "ann"]) == 0
    capsys.readouterr()
    return out, tmp_path / "toy.ann.qrels", truth, labels


def test_next_items_round_trip_through_review_and_estimate(tmp_path, capsys) -> None:
    out, imported, truth, labels = _drawn_and_graded(tmp_path, capsys)
    judge = tmp_path / "big.qrels"
    unlabelled = {k: v for k, v in labels["big"].items() if int(k[0][1:]) >= 10}
    qrels: dict[str, dict[str, int]] = {}
    for (q, d), g in unlabelled.items():
        qrels.setdefault(q, {})[d] = int(g)
    write_qrels(qrels, judge)
    code = estimate.main(
        [str(imported), str(judge), "--sample", str(out), "--scale", "0-2", "--format", "json"]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and (report["items"], report["labelled"]) == (120, 40)
    mean = report["estimates"][0]
    assert mean["truth"] is None
    low, high = mean["ppi"]["low"], mean["ppi"]["high"]
    assert low < np.mean([truth[k] for k in unlabelled]) < high


def test_estimate_over_every_pair_counts_the_earlier_labels_for_certain(tmp_path, capsys) -> None:
    """The judge's qrels hold all 180 pairs, 60 of them graded before the draw. With only the
    new grades the 60 would pass as unlabelled pairs the draw could not pick: refused, naming
    the fix. With the earlier labels in the human file too they are labelled for certain: 100
    labelled, and the interval holds the mean over all 180."""
    out, imported, truth, labels = _drawn_and_graded(tmp_path, capsys)
    judge = tmp_path / "big_all.qrels"
    everything: dict[str, dict[str, int]] = {}
    for (q, d), g in labels["big"].items():
        everything.setdefault(q, {})[d] = int(g)
    write_qrels(everything, judge)
    base = [str(judge), "--sample", str(out), "--scale", "0-2", "--format", "json"]
    code = estimate.main([str(imported), *base])
    err = capsys.readouterr().err
    assert code == 2 and "60 pairs could not have been drawn" in err
    assert "Pass the human labels from before the draw too" in err
    both = tmp_path / "all_human.qrels"
    earlier = {key: g for key, g in truth.items() if int(key[0][1:]) < 10}
    combined: dict[str, dict[str, int]] = {}
    for (q, d), g in earlier.items():
        combined.setdefault(q, {})[d] = int(g)
    for line in imported.read_text(encoding="utf-8").splitlines():
        q, _, d, g = line.split()
        combined.setdefault(q, {})[d] = int(g)
    write_qrels(combined, both)
    code = estimate.main([str(both), *base])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and (report["items"], report["labelled"]) == (180, 100)
    mean = report["estimates"][0]["ppi"]
    assert mean["low"] < np.mean(list(truth.values())) < mean["high"]


def test_a_review_file_of_several_datasets_needs_one_named(tmp_path, capsys) -> None:
    out, imported, _, labels = _drawn_and_graded(tmp_path, capsys)
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    rows[-1]["dataset"] = "other"  # as if drawn from another dataset: not graded here
    moved = (rows[-1]["query_id"], rows[-1]["result_id"])
    kept = [
        line
        for line in imported.read_text(encoding="utf-8").splitlines()
        if (line.split()[0], line.split()[2]) != moved
    ]
    imported.write_text("\n".join(kept) + "\n", encoding="utf-8")
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    judge = tmp_path / "big.qrels"
    qrels: dict[str, dict[str, int]] = {}
    for (q, d), g in labels["big"].items():
        if int(q[1:]) >= 10:
            qrels.setdefault(q, {})[d] = int(g)
    write_qrels(qrels, judge)
    base = [str(imported), str(judge), "--sample", str(out), "--scale", "0-2"]
    assert estimate.main(base) == 2
    assert "holds rows of 2 datasets (other, toy); pass --dataset NAME" in capsys.readouterr().err
    assert estimate.main([*base, "--dataset", "toy", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["labelled"] == 39


def test_with_no_human_labels_yet_next_draws_the_first_items(tmp_path, capsys) -> None:
    """No item has a human grade, so no κ: plan alone says how to start, and --next draws
    the first items for people to grade from all of them."""
    rng = np.random.default_rng(2)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(5) for d in range(6)]
    labels = {key: int(rng.integers(0, 3)) for key in keys}
    sweep = tmp_path / "sweep"
    make_run(sweep, "big", labels, {key: {} for key in keys}, model="big", cost=0.01)
    code, _, err = run_cli(capsys, sweep)
    assert code == 2 and "with no human labels yet, --next N --out FILE draws" in err
    out = tmp_path / "first.csv"
    code, text, err = run_cli(capsys, sweep, "--next", 10, "--out", out)
    assert code == 0 and "no judge has a defined κ yet" in text
    assert f"{out}: toy: 10 of 30 unlabelled items" in err
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == 10 and {r["pool_size"] for r in rows} == {"30"}


def test_next_needs_an_out_file(tmp_path, capsys) -> None:
    sweep, _, _ = sweep_with_unlabelled(tmp_path)
    code, _, err = run_cli(capsys, sweep, "--next", 5)
    assert code == 2 and "--next N and --out FILE go together" in err
    code, _, err = run_cli(capsys, sweep, "--next", 5, "--out", tmp_path / "x.txt")
    assert code == 2 and "name a .csv or .jsonl file" in err


def test_nothing_to_draw_when_every_item_is_labelled(tmp_path, capsys) -> None:
    code, out, err = run_cli(capsys, toy_sweep(tmp_path), "--next", 5, "--out", tmp_path / "n.csv")
    assert code == 2 and out == ""
    assert "every item the judges graded already has a human grade" in err
