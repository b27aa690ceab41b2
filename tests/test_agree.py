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

from mmjudge import agree
from mmjudge.qrels import read_qrels

LLMJUDGE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmjudge"

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
    assert [line.split()[0] for line in lines[2:]] == ["judge_a", "judge_b"]
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
    with pytest.raises(SystemExit):
        agree.main([str(files["human"])])  # no run file
    capsys.readouterr()


def test_same_stem_runs_are_told_apart(files, capsys, tmp_path) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    copy = other / files["judge_a"].name
    copy.write_text(JUDGE_A)
    _, js, _ = run_cli(capsys, files["human"], files["judge_a"], copy, "--format", "json")
    names = [row["name"] for row in json.loads(js)["runs"]]
    assert names == [str(files["judge_a"]), str(copy)]


def test_panels_are_scored_like_runs(files) -> None:
    alignment = agree.align(
        read_qrels(files["human"]),
        {"a": read_qrels(files["judge_a"]), "b": read_qrels(files["judge_b"])},
    )
    assert alignment.judges.shape == (2, 10)
    assert int(np.isnan(alignment.judges[1]).sum()) == 2
    rows = agree.score_alignment(
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
    code, js, err = run_cli(capsys, human, *runs, "--format", "json", "--n-boot", "500")
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

    code, table, _ = run_cli(capsys, human, *runs, "--n-boot", "200")
    assert code == 0 and len(table.splitlines()) == 2 + len(runs)
    code, text, _ = run_cli(capsys, human, *runs, "--format", "csv", "--n-boot", "200")
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
    assert table.splitlines()[-1].startswith("panel:mean")


def test_unknown_panel_is_refused(files, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        agree.main([str(files["human"]), str(files["judge_a"]), "--panel", "median"])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_llmjudge_panels(llmjudge, capsys) -> None:
    human, runs = llmjudge
    code, js, _ = run_cli(
        capsys, human, *runs, "--format", "json", "--n-boot", "0", "--panel", "majority"
    )
    rows = {row["name"]: row for row in json.loads(js)["runs"]}
    panel = rows["panel:majority"]
    assert code == 0 and panel["n"] == 4423
    best = max(rows[run.stem]["kappa"]["estimate"] for run in runs)
    assert panel["kappa"]["estimate"] > best - 0.01
