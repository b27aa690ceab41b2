"""The replay judge: a file's grades answered item by item, missing items as row errors,
off-scale grades and files with several runs refused in one line, cells named after files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import mmjudge
from mmjudge.config import ModelConfig
from mmjudge.config.resolvers import RESOLVERS
from mmjudge.errors import ConfigError, UngradableItem
from mmjudge.judges.registry import create_judge
from mmjudge.judges.replay import ReplayJudge
from mmjudge.records import JudgeRequest
from tests.helpers import DEMO_DIR, compose_config, isolated_overrides, run_sweep


def replay(path: Path, **options: object) -> ReplayJudge:
    model = ModelConfig(
        name="replay", provider="replay", model_id="replay", options={"qrels": str(path), **options}
    )
    judge = create_judge(model)
    assert isinstance(judge, ReplayJudge)
    return judge


def answer(judge: ReplayJudge, query: str, result: str) -> str:
    request = JudgeRequest(item_key=f"{query}\t{result}", prompt="p")
    return asyncio.run(judge.generate(request)).text


def test_answers_with_the_files_grade(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 0 d1 2\nq1 0 d2 0\nq2 Q0 d1 1\n")
    judge = replay(path)
    judge.check_scale([0, 1, 2])
    assert [answer(judge, q, d) for q, d in [("q1", "d1"), ("q1", "d2"), ("q2", "d1")]] == [
        "2",
        "0",
        "1",
    ]


def test_an_item_the_file_lacks_is_an_error_of_that_item(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 0 d1 2\n")
    judge = replay(path)
    with pytest.raises(UngradableItem, match=r"run.txt has no grade for query 'q1' result 'd9'"):
        answer(judge, "q1", "d9")


def test_an_off_scale_grade_is_refused_naming_file_line_and_scale(tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 0 d1 2\nq1 0 d2 3\n")
    with pytest.raises(ConfigError) as error:
        replay(path).check_scale([0, 1, 2])
    message = str(error.value)
    assert "\n" not in message
    assert f"{path}:2: grade 3" in message and "[0, 1, 2]" in message


def test_several_runs_need_a_run(tmp_path: Path) -> None:
    qrels = tmp_path / "both.txt"
    qrels.write_text("q1 A d1 2\nq1 B d1 0\nq1 A d2 1\nq1 B d2 1\n")
    with pytest.raises(
        ConfigError, match=r"holds 2 runs .*: A, B; pick one with model.options.run"
    ):
        replay(qrels)
    assert answer(replay(qrels, run="B"), "q1", "d1") == "0"
    with pytest.raises(ConfigError, match="no run 'C'"):
        replay(qrels, run="C")
    rows = tmp_path / "both.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps({"query_id": "q1", "result_id": "d1", "grade": g, "judge": j})
            for g, j in [(2, "x"), (1, "y")]
        )
    )
    with pytest.raises(ConfigError, match=r"holds 2 runs \(the run/judge field\): x, y"):
        replay(rows)
    assert answer(replay(rows, run="y"), "q1", "d1") == "1"


def test_a_pair_judged_twice_in_one_run_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "twice.txt"
    path.write_text("q1 0 d1 2\nq1 0 d1 1\n")
    with pytest.raises(ConfigError, match=r"twice.txt:2: query 'q1' doc 'd1'"):
        replay(path)


def test_the_cell_is_named_after_the_file() -> None:
    assert RESOLVERS["mmjudge_file_stem"]("runs/Olz-gpt4o.txt") == "Olz-gpt4o"
    assert RESOLVERS["mmjudge_file_stem"](None) == "unset"
    cfg = compose_config(["model=replay", "model.options.qrels=../x/Olz-gpt4o.txt"])
    assert cfg.model.name == "replay-Olz-gpt4o"


def demo_qrels(path: Path, *, drop: int = 0, grade: str | None = None) -> list[str]:
    """A qrels file of the demo dataset's first annotator (less the last ``drop`` items)."""
    rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]
    kept = rows[: len(rows) - drop]
    path.write_text(
        "".join(
            f"{r['query_id']} 0 {r['result_id']} {grade or r['labels']['annotator_a']}\n"
            for r in kept
        )
    )
    return [r["result_id"] for r in rows[len(kept) :]]


@pytest.mark.slow
def test_a_sweep_replays_two_files_into_two_cells(tmp_path: Path) -> None:
    demo_qrels(tmp_path / "first.txt", drop=3)
    demo_qrels(tmp_path / "second.txt", grade="1")
    demo_qrels(tmp_path / "bad.txt", grade="7")
    files = f"{tmp_path / 'first.txt'},{tmp_path / 'second.txt'}"
    result = run_sweep(tmp_path, "-m", "model=replay", f"model.options.qrels={files}")
    assert "replay-first" in result.stderr and "replay-second" in result.stderr, result.stderr
    assert "240 judgments, 3 errors" in result.stderr
    folders = sorted(p.name for p in (tmp_path / "results" / "sweeps").glob("*/*") if p.is_dir())
    assert [f for f in folders if "replay" in f] == [
        "demo_fashion.replay-first.text.default",
        "demo_fashion.replay-second.text.default",
    ]
    bad = run_sweep(tmp_path, "model=replay", f"model.options.qrels={tmp_path / 'bad.txt'}")
    assert bad.returncode != 0
    assert "bad.txt:1: grade 7" in bad.stderr and "[0, 1, 2]" in bad.stderr


def twelve_items(root: Path) -> list[str]:
    """The first twelve demo items, everything written under ``root``."""
    paths = [f"{key}={value}" for key, value in isolated_overrides(root).items()]
    return ["dataset.limit=12", "runner.progress=false", "report.build=false", *paths]


@pytest.mark.slow  # a cell each: over half a second
@pytest.mark.parametrize(
    ("rate", "status", "fix"),
    [
        ("0.5", "partial", "add their grades to the file"),
        ("0.1", "failed", "or set runner.max_error_rate=0.25 to score the cell on the items"),
    ],
)
def test_a_cell_names_the_items_its_file_lacks_and_never_says_run_again(
    tmp_path: Path, rate: str, status: str, fix: str
) -> None:
    rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]
    path = tmp_path / "nine.jsonl"
    path.write_text(
        "".join(
            json.dumps({"query_id": r["query_id"], "result_id": r["result_id"], "grade": 1}) + "\n"
            for r in rows[:9]
        )
    )
    summary = mmjudge.run_cell(
        [
            "model=replay",
            f"model.options.qrels={path}",
            f"runner.max_error_rate={rate}",
            *twelve_items(tmp_path),
        ],
        tmp_path / "run",
    )
    lacking = sorted((r["query_id"], r["result_id"]) for r in rows[9:12])
    first = "; ".join(f"{q!r} {r!r}" for q, r in lacking)
    reason = summary.status.status_reason or ""
    assert summary.status.status == status
    assert reason.startswith("3 of 12 judgments failed (25%)")
    assert f"the replayed file has no grade for any of them (first: {first})" in reason
    assert "running again will not grade them" in reason and fix in reason
    assert "run the same command again" not in reason
    assert summary.errors.by_kind == {"UngradableItem": 3}


def test_an_empty_file_is_refused_in_one_line(tmp_path: Path) -> None:
    for name in ("empty.jsonl", "empty.txt"):
        (tmp_path / name).write_text("\n")
        with pytest.raises(ConfigError, match=rf"{name}: no judgments in the file; expected"):
            replay(tmp_path / name)
