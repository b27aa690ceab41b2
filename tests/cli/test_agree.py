from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score

from mmjudge.cli import agree
from mmjudge.data.qrels import read_qrels
from mmjudge.studies import judge_files

LLMJUDGE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "llmjudge"

HUMAN = """\
q1 0 d1 3
q1 0 d2 2
q1 0 d3 0
q1 0 d4 1
q2 0 d1 0
q2 0 d5 2
q2 0 d6 3
q3 0 d7 1
q3 0 d8 0
q3 0 d9 2
"""
# judge A labels every human pair; judge B lacks two and has one pair humans did not judge
JUDGE_A = HUMAN.replace("d2 2", "d2 3").replace("d8 0", "d8 1").replace("d4 1", "d4 0")
JUDGE_B = """\
q1 0 d1 2
q1 0 d2 2
q1 0 d3 1
q2 0 d1 0
q2 0 d5 3
q2 0 d6 3
q3 0 d7 1
q3 0 d9 2
q3 0 d99 2
"""


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, text in {"human": HUMAN, "judge_a": JUDGE_A, "judge_b": JUDGE_B}.items():
        paths[name] = tmp_path / f"{name}.qrels"
        paths[name].write_text(text, encoding="utf-8")
    return paths


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = agree.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def aligned(human_path: Path, run_path: Path) -> pd.DataFrame:
    """Common pairs, computed independently of mmjudge."""
    names = ["query", "iteration", "doc", "grade"]
    human = pd.read_csv(human_path, sep=r"\s+", header=None, names=names, dtype={"doc": str})
    run = pd.read_csv(run_path, sep=r"\s+", header=None, names=names, dtype={"doc": str})
    return human.merge(run, on=["query", "doc"], suffixes=("_human", "_run"))


def test_json_output_matches_sklearn(files, capsys) -> None:
    code, out, err = run_cli(
        capsys, files["human"], files["judge_a"], files["judge_b"], "--format", "json"
    )
    assert code == 0 and err == ""
    report = json.loads(out)
    assert report["n_human"] == 10 and report["n_boot"] == 1000 and report["relevant_from"] == 2
    rows = {row["name"]: row for row in report["runs"]}
    assert list(rows) == ["judge_a", "judge_b"]
    assert (rows["judge_a"]["n"], rows["judge_a"]["missing"]) == (10, 0)
    assert (rows["judge_b"]["n"], rows["judge_b"]["missing"]) == (8, 2)
    for name in rows:
        pairs = aligned(files["human"], files[name])
        h, j = pairs["grade_human"], pairs["grade_run"]
        row = rows[name]
        for key, weights in [
            ("kappa", None),
            ("kappa_linear", "linear"),
            ("kappa_quadratic", "quadratic"),
        ]:
            interval = row[key]
            assert interval["estimate"] == pytest.approx(cohen_kappa_score(h, j, weights=weights))
            assert interval["low"] <= interval["estimate"] <= interval["high"]
        assert row["kappa_binary"] == pytest.approx(cohen_kappa_score(h >= 2, j >= 2))
        assert row["accuracy"] == pytest.approx(accuracy_score(h, j))
        assert row["alpha"] == pytest.approx(
            krippendorff.alpha(
                reliability_data=np.vstack([h, j]).astype(float), level_of_measurement="ordinal"
            )
        )


def test_table_and_csv_agree_with_json(files, capsys) -> None:
    args = [files["human"], files["judge_a"], files["judge_b"], "--n-boot", "200", "--seed", "3"]
    _, table, _ = run_cli(capsys, *args)
    _, text, _ = run_cli(capsys, *args, "--format", "csv")
    _, js, _ = run_cli(capsys, *args, "--format", "json")
    lines = table.splitlines()
    assert lines[0].split()[:3] == ["run", "n", "missing"]
    assert set(lines[1]) <= {"-", " "}
    assert [line.split()[0] for line in lines[2:4]] == ["judge_a", "judge_b"]
    assert lines[-1] == "scale 0–3 (from the human file); grades off the scale: error"
    assert lines[0].index("missing") + len("missing") == lines[2].index(" 0 ") + 2  # aligned

    rows = list(csv.DictReader(io.StringIO(text)))
    report = {row["name"]: row for row in json.loads(js)["runs"]}
    for row in rows:
        expected = report[row["run"]]
        assert int(row["n"]) == expected["n"] and int(row["missing"]) == expected["missing"]
        assert float(row["kappa"]) == pytest.approx(expected["kappa"]["estimate"])
        assert float(row["kappa_quadratic_high"]) == pytest.approx(
            expected["kappa_quadratic"]["high"]
        )
        assert float(row["alpha"]) == pytest.approx(expected["alpha"])
        estimate = f"{expected['kappa']['estimate']:.3f}"
        interval = f"[{expected['kappa']['low']:.3f}, {expected['kappa']['high']:.3f}]"
        assert f"{estimate} {interval}" in table


def test_same_seed_same_output_and_no_intervals_without_bootstrap(files, capsys) -> None:
    args = [files["human"], files["judge_b"], "--n-boot", "300"]
    assert run_cli(capsys, *args, "--seed", "5") == run_cli(capsys, *args, "--seed", "5")
    _, out, _ = run_cli(capsys, files["human"], files["judge_b"], "--n-boot", "0")
    assert "[" not in out.splitlines()[2]
    _, js, _ = run_cli(
        capsys, files["human"], files["judge_b"], "--n-boot", "0", "--format", "json"
    )
    kappa = json.loads(js)["runs"][0]["kappa"]
    assert kappa["low"] is None and kappa["high"] is None and kappa["estimate"] is not None


def test_relevant_from_changes_only_the_binarised_kappa(files, capsys) -> None:
    args = [files["human"], files["judge_a"], "--format", "json", "--n-boot", "0"]
    at_two = json.loads(run_cli(capsys, *args)[1])["runs"][0]
    at_one = json.loads(run_cli(capsys, *args, "--relevant-from", "1")[1])["runs"][0]
    pairs = aligned(files["human"], files["judge_a"])
    h, j = pairs["grade_human"], pairs["grade_run"]
    assert at_one["kappa_binary"] == pytest.approx(cohen_kappa_score(h >= 1, j >= 1))
    assert at_one["kappa"] == at_two["kappa"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("q1 0 d1 2\nq1 0 d2\n", ":2: expected 'query iteration doc grade'"),
        ("q1 0 d1 high\n", ":1: grade (field 4) must be an integer, got 'high'"),
    ],
)
def test_bad_run_file_is_one_line_on_stderr_and_exit_2(files, capsys, tmp_path, text, fragment):
    bad = tmp_path / "bad.qrels"
    bad.write_text(text)
    code, out, err = run_cli(capsys, files["human"], files["judge_a"], bad)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"{agree.PROG}: {bad}") and fragment in err


def test_missing_or_empty_human_file_exits_2(files, capsys, tmp_path) -> None:
    code, _, err = run_cli(capsys, tmp_path / "absent.qrels", files["judge_a"])
    assert code == 2 and "no such file" in err and err.count("\n") == 1
    empty = tmp_path / "empty.qrels"
    empty.write_text("\n")
    code, _, err = run_cli(capsys, empty, files["judge_a"])
    assert code == 2 and "no judgments" in err


def test_bad_arguments_exit_2(files, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        agree.main([str(files["human"]), str(files["judge_a"]), "--n-boot", "-1"])
    assert info.value.code == 2
    capsys.readouterr()
    assert agree.main([str(files["human"])]) == 2  # no run file (a folder needs none)
    assert capsys.readouterr().err.strip() == (
        "mmjudge agree: give RUN_QRELS after HUMAN_QRELS, or a sweep folder alone"
    )


def test_same_stem_runs_are_told_apart(files, capsys, tmp_path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    copy = other / files["judge_a"].name
    copy.write_text(JUDGE_A)
    _, js, _ = run_cli(capsys, files["human"], files["judge_a"], copy, "--format", "json")
    names = [row["name"] for row in json.loads(js)["runs"]]
    assert names == [str(files["judge_a"]), str(copy)]


def test_panels_are_scored_like_runs(files) -> None:
    alignment = judge_files.align(
        read_qrels(files["human"]),
        {"a": read_qrels(files["judge_a"]), "b": read_qrels(files["judge_b"])},
    )
    assert alignment.judges.shape == (2, 10)
    assert int(np.isnan(alignment.judges[1]).sum()) == 2
    rows = judge_files.score_alignment(
        alignment, panels={"first": lambda matrix: matrix[0]}, n_boot=100, seed=1
    )
    assert [row.name for row in rows] == ["a", "b", "panel:first"]
    assert rows[2].as_dict() | {"name": "a"} == rows[0].as_dict()


# --------------------------------------------------------------------------- real data


@pytest.fixture
def llmjudge() -> tuple[Path, list[Path]]:
    human = LLMJUDGE / "test_qrels_human.txt"
    runs = sorted((LLMJUDGE / "runs").glob("*.txt"))
    if not human.is_file() or not runs:
        pytest.skip(f"LLMJudge qrels not found under {LLMJUDGE} (shared data is not checked out)")
    return human, runs


def test_llmjudge_runs_against_sklearn(llmjudge, capsys) -> None:
    human, runs = llmjudge
    # scored as scikit-learn would: a stray grade is a category of its own
    args = [human, *runs, "--out-of-scale", "keep"]
    code, js, err = run_cli(capsys, *args, "--format", "json", "--n-boot", "500")
    assert code == 0 and err == ""
    report = {row["name"]: row for row in json.loads(js)["runs"]}
    assert list(report) == [run.stem for run in runs]
    for run in runs:
        pairs = aligned(human, run)
        h, j = pairs["grade_human"], pairs["grade_run"]
        row = report[run.stem]
        assert row["n"] == len(pairs)
        for key, weights in [
            ("kappa", None),
            ("kappa_linear", "linear"),
            ("kappa_quadratic", "quadratic"),
        ]:
            assert row[key]["estimate"] == pytest.approx(cohen_kappa_score(h, j, weights=weights))
            assert row[key]["low"] < row[key]["estimate"] < row[key]["high"]
        assert row["kappa_binary"] == pytest.approx(cohen_kappa_score(h >= 2, j >= 2))
        assert row["accuracy"] == pytest.approx(accuracy_score(h, j))

    code, table, _ = run_cli(capsys, *args, "--n-boot", "200")
    assert code == 0 and len(table.splitlines()) == 2 + len(runs) + 2
    code, text, _ = run_cli(capsys, *args, "--format", "csv", "--n-boot", "200")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert code == 0 and [row["run"] for row in rows] == [run.stem for run in runs]
    assert all(not math.isnan(float(row["kappa_low"])) for row in rows)


# --------------------------------------------------------------------------- panels

HUMAN_GRADES = [3, 2, 0, 1, 0, 2, 3, 1, 0, 2]
# judge A: 3 3 0 0 0 2 3 1 1 2; judge B: 2 2 1 - 0 3 3 1 - 2 (a missing label is ignored)
PANEL_LABELS = {
    "majority-max": [3, 3, 1, 0, 0, 3, 3, 1, 1, 2],
    "majority-min": [2, 2, 0, 0, 0, 2, 3, 1, 1, 2],
    "majority": [3, 3, 1, 0, 0, 3, 3, 1, 1, 2],  # a tie of two adjacent grades rounds up
    "mean": [3, 3, 1, 0, 0, 3, 3, 1, 1, 2],
}


def test_panel_rows_combine_every_run(files, capsys) -> None:
    args = [files["human"], files["judge_a"], files["judge_b"], "--format", "json"]
    hows = ["majority-max", "majority-min", "majority", "mean", "majority-random"]
    code, js, err = run_cli(capsys, *args, *(f"--panel={how}" for how in hows), "--n-boot", "50")
    assert code == 0 and err == ""
    report = json.loads(js)
    assert report["panels"] == hows
    rows = {row["name"]: row for row in report["runs"]}
    assert list(rows) == ["judge_a", "judge_b", *(f"panel:{how}" for how in hows)]
    for how, labels in PANEL_LABELS.items():
        row = rows[f"panel:{how}"]
        assert (row["n"], row["missing"]) == (10, 0)
        assert row["kappa"]["estimate"] == pytest.approx(cohen_kappa_score(HUMAN_GRADES, labels))
        assert row["accuracy"] == pytest.approx(accuracy_score(HUMAN_GRADES, labels))
    _, table, _ = run_cli(capsys, files["human"], files["judge_a"], "--panel", "mean")
    assert table.splitlines()[-3].startswith("panel:mean")


def test_unknown_panel_is_refused(files, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        agree.main([str(files["human"]), str(files["judge_a"]), "--panel", "median"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_llmjudge_panels(llmjudge, capsys) -> None:
    human, runs = llmjudge
    code, js, _ = run_cli(
        capsys,
        human,
        *runs,
        "--format",
        "json",
        "--n-boot",
        "0",
        "--panel",
        "majority",
        "--out-of-scale",
        "drop",
    )
    rows = {row["name"]: row for row in json.loads(js)["runs"]}
    panel = rows["panel:majority"]
    assert code == 0 and panel["n"] == 4423
    best = max(rows[run.stem]["kappa"]["estimate"] for run in runs)
    assert panel["kappa"]["estimate"] > best - 0.01


# --------------------------------------------------------------------------- the scale

OFF_SCALE_JUDGE = """\
q1 0 d1 3
q1 0 d2 5
q1 0 d3 0
q1 0 d4 1
q2 0 d1 0
q2 0 d5 2
q2 0 d6 10
q3 0 d7 1
q3 0 d8 0
q3 0 d9 -1
"""


@pytest.fixture
def stray(files, tmp_path: Path) -> Path:
    path = tmp_path / "stray.qrels"
    path.write_text(OFF_SCALE_JUDGE, encoding="utf-8")
    return path


def test_off_scale_grades_are_refused_naming_file_line_and_grade(files, stray, capsys) -> None:
    code, out, err = run_cli(capsys, files["human"], files["judge_a"], stray)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"{agree.PROG}: {stray}:2: grade 5 is outside the scale 0–3")
    assert "(from the human file; 3 such grades in the file)" in err
    assert "--out-of-scale drop, clip or keep" in err


def test_off_scale_grades_dropped_clipped_or_kept_are_counted(files, stray, capsys) -> None:
    def row(how: str) -> dict:
        args = [files["human"], stray, "--out-of-scale", how, "--format", "json", "--n-boot", "0"]
        code, js, err = run_cli(capsys, *args)
        assert code == 0 and err == ""
        report = json.loads(js)
        assert report["out_of_scale"] == how and report["scale"] == [0, 1, 2, 3]
        return report["runs"][0]

    dropped, clipped, kept = row("drop"), row("clip"), row("keep")
    assert dropped["off_scale"] == clipped["off_scale"] == kept["off_scale"] == 3
    assert (dropped["n"], dropped["missing"]) == (7, 3)
    assert (clipped["n"], clipped["missing"]) == (10, 0)
    human = [3, 2, 0, 1, 0, 2, 3, 1, 0, 2]
    clipped_labels = [3, 3, 0, 1, 0, 2, 3, 1, 0, 0]  # 5 and 10 → 3, -1 → 0
    assert clipped["kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score(human, clipped_labels, labels=[0, 1, 2, 3])
    )
    keep = [i for i in range(10) if i not in (1, 6, 9)]
    assert dropped["accuracy"] == pytest.approx(
        accuracy_score([human[i] for i in keep], [clipped_labels[i] for i in keep])
    )
    # kept: each stray grade is a category of its own, as scikit-learn would count it
    kept_labels = [3, 5, 0, 1, 0, 2, 10, 1, 0, -1]
    assert kept["kappa_linear"]["estimate"] == pytest.approx(
        cohen_kappa_score(human, kept_labels, weights="linear", labels=[-1, 0, 1, 2, 3, 5, 10])
    )
    _, table, _ = run_cli(capsys, files["human"], stray, "--out-of-scale", "drop")
    assert table.splitlines()[0].split()[:4] == ["run", "n", "missing", "off_scale"]
    assert table.splitlines()[2].split()[:4] == ["stray", "7", "3", "3"]
    assert table.splitlines()[-1] == "scale 0–3 (from the human file); grades off the scale: drop"


def test_scale_is_given_or_spans_the_human_grades(files, tmp_path: Path, capsys) -> None:
    # the human file's grades span 0..3 even where a middle grade is unused
    gappy = tmp_path / "gappy.qrels"
    gappy.write_text("q1 0 d1 0\nq1 0 d2 3\nq2 0 d1 3\n", encoding="utf-8")
    judge = tmp_path / "judge.qrels"
    judge.write_text("q1 0 d1 1\nq1 0 d2 2\nq2 0 d1 3\n", encoding="utf-8")
    _, js, _ = run_cli(capsys, gappy, judge, "--format", "json", "--n-boot", "0")
    report = json.loads(js)
    assert report["scale"] == [0, 1, 2, 3] and report["runs"][0]["off_scale"] == 0
    assert report["relevant_from"] == 2
    _, js, _ = run_cli(capsys, gappy, judge, "--format", "json", "--scale", "0-4", "--n-boot", "0")
    assert json.loads(js)["scale"] == [0, 1, 2, 3, 4]
    assert json.loads(js)["scale_source"] == "set by --scale"
    code, _, err = run_cli(capsys, files["human"], files["judge_a"], "--scale", "0,1,2")
    assert code == 2 and err.count("\n") == 1
    assert f"{files['human']}:1: human grade 3 is outside --scale 0–2" in err
    with pytest.raises(SystemExit):
        agree.main([str(files["human"]), str(files["judge_a"]), "--scale", "zero"])
    assert "expected whole grades" in capsys.readouterr().err


def test_llmjudge_stray_grades(llmjudge, capsys) -> None:
    human, runs = llmjudge
    llama = next(run for run in runs if run.stem == "RMITIR-llama70B")
    code, _, err = run_cli(capsys, human, llama)
    assert code == 2
    assert f"{llama}:2449: grade 5 is outside the scale 0–3" in err and "2 such grades" in err
    code, js, _ = run_cli(
        capsys, human, llama, "--out-of-scale", "drop", "--format", "json", "--n-boot", "0"
    )
    row = json.loads(js)["runs"][0]
    assert code == 0 and (row["n"], row["off_scale"]) == (4421, 2)


# --------------------------------------------------------------------------- system rankings

TREC_TINY = Path(__file__).parents[1] / "fixtures" / "trec_tiny"
# Human qrels (trec_tiny): q1 d1=3 d2=0; q2 d3=2 d1=1. The judge swaps q1's grades.
TINY_JUDGE = "q1 0 d1 0\nq1 0 d2 3\nq2 0 d3 2\nq2 0 d1 1\n"
TINY_RUNS = {
    "sysA": "q1 Q0 d1 1 9 A\nq1 Q0 d2 2 8 A\nq2 Q0 d3 1 9 A\nq2 Q0 d1 2 8 A\n",
    "sysB": "q1 Q0 d2 1 9 B\nq1 Q0 d1 2 8 B\nq2 Q0 d3 1 9 B\nq2 Q0 d1 2 8 B\n",
    "sysC": "q1 Q0 d1 1 9 C\nq1 Q0 d2 2 8 C\nq2 Q0 d1 1 9 C\nq2 Q0 d3 2 8 C\n",
}


@pytest.fixture
def tiny_runs(tmp_path: Path) -> tuple[Path, Path]:
    judge = tmp_path / "judge.qrels"
    judge.write_text(TINY_JUDGE, encoding="utf-8")
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, text in TINY_RUNS.items():
        (runs / f"{name}.txt").write_text(text, encoding="utf-8")
    return judge, runs


def test_system_rankings_on_tiny_runs_by_hand(tiny_runs, capsys) -> None:
    # P@1 counting grades >= 2 as relevant, per system (mean over q1, q2):
    #   humans: A (1 + 1)/2 = 1, B (0 + 1)/2 = 0.5, C (1 + 0)/2 = 0.5
    #   judge:  A (0 + 1)/2 = 0.5, B (1 + 1)/2 = 1, C (0 + 0)/2 = 0
    # τ-b: (A,B) discordant, (A,C) concordant, (B,C) tied for the humans → (1 − 1)/√(2·3) = 0
    # ρ: ranks (3, 1.5, 1.5) against (2, 3, 1) → 0
    # RBO (p = 0.9): orders A,B,C and B,A,C; overlap 0, 2/2, 3/3 at depths 1..3:
    #   0.729 + (0.1 / 0.9)·(0.81 + 0.729) = 0.9
    judge, runs = tiny_runs
    human = TREC_TINY / "qrels.txt"
    args = [human, judge, "--runs", runs, "--measure", "P(rel=2)@1", "--n-boot", "0"]
    code, js, err = run_cli(capsys, *args, "--format", "json")
    assert code == 0 and err == ""
    report = json.loads(js)
    assert report["systems"] == ["sysA", "sysB", "sysC"]
    ranking = report["runs"][0]["rankings"]["P(rel=2)@1"]
    assert ranking["human_scores"] == {"sysA": 1.0, "sysB": 0.5, "sysC": 0.5}
    assert ranking["judge_scores"] == {"sysA": 0.5, "sysB": 1.0, "sysC": 0.0}
    assert ranking["kendall_tau"] == pytest.approx(0.0, abs=1e-12)
    assert ranking["spearman_rho"] == pytest.approx(0.0, abs=1e-12)
    assert ranking["rbo"] == pytest.approx(0.9)

    code, table, _ = run_cli(capsys, *args)
    lines = table.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("system rankings"))
    assert lines[title + 1].split() == ["run", "measure", "systems", "tau", "rho", "rbo"]
    assert lines[title + 3].split() == ["judge", "P(rel=2)@1", "3", "0.000", "0.000", "0.900"]
    code, text, _ = run_cli(capsys, *args, "--format", "csv")
    row = next(csv.DictReader(io.StringIO(text)))
    assert float(row["P(rel=2)@1 rbo"]) == pytest.approx(0.9)


def test_system_rankings_default_measures_and_same_labels(tiny_runs, capsys) -> None:
    _, runs = tiny_runs
    human = TREC_TINY / "qrels.txt"
    code, js, _ = run_cli(capsys, human, human, "--runs", runs, "--format", "json")
    rankings = json.loads(js)["runs"][0]["rankings"]
    assert code == 0 and list(rankings) == ["nDCG@10", "P(rel=2)@10"]
    assert all(r["rbo"] == pytest.approx(1.0) for r in rankings.values())
    assert rankings["nDCG@10"]["kendall_tau"] == pytest.approx(1.0)


def test_system_runs_problems_are_one_line_errors(tiny_runs, tmp_path: Path, capsys) -> None:
    judge, runs = tiny_runs
    human = TREC_TINY / "qrels.txt"
    code, _, err = run_cli(capsys, human, judge, "--runs", tmp_path / "nowhere")
    assert code == 2 and "not a directory of TREC run files" in err
    code, _, err = run_cli(capsys, human, judge, "--runs", runs, "--measure", "nDGC@10")
    assert code == 2 and "--measure 'nDGC@10' is not an ir_measures measure" in err
    (runs / "sysD.txt").write_text("q1 Q0 d1 first 9 D\n", encoding="utf-8")
    code, _, err = run_cli(capsys, human, judge, "--runs", runs)
    assert code == 2 and err.count("\n") == 1 and "sysD.txt:1: rank (field 4)" in err


# --------------------------------------------------------------------------- slices


@pytest.mark.slow  # over a second
def test_slices_partition_the_pairs_and_score_each_as_by_hand(llmjudge, tmp_path, capsys) -> None:
    human, runs = llmjudge
    run = runs[0]
    queries = sorted({line.split()[0] for line in human.read_text().splitlines() if line})
    kinds = {q: ("short", "long", "mixed")[i % 3] for i, q in enumerate(queries)}
    table = tmp_path / "slices.tsv"
    table.write_text("".join(f"{q}\t{kind}\n" for q, kind in kinds.items()))
    args = [human, run, "--slices", table, "--out-of-scale", "keep", "--n-boot", "200"]
    code, out, err = run_cli(capsys, *args, "--format", "json")
    assert code == 0 and err == ""
    report = json.loads(out)
    found = report["by_slice"][run.stem]
    pairs = aligned(human, run)
    total = sum(s["n_items"] for s in found["slices"].values())
    assert total == report["runs"][0]["n"] == len(pairs)
    for kind, score in found["slices"].items():
        mine = pairs[pairs["query"].map(kinds) == kind]
        assert score["n_items"] == len(mine)
        expected = cohen_kappa_score(mine["grade_human"], mine["grade_run"])
        assert score["kappa"]["estimate"] == pytest.approx(expected)
    assert found["worst"] in kinds.values() and 0 < found["p_value"] <= 1
    code, text, _ = run_cli(capsys, *args)
    assert code == 0 and "by slice:" in text and "worst" in text


def test_a_bad_slices_file_names_its_line(files, tmp_path, capsys) -> None:
    table = tmp_path / "slices.tsv"
    table.write_text("q1\tshort\nq2 long\n")
    code, _out, err = run_cli(capsys, files["human"], files["judge_a"], "--slices", table)
    assert code == 2
    assert f"{table}:2: expected 'query<TAB>doc<TAB>slice'" in err


def as_jsonl(path: Path, qrels: str, run: str | None = None) -> Path:
    """``qrels`` written as the JSON lines the replay judge reads (with a ``judge`` field)."""
    rows = []
    for line in qrels.splitlines():
        query, _, doc, grade = line.split()
        row: dict[str, object] = {"query_id": query, "result_id": doc, "grade": int(grade)}
        if run is not None:
            row["judge"] = run
        rows.append(json.dumps(row) + "\n")
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(rows)
    return path


def test_the_replay_judges_json_lines_are_read_like_qrels(files, capsys, tmp_path) -> None:
    human = as_jsonl(tmp_path / "human.jsonl", HUMAN)
    judge_a = as_jsonl(tmp_path / "judge_a.jsonl", JUDGE_A)
    _, from_qrels, _ = run_cli(capsys, files["human"], files["judge_a"], "--format", "json")
    code, from_jsonl, err = run_cli(capsys, human, judge_a, "--format", "json")
    assert code == 0 and err == ""
    assert json.loads(from_jsonl)["runs"] == json.loads(from_qrels)["runs"]
    both = as_jsonl(as_jsonl(tmp_path / "both.jsonl", JUDGE_A, "a"), JUDGE_B, "b")
    _, out, _ = run_cli(capsys, human, both, "--format", "json")
    rows = {row["name"]: (row["n"], row["missing"]) for row in json.loads(out)["runs"]}
    assert rows == {"both:a": (10, 0), "both:b": (8, 2)}
    code, _, err = run_cli(capsys, both, judge_a)
    assert code == 2 and err.count("\n") == 1
    assert "holds 2 runs (the run/judge field): a, b; give a file of one" in err


# -- a trained judge's training pairs (``--trained``) ------------------------------------------

# q1, q2 were trained on (the judge repeats the people there); on q3, q4 it swaps grades 1 and 2.
TRAINED_HUMAN = "".join(f"{q} 0 {q}d{g} {g}\n" for q in ("q1", "q2", "q3", "q4") for g in (0, 1, 2))
TRAINED_JUDGE = "".join(
    f"{q} 0 {q}d{g} {g if q in ('q1', 'q2') else (0, 2, 1)[g]}\n"
    for q in ("q1", "q2", "q3", "q4")
    for g in (0, 1, 2)
)


def trained_folder(tmp_path: Path) -> Path:
    from mmjudge.judges.distilled_folder import write_manifest
    from tests.judges.test_distilled_folder import manifest

    folder = tmp_path / "student"
    folder.mkdir()
    items = [f"{q}\t{q}d{g}" for q in ("q1", "q2") for g in (0, 1, 2)]
    write_manifest(folder, manifest(trained_items=items, held_out_queries=["q3", "q4"]))
    return folder


def test_a_trained_judges_training_pairs_are_left_out(tmp_path: Path, capsys) -> None:
    human, judge = tmp_path / "human.qrels", tmp_path / "student.qrels"
    human.write_text(TRAINED_HUMAN, encoding="utf-8")
    judge.write_text(TRAINED_JUDGE, encoding="utf-8")
    # All 12 pairs: 8 agree, each grade a third on both sides: κ = (8/12 − 1/3) / (2/3) = 0.5.
    code, out, _ = run_cli(capsys, human, judge, "--format", "json", "--n-boot", "0")
    everything = json.loads(out)
    assert code == 0 and everything["runs"][0]["kappa"]["estimate"] == pytest.approx(0.5)
    assert everything["left_out"] == 0
    # The 6 held-out pairs: 2 agree, marginals still a third each: κ = (2/6 − 1/3) / (2/3) = 0.
    folder = trained_folder(tmp_path)
    code, out, _ = run_cli(capsys, human, judge, "--trained", folder, "--format", "json")
    held = json.loads(out)
    assert code == 0 and held["runs"][0]["kappa"]["estimate"] == pytest.approx(0.0)
    assert held["runs"][0]["n"] == 6 and held["n_human"] == 6 and held["left_out"] == 6
    assert held["trained"] == [str(folder)]
    code, out, _ = run_cli(capsys, human, judge, "--trained", folder)
    assert code == 0
    assert f"left out: 6 human pairs the trained judge ({folder}) learnt from" in out
    assert "every row is scored on the 6 held-out pairs" in out


def test_a_folder_that_is_no_trained_judge_is_one_line(tmp_path: Path, capsys) -> None:
    human = tmp_path / "human.qrels"
    human.write_text(TRAINED_HUMAN, encoding="utf-8")
    code, _, err = run_cli(capsys, human, human, "--trained", tmp_path)
    assert code == 2 and "not a distilled judge's folder" in err
    assert len(err.strip().splitlines()) == 1
