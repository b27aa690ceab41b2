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
from mmjudge.display import usd
from mmjudge.estimation import pilot
from mmjudge.metrics import scoring
from mmjudge.metrics.jackknife import kappa_jackknife, paired_kappa_jackknife
from mmjudge.store import completed_runs
from mmjudge.store.plan_file import plan_json, read_plan
from mmjudge.studies.members import human_consensus
from mmjudge.studies.reference_grades import compare_runs
from tests.fake_runs import make_run
from tests.helpers import REPO_ROOT, run_sweep


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
    assert dataset["too_small"] is None and dataset["plan_confidence"] == 0.95
    kept = tmp_path / "plan.json"  # what a user keeps reads back through the one reader
    kept.write_text(out, encoding="utf-8")
    assert [j.judge for j in read_plan(kept).datasets[0].judges] == [
        j["judge"] for j in dataset["judges"]
    ]
    assert json.loads(plan_json(read_plan(kept))) == json.loads(out)  # every field
    judges = {j["judge"].split("/")[0]: j for j in dataset["judges"]}
    assert list(judges) == ["big", "mid", "tiny"]  # by κ, highest first
    runs = {run.name.split("/")[0]: run for run in completed_runs(sweep)}
    for name, entry in judges.items():
        run = runs[name]
        keys = list(run.rows)
        queries = np.array([k[0] for k in keys], dtype=object)
        reference, labels = human_consensus([run], keys), run.labels(keys)
        score = scoring.score_judge(queries, reference, labels, run.grades)
        assert entry["bootstrap_half_width"] == pytest.approx(
            (score.kappa.high - score.kappa.low) / 2
        )
        found = kappa_jackknife(queries, reference, labels, run.grades)
        assert entry["too_small"] is None
        assert entry["half_width"] == pytest.approx(found.half_width)
        assert entry["standard_error"] == pytest.approx(found.standard_error)
        assert entry["degrees_of_freedom"] == pytest.approx(29)  # 30 queries of 6 items
        spread = pilot.PilotSpread(found.estimate, found.standard_error, 29, 180, 30)
        wide = pilot.pilot_widening(29)
        assert entry["pilot_widening"] == pytest.approx(wide)
        planned = pilot.queries_for_half_width(spread, 0.04, wide)
        assert entry["needed_items"] == math.ceil(planned * 6)
        assert entry["needed_items_central"] == math.ceil(
            pilot.queries_for_half_width(spread, 0.04) * 6
        )
        assert entry["needed_queries"] == math.ceil(entry["needed_items"] / 6)
        # every item of the pilot's 30 queries is labelled: only new queries narrow κ
        assert entry["reachable_half_width"] == pytest.approx(found.half_width)
        assert entry["needs_more_queries"] == (found.half_width > 0.04)
        assert entry["pool_queries"] == 30
        assert entry["more_items"] == max(0, entry["needed_items"] - 180)
        assert entry["usd"] == pytest.approx(entry["more_items"] * 0.5)
        assert entry["usd_per_million"] == pytest.approx(run.usd_per_million)
    sep = dataset["separation"]
    assert (sep["best"].split("/")[0], sep["runner_up"].split("/")[0]) == ("big", "mid")
    keys = list(runs["big"].rows)
    paired = paired_kappa_jackknife(
        np.array([k[0] for k in keys], dtype=object),
        human_consensus([runs["big"]], keys),
        runs["big"].labels(keys),
        runs["mid"].labels(keys),
        runs["big"].grades,
    )
    assert sep["too_small"] is None
    assert sep["difference"] == pytest.approx(paired.estimate)
    assert sep["half_width"] == pytest.approx(paired.half_width)
    spread = pilot.PilotSpread(paired.estimate, paired.standard_error, 29, 180, 30)
    planned = pilot.queries_for_half_width(spread, abs(paired.estimate), pilot.pilot_widening(29))
    assert sep["needed_items"] == math.ceil(planned * 6)
    found = compare_runs(runs["big"], runs["mid"], n_boot=1000, seed=0, level=0.95)
    assert found is not None
    assert sep["bootstrap_half_width"] == pytest.approx((found.high - found.low) / 2)


def test_table_says_what_separating_costs(tmp_path, capsys) -> None:
    sweep = toy_sweep(tmp_path)
    code, out, _ = run_cli(capsys, sweep, "--cost-per-label", 0.5)
    assert code == 0
    assert "κ to ±0.05 (95% interval, jackknife over queries with t" in out
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
    assert "a budget of $100 for the mean grade" in table


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


def small_pilot(tmp_path: Path, n_labels: int, n_queries: int, seed: int = 0) -> Path:
    """Two judges over 10 queries of 6 items; people graded ``n_labels`` items spread over
    the first ``n_queries`` queries."""
    rng = np.random.default_rng(seed)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(10) for d in range(max(6, n_labels))]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    queries = [f"q{q:02d}" for q in range(n_queries)]
    labelled = [(queries[i % n_queries], f"d{i // n_queries}") for i in range(n_labels)]
    human = {key: ({"x": truth[key]} if key in labelled else {}) for key in keys}
    sweep = tmp_path / f"sweep_{n_labels}_{n_queries}_{seed}"
    for name, rate, cost in (("big", 0.2, 0.01), ("mid", 0.4, 0.002)):
        r = np.random.default_rng(seed + len(name))
        labels = {k: (int(r.integers(0, 3)) if r.random() < rate else v) for k, v in truth.items()}
        make_run(sweep, name, labels, human, model=name, cost=cost)
    return sweep


@pytest.mark.parametrize(
    ("n_labels", "n_queries", "said"),
    [
        (2, 1, "the pilot has 2 human labels in 1 query"),
        (5, 1, "the pilot has 5 human labels in 1 query"),
        (20, 2, "the pilot has 20 human labels in 2 queries"),
    ],
)
@pytest.mark.parametrize("budget", [False, True])
def test_a_pilot_too_small_is_refused_in_one_line(
    tmp_path, capsys, n_labels, n_queries, said, budget
) -> None:
    """Before, 2 labels with a budget ended in ppi_py's traceback (and without one said "no
    number of labels tells them apart"), 5 labels in one query said "Δκ 0.238 ± 0.000 …
    already told apart", and 20 labels in 2 queries planned 28,000 items."""
    extra = ["--cost-per-label", 0.5, "--budget", 100] if budget else []
    code, out, err = run_cli(capsys, small_pilot(tmp_path, n_labels, n_queries), *extra)
    assert code == 2 and out == ""
    assert err.startswith(f"mmjudge plan: toy: {said}: ") and err.count("\n") == 1
    assert err.rstrip().endswith(pilot.WOULD_DO)


def test_a_refused_dataset_is_in_the_json_with_why(tmp_path, capsys) -> None:
    sweep = small_pilot(tmp_path, 20, 2)
    out = tmp_path / "next.csv"
    code, text, _ = run_cli(capsys, sweep, "--format", "json", "--next", 5, "--out", out)
    assert code == 0  # --next still draws items for people to grade
    (dataset,) = json.loads(text)["datasets"]
    assert "20 human labels in 2 queries" in dataset["too_small"]
    assert dataset["judges"] == [] and dataset["separation"] is None


def test_a_judge_with_too_few_grades_is_named_and_the_rest_planned(tmp_path, capsys) -> None:
    """One judge answered only two queries' items: it is not planned (one line says why),
    the other is, and there is no pair to compare."""
    rng = np.random.default_rng(4)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(8) for d in range(6)]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    human = {key: {"x": truth[key]} for key in keys}
    sweep = tmp_path / "sweep"
    noisy = {k: (int(rng.integers(0, 3)) if rng.random() < 0.3 else v) for k, v in truth.items()}
    make_run(sweep, "big", noisy, human, model="big", cost=0.01)
    few = {k: (v if int(k[0][1:]) < 2 else None) for k, v in noisy.items()}
    make_run(sweep, "few", few, human, model="few", cost=0.001)
    code, out, _ = run_cli(capsys, sweep)
    assert code == 0
    assert "few/default/text: not planned: the pilot has 12 human labels in 2 queries" in out
    assert "best against runner-up: fewer than two judges with a κ to plan from" in out


@pytest.mark.slow
def test_no_pilot_of_2_to_20_labels_ends_in_a_traceback(tmp_path, capsys) -> None:
    """Every pilot of 2 to 20 labels, over 1 to 6 queries, with and without a budget: a plan
    or one line that refuses it (exit 2), never a traceback, never "± 0.000"."""
    for n_labels in range(2, 21):
        for n_queries in sorted({1, 2, 4, min(6, n_labels)}):
            sweep = small_pilot(tmp_path, n_labels, n_queries, seed=n_labels)
            for extra in ([], ["--cost-per-label", 0.5, "--budget", 100]):
                for form in ("table", "json"):
                    code, out, err = run_cli(
                        capsys, sweep, *extra, "--format", form, "--n-boot", 20
                    )
                    where = (n_labels, n_queries, extra, form)
                    assert code in (0, 2), where
                    assert code == 0 or (out == "" and err.count("\n") == 1), (where, err)
                    assert "± 0.000" not in out, where


@pytest.mark.slow
def test_the_worked_example_in_the_docs_is_what_the_command_prints(tmp_path, capsys) -> None:
    """docs/planning.md's worked example (the free demo grid, ``--cost-per-label 0.40
    --budget 200``) quotes the lexical judge's row, its budget split and the pair's line:
    every number it quotes is in what the command prints."""
    result = run_sweep(tmp_path, "-m", "model=lexical", "modality=text,mm", "prompt=default,terse")
    assert result.returncode == 0, result.stderr
    (sweep,) = (tmp_path / "results" / "sweeps").iterdir()
    code, out, _ = run_cli(capsys, sweep, "--cost-per-label", 0.40, "--budget", 200)
    assert code == 0
    docs = (REPO_ROOT / "docs" / "planning.md").read_text(encoding="utf-8")
    example = " ".join(docs[docs.index("On the free demo grid") :].split("\n\n")[0].split())
    code, text, _ = run_cli(capsys, sweep, "--cost-per-label", 0.40, "--format", "json")
    entry = json.loads(text)["datasets"][0]["judges"][0]
    row = next(line for line in out.splitlines() if line.startswith("lexical/default/text "))
    split = [line for line in out.splitlines() if line.startswith("lexical/default/text ")][1]
    quoted = {
        "κ": f"{entry['kappa']:.3f} ± {entry['half_width']:.3f}",
        "the report's bootstrap": f"± {entry['bootstrap_half_width']:.3f}",
        "items": f"{entry['needed_items']:,} items ({entry['needed_queries']:,} queries)",
        "central": f"against {entry['needed_items_central']:,} from the pilot's own spread",
        "analytic": f"{entry['needed_items_analytic']:,} from the analytic error",
        "design effect": f"design effect {entry['design_effect']:.1f}",
        "more": f"{entry['more_items']:,} more items costing {usd(entry['usd'])}",
    }
    for what, text in quoted.items():
        assert text in example, (what, text, example)
    for number in ("0.536", "1,181", "148", "729", "634", "941", "$376"):
        assert number in row, (number, row)
    for number in ("500", "every item", "1,169", "0.757"):
        assert number in split and number in example, (number, split)
    assert "no number of labels tells them apart" in out


def test_a_judge_that_agrees_with_every_label_is_refused_not_certain(tmp_path, capsys) -> None:
    """κ is 1 whichever query is left out: no "± 0.000" and no plan of zero labels; with no
    other judge planned, the command refuses in one line."""
    keys = [(f"q{q:02d}", f"d{d}") for q in range(5) for d in range(6)]
    truth = {key: (int(key[0][1:]) + int(key[1][1:])) % 3 for key in keys}
    sweep = tmp_path / "sweep"
    make_run(sweep, "big", truth, {key: {"x": g} for key, g in truth.items()}, model="big")
    code, out, err = run_cli(capsys, sweep)
    assert code == 2 and out == ""
    assert err.startswith("mmjudge plan: big/default/text: κ is 1.000 whichever of the pilot's")
    assert err.count("\n") == 1 and "± 0.000" not in err


def test_entries_too_small_to_plan_carry_the_same_keys(tmp_path, capsys) -> None:
    """Two judges each planned from 6 queries share only 2 (the pair is refused), and a
    third answered too little (refused): every entry has the keys a planned one has."""
    rng = np.random.default_rng(6)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(10) for d in range(6)]
    truth = {key: int(rng.integers(0, 3)) for key in keys}
    human = {key: {"x": truth[key]} for key in keys}

    def noisy(lo: int, hi: int) -> dict:
        return {
            k: (int(rng.integers(0, 3)) if rng.random() < 0.3 else v)
            if lo <= int(k[0][1:]) < hi
            else None
            for k, v in truth.items()
        }

    sweep = tmp_path / "sweep"
    make_run(sweep, "big", noisy(0, 6), human, model="big", cost=0.01)
    make_run(sweep, "mid", noisy(4, 10), human, model="mid", cost=0.002)
    make_run(sweep, "few", noisy(0, 2), human, model="few", cost=0.001)
    code, out, _ = run_cli(capsys, sweep, "--format", "json")
    assert code == 0
    (dataset,) = json.loads(out)["datasets"]
    sep = dataset["separation"]
    assert "12 human labels in 2 queries" in sep["too_small"] and sep["separated"] is False
    refused = [j for j in dataset["judges"] if j["too_small"]]
    planned = [j for j in dataset["judges"] if not j["too_small"]]
    assert len(refused) == 1 and len(planned) == 2
    assert list(refused[0]) == list(planned[0])
    kept = tmp_path / "plan.json"  # the refusals read back through the one reader
    kept.write_text(out, encoding="utf-8")
    back = read_plan(kept).datasets[0]
    assert back.separation is not None and back.separation.too_small == sep["too_small"]
    assert [j.too_small for j in back.judges] == [j["too_small"] for j in dataset["judges"]]
    assert json.loads(plan_json(read_plan(kept))) == json.loads(out)
    code, out, _ = run_cli(capsys, toy_sweep(tmp_path), "--format", "json")
    assert list(json.loads(out)["datasets"][0]["separation"]) == list(sep)
