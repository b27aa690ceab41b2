"""mmjudge estimate: its output forms, the held-back truth, and its one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmjudge.cli import estimate
from mmjudge.data.qrels import read_qrels
from mmjudge.estimation import prediction

pytest.importorskip("ppi_py", reason="needs the estimate extra (ppi-python)")

LLMJUDGE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "llmjudge"


def write_files(tmp_path: Path, size: int = 60) -> dict[str, Path]:
    """Human and judge qrels over 4 queries (the judge off by one grade on every third item)
    and two system runs."""
    rng = np.random.default_rng(0)
    human, judge, run_a, run_b = [], [], [], []
    for i in range(size):
        query, doc = f"q{i % 4}", f"d{i}"
        grade = int(rng.integers(0, 4))
        human.append(f"{query} 0 {doc} {grade}")
        judge.append(f"{query} 0 {doc} {min(grade + 1, 3) if i % 3 == 0 else grade}")
        run_a.append(f"{query} Q0 {doc} 1 {grade + rng.random():.4f} a")
        run_b.append(f"{query} Q0 {doc} 1 {rng.random():.4f} b")
    paths = {"human": tmp_path / "human.qrels", "judge": tmp_path / "judge.qrels"}
    paths["human"].write_text("\n".join(human) + "\n", encoding="utf-8")
    paths["judge"].write_text("\n".join(judge) + "\n", encoding="utf-8")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "sysA.txt").write_text("\n".join(run_a) + "\n", encoding="utf-8")
    (runs / "sysB.txt").write_text("\n".join(run_b) + "\n", encoding="utf-8")
    paths["runs"] = runs
    return paths


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = estimate.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_holds_three_ways_and_the_truth(tmp_path, capsys) -> None:
    files = write_files(tmp_path)
    args = [files["human"], files["judge"], "--labelled", 30, "--seed", 3]
    code, out, err = run_cli(capsys, *args, "--runs", files["runs"], "--format", "json")
    assert code == 0 and err == ""
    report = json.loads(out)
    assert (report["items"], report["labelled"], report["seed"]) == (60, 30, 3)
    rows = {row["name"]: row for row in report["estimates"]}
    assert list(rows) == [
        "mean grade",
        "share relevant",
        "nDCG@10 sysA",
        "P@10 sysA",
        "nDCG@10 sysB",
        "P@10 sysB",
    ]
    human = np.array([int(line.split()[3]) for line in files["human"].read_text().splitlines()])
    judge = np.array([int(line.split()[3]) for line in files["judge"].read_text().splitlines()])
    assert rows["mean grade"]["truth"] == pytest.approx(human.mean())
    assert rows["mean grade"]["judge_only"] == {
        "estimate": pytest.approx(judge.mean()),
        "biased": True,
    }
    for row in rows.values():
        for way in ("human_only", "ppi"):
            part = row[way]
            assert part["low"] <= part["estimate"] <= part["high"]
            assert part["width"] == pytest.approx(part["high"] - part["low"])
        # from the standard errors, so defined where an interval was cut to the range too
        assert 0 < row["effective_n"] <= 60
        assert row["effective_n_gained"] == pytest.approx(row["effective_n"] - 30)
        assert row["outside"] is False and row["no_interval"] is False
    assert [r["measure"] for r in report["rankings"]] == ["nDCG@10", "P@10"]
    # 30 labelled of 60: each system's top tens and the rest hold labelled items enough
    assert report["split_by_top_ten"].startswith("system measures: 4 of 4 estimated within")
    assert [row["ppi"]["strata"] for row in rows.values()] == [1, 1, 2, 2, 2, 2]
    # the same seed draws the same subset; another seed another one
    again = json.loads(run_cli(capsys, *args, "--runs", files["runs"], "--format", "json")[1])
    assert again == report
    other = json.loads(run_cli(capsys, *args[:-1], 4, "--format", "json")[1])
    assert other["estimates"][0]["ppi"] != report["estimates"][0]["ppi"]


def test_table_names_the_judge_only_bias(tmp_path, capsys) -> None:
    files = write_files(tmp_path)
    code, out, _ = run_cli(capsys, files["human"], files["judge"], "--labelled", 20)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("20 of 60 human labels used")
    assert lines[2].startswith("mean grade and share relevant: PPI++ pooled over all items")
    assert lines[4].split()[:3] == ["quantity", "all", "human"]
    assert "caution" not in out  # from 5 labels both intervals of the means held 93%
    assert any(line.startswith("mean grade") for line in lines)
    assert "which no interval shows" in out


def test_caution_below_the_measured_coverage(tmp_path, capsys) -> None:
    """Below the labelled counts the coverage was measured at, the table says in one line
    which interval to read (and the JSON in ``caution``): for the means below 5 labels,
    PPI++ (the human-only interval held as little as 92% there); for the system measures
    below 500, read as a guide; without runs there are no system measures to warn of."""
    files = write_files(tmp_path)
    args = [files["human"], files["judge"], "--labelled", 20, "--runs", files["runs"]]
    code, out, _ = run_cli(capsys, *args)
    assert code == 0
    caution = [line for line in out.splitlines() if line.startswith("caution")]
    assert len(caution) == 1
    assert out.splitlines()[3].startswith("system measures: ")
    assert caution[0] == (
        "caution (20 labelled): the 95% intervals of nDCG@10 and P@10 held the truth in "
        "fewer than 94% of simulated draws on real labels below 500 labels: read them as a "
        "guide"
    )
    report = json.loads(run_cli(capsys, *args, "--format", "json")[1])
    assert report["caution"] == caution[0]
    # below 5 labels the means' line says which interval to read, and why
    few = run_cli(capsys, files["human"], files["judge"], "--labelled", 4)[1]
    lines = [line for line in few.splitlines() if line.startswith("caution")]
    assert lines == [
        "caution (4 labelled): for the mean grade and share relevant read PPI++: below 5 "
        "labels their human-only 95% intervals held the truth in as few as 92% of simulated "
        "draws on real labels, PPI++'s in at least 93%"
    ]
    assert "caution" not in run_cli(capsys, files["human"], files["judge"], "--labelled", 5)[1]


def test_degenerate_draws_give_intervals_and_valid_json(tmp_path, capsys) -> None:
    """Two labelled items with the same grade, or none of twenty relevant: no interval of
    no width (before: [0, 0] and an effective n of Infinity, which is no JSON); the
    pseudo-items give both intervals a width, every number of the JSON is finite or null,
    and the intervals stay in the range."""
    human = [f"q{i % 3} 0 d{i} {3 if i % 20 == 0 else 0}" for i in range(80)]
    judge = [f"q{i % 3} 0 d{i} {(i * 7) % 4}" for i in range(80)]
    (tmp_path / "h.qrels").write_text("\n".join(human) + "\n", encoding="utf-8")
    (tmp_path / "j.qrels").write_text("\n".join(judge) + "\n", encoding="utf-8")
    paths = [tmp_path / "h.qrels", tmp_path / "j.qrels"]

    def misses(n: int) -> int:  # a seed whose draw holds no relevant item
        return next(s for s in range(500) if not prediction.draw_labelled(80, n, s)[::20].any())

    for n, s in ((2, misses(2)), (20, misses(20))):
        code, out, _ = run_cli(capsys, *paths, "--labelled", n, "--seed", s, "--format", "json")
        assert code == 0

        def refuse(constant: str) -> None:
            raise AssertionError(f"not JSON: {constant}")

        report = json.loads(out, parse_constant=refuse)
        rows = {row["name"]: row for row in report["estimates"]}
        assert rows["share relevant"]["human_only"]["estimate"] == 0
        for row in rows.values():
            for way in ("human_only", "ppi"):
                assert row[way]["width"] > 0.1, (n, row)
                assert row[way]["low"] >= 0
            assert row["effective_n"] is None or row["effective_n"] <= 80
        assert rows["share relevant"]["ppi"]["high"] <= 1
        assert rows["mean grade"]["ppi"]["high"] <= 3


def test_system_measures_from_two_labels_are_strict_json(tmp_path, capsys) -> None:
    """Two labels with runs: a system measure whose labelled values do not vary has no
    interval (``null``, and a ``no interval`` line), never one of no width, and the JSON
    has no NaN. Before: P@10 0.000 [0.000, 0.000], and on some draws a NaN that ended
    ``--format json`` in a traceback."""
    files = write_files(tmp_path)
    flat = 0
    for seed in range(12):
        args = [files["human"], files["judge"], "--labelled", 2, "--seed", seed]
        code, out, err = run_cli(capsys, *args, "--runs", files["runs"], "--format", "json")
        assert code == 0 and err == ""

        def refuse(constant: str) -> None:
            raise AssertionError(f"not JSON: {constant}")

        report = json.loads(out, parse_constant=refuse)
        for row in report["estimates"]:
            for way in ("human_only", "ppi"):
                width = row[way]["width"]
                assert width is None or width > 0, (seed, row)
                if width is None:
                    assert row["no_interval"] and row[way]["low"] is None
            flat += row["no_interval"]
        named = [row["name"] for row in report["estimates"] if row["no_interval"]]
        assert (report["no_interval"] is None) == (not named)
        if named:
            assert report["no_interval"].startswith(f"no interval: {', '.join(named)}: ")
    assert flat > 0  # some draw left a system measure without variation


@pytest.mark.parametrize("n", [0, 1, 59, 100])
def test_labelled_out_of_range_is_refused(tmp_path, capsys, n) -> None:
    files = write_files(tmp_path)
    code, out, err = run_cli(capsys, files["human"], files["judge"], "--labelled", n)
    assert code == 2 and out == ""
    assert err.startswith(f"mmjudge estimate: --labelled {n}: needs at least 2 labelled")
    assert "pass a number from 2 to 58" in err and err.count("\n") == 1


def test_off_scale_grade_names_the_line_and_the_choices(tmp_path, capsys) -> None:
    files = write_files(tmp_path)
    text = files["judge"].read_text().splitlines()
    text[4] = text[4].rsplit(" ", 1)[0] + " 5"
    files["judge"].write_text("\n".join(text) + "\n")
    code, _, err = run_cli(capsys, files["human"], files["judge"], "--labelled", 20)
    assert code == 2
    assert f"{files['judge']}:5: grade 5 is outside the scale 0–3" in err
    assert "--out-of-scale drop or clip" in err
    code, out, _ = run_cli(
        capsys,
        files["human"],
        files["judge"],
        "--labelled",
        20,
        "--out-of-scale",
        "clip",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out)["items"] == 60


def test_no_shared_pairs_is_refused(tmp_path, capsys) -> None:
    files = write_files(tmp_path)
    other = tmp_path / "other.qrels"
    other.write_text("zz 0 nope 1\n")
    code, _, err = run_cli(capsys, files["human"], other, "--labelled", 5)
    assert code == 2 and "grades none of the (query, doc) pairs" in err


def test_llmjudge_subset_equals_the_library(capsys) -> None:
    human, judge = LLMJUDGE / "test_qrels_human.txt", LLMJUDGE / "runs" / "Olz-gpt4o.txt"
    if not human.is_file() or not judge.is_file():
        pytest.skip(f"the LLMJudge label files are not at {LLMJUDGE} (../shared/data)")
    code, out, _ = run_cli(capsys, human, judge, "--labelled", 500, "--seed", 1, "--format", "json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)["estimates"]}
    items = prediction.shared_items(read_qrels(human), read_qrels(judge))
    design = prediction.prepare(items, None, [0, 1, 2, 3], 2)
    mask = prediction.draw_labelled(items.human.size, 500, 1)
    mean = prediction.estimate(design, items, mask)[0]
    assert rows["mean grade"]["ppi"]["estimate"] == pytest.approx(mean.ppi[0], abs=1e-12)
    assert rows["mean grade"]["truth"] == pytest.approx(items.human.mean())


def test_a_sweep_folder_is_read_as_its_exported_qrels(tmp_path, capsys) -> None:
    from tests.fake_runs import make_run

    rng = np.random.default_rng(1)
    keys = [(f"q{i % 4}", f"d{i}") for i in range(60)]
    human = {key: {"a": int(rng.integers(0, 4)), "b": int(rng.integers(0, 4))} for key in keys}
    sweep = tmp_path / "sweep"
    for model, shift in (("good", 0), ("off", 1)):
        labels = {key: min(grades["a"] + shift, 3) for key, grades in human.items()}
        make_run(sweep, f"demo.{model}.text.default", labels, human, dataset="demo", model=model)
    code, _, err = run_cli(capsys, sweep, "--labelled", 20)
    assert code == 2 and "--judge NAME" in err and "demo.good.text.default" in err

    code, from_sweep, _ = run_cli(
        capsys, sweep, "--judge", "off", "--labelled", 20, "--format", "json"
    )
    assert code == 0
    assert mmjudge_export(sweep, tmp_path / "qrels", capsys) == 0
    files = tmp_path / "qrels"
    code, from_files, _ = run_cli(
        capsys,
        files / "demo.human.qrels",
        files / "demo.off.text.default.qrels",
        "--labelled",
        20,
        "--format",
        "json",
    )
    assert code == 0
    first, second = json.loads(from_sweep), json.loads(from_files)
    for result in (first, second):
        del result["human"], result["judge"]  # where each read its labels from
    assert first == second


def mmjudge_export(sweep, out, capsys) -> int:
    from mmjudge.cli import export

    code = export.main([str(sweep), "--out", str(out)])
    capsys.readouterr()
    return code
