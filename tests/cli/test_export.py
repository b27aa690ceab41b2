"""Labels out as TREC qrels: ``mmjudge export``, round-tripped through
``mmjudge.agree`` and ``ir_measures``."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest

from mmjudge.cli import agree, export
from mmjudge.data.qrels import read_qrels
from mmjudge.ensembles.panels import build_panel
from tests.fake_runs import make_run

HUMAN = {
    ("q1", "d1"): {"a": 2, "b": 2},
    ("q1", "d2"): {"a": 0, "b": 1},
    ("q1", "d3"): {"a": 1, "b": 0},
    ("q2", "d1"): {"a": 2, "b": 1},
    ("q2", "d4"): {"a": 0, "b": 0},
}
JUDGE = {
    ("q1", "d1"): 2,
    ("q1", "d2"): 1,
    ("q1", "d3"): None,  # unparseable: no grade, left out
    ("q2", "d1"): 1,
    ("q2", "d4"): 0,
}
RUNS = {
    "sysA": "q1 Q0 d1 1 9 A\nq1 Q0 d2 2 8 A\nq1 Q0 d3 3 7 A\nq2 Q0 d1 1 9 A\nq2 Q0 d4 2 8 A\n",
    "sysB": "q1 Q0 d2 1 9 B\nq1 Q0 d1 2 8 B\nq1 Q0 d3 3 7 B\nq2 Q0 d4 1 9 B\nq2 Q0 d1 2 8 B\n",
    "sysC": "q1 Q0 d3 1 9 C\nq1 Q0 d2 2 8 C\nq1 Q0 d1 3 7 C\nq2 Q0 d1 1 9 C\nq2 Q0 d4 2 8 C\n",
}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    # One answer in five holds no grade: allowed here, so the cell is analysed (partial).
    return make_run(tmp_path / "sweep", "cell", JUDGE, HUMAN, model="m1", max_unparseable_rate=0.5)


def _main(capsys, *args: object) -> tuple[int, str, str]:
    code = export.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_labels_as_qrels_in_file_order(run_dir: Path, capsys) -> None:
    code, out, err = _main(capsys, run_dir)
    assert code == 0 and err == ""
    assert out == "q1 0 d1 2\nq1 0 d2 1\nq2 0 d1 1\nq2 0 d4 0\n"


def test_human_consensus_one_assessor_and_binarised(run_dir: Path, capsys) -> None:
    # Consensus is the lower median: (0, 1) -> 0, (2, 1) -> 1.
    _, out, _ = _main(capsys, run_dir, "--labels", "human")
    assert out == "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 0\nq2 0 d1 1\nq2 0 d4 0\n"
    _, out, _ = _main(capsys, run_dir, "--labels", "human:b")
    assert out.splitlines()[1] == "q1 0 d2 1"
    # The scale's relevant_from is 1 for these runs; --binarise 2 counts only grade 2.
    _, out, _ = _main(capsys, run_dir, "--binarise")
    assert out == "q1 0 d1 1\nq1 0 d2 1\nq2 0 d1 1\nq2 0 d4 0\n"
    _, out, _ = _main(capsys, run_dir, "--binarise", "2")
    assert out == "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 0\nq2 0 d4 0\n"


def test_bad_input_is_one_line_and_exit_2(run_dir: Path, tmp_path: Path, capsys) -> None:
    code, _, err = _main(capsys, run_dir, "--labels", "human:zoe")
    assert code == 2 and "has no assessor 'zoe' (assessors: a, b)" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = _main(capsys, tmp_path / "nowhere")
    assert code == 2 and "not a run or sweep folder" in err
    code, _, err = _main(capsys, run_dir.parent)
    assert code == 2 and "give --out DIR" in err
    code, _, err = _main(capsys, run_dir, "--binarise", "high")
    assert code == 2 and "--binarise 'high'" in err
    spaced = make_run(tmp_path, "spaced", {("q 1", "d1"): 1}, {("q 1", "d1"): {"a": 1}})
    code, _, err = _main(capsys, spaced)
    assert code == 2 and "query id 'q 1' is empty or holds whitespace" in err


def test_round_trip_through_agree_gives_kappa_one(run_dir: Path, tmp_path: Path, capsys) -> None:
    qrels = tmp_path / "judge.qrels"
    assert _main(capsys, run_dir, "-o", qrels)[0] == 0
    assert read_qrels(qrels) == {"q1": {"d1": 2, "d2": 1}, "q2": {"d1": 1, "d4": 0}}
    code = agree.main([str(qrels), str(qrels), "--format", "json", "--n-boot", "0"])
    row = json.loads(capsys.readouterr().out)["runs"][0]
    assert code == 0 and row["n"] == 4 and row["missing"] == 0
    assert row["kappa"]["estimate"] == pytest.approx(1.0)
    assert row["accuracy"] == pytest.approx(1.0)


def test_exported_qrels_score_identically_in_ir_measures_and_agree(
    run_dir: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "qrels"
    code, _, err = _main(capsys, run_dir.parent, "--out", out)
    assert code == 0 and "toy.human.qrels: 5 judgments (human consensus)" in err
    judge, human = out / "toy.m1.text.default.qrels", out / "toy.human.qrels"
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, text in RUNS.items():
        (runs / f"{name}.txt").write_text(text, encoding="utf-8")
    # Both files hold every judged pair, so agree's shared pairs are the judge's four.
    args = [human, judge, "--runs", runs, "--measure", "nDCG@10", "--n-boot", "0"]
    assert agree.main([*map(str, args), "--format", "json"]) == 0
    ranking = json.loads(capsys.readouterr().out)["runs"][0]["rankings"]["nDCG@10"]
    shared = read_qrels(judge)
    human_shared = [
        ir_measures.Qrel(q, d, g)
        for q, docs in read_qrels(human).items()
        for d, g in docs.items()
        if d in shared.get(q, {})
    ]
    for name in RUNS:
        run = list(ir_measures.read_trec_run(str(runs / f"{name}.txt")))
        judge_score = ir_measures.calc_aggregate(
            [ir_measures.nDCG @ 10], list(ir_measures.read_trec_qrels(str(judge))), run
        )[ir_measures.nDCG @ 10]
        human_score = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], human_shared, run)[
            ir_measures.nDCG @ 10
        ]
        assert ranking["judge_scores"][name] == pytest.approx(judge_score)
        assert ranking["human_scores"][name] == pytest.approx(human_score)


def test_panel_labels_export_like_a_run(tmp_path: Path, capsys) -> None:
    sweep = tmp_path / "sweep"
    a = make_run(sweep, "a", {k: 2 for k in HUMAN}, HUMAN, model="m1")
    b = make_run(sweep, "b", {k: 0 for k in HUMAN}, HUMAN, model="m2")
    c = make_run(sweep, "c", {k: 2 for k in HUMAN}, HUMAN, model="m3")
    build_panel([a, b, c], sweep / "panel", how="majority")
    code, out, _ = _main(capsys, sweep / "panel")
    assert code == 0 and out.count(" 2\n") == len(HUMAN)
