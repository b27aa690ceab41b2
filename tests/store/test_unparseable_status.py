"""Answers that hold no grade count against a cell: up to ``runner.max_unparseable_rate`` of
them (real models miss the format now and then) the cell is complete, past it partial (exit 3)
with the first such answer quoted, and failed (exit 4) when none can be read; the report lists
a failed cell with the failures, not among the answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.config import RunnerConfig
from mmjudge.errors import ConfigError
from mmjudge.report.analysis import analyse
from mmjudge.report.build import build_report
from mmjudge.report.load import cell_table
from mmjudge.store import read_summary, status
from tests.fake_runs import make_run

KEYS = [(f"q{i // 5}", f"r{i}") for i in range(20)]
HUMAN = {key: {"a": i % 3, "b": (i + i // 7) % 3} for i, key in enumerate(KEYS)}
#: What a judge answers to a test-bank prompt when it grades the result instead of the entries.
GRADE_ONLY = "Relevance: 2\nThe dress is the colour asked for,\nand in stock."


@pytest.mark.parametrize(
    ("answered", "unparseable", "rate", "expected"),
    [
        (240, 0, 0.1, "complete"),
        (240, 240, 0.1, "failed"),  # the case: every bank answer unreadable
        (240, 240, 1.0, "failed"),  # none readable fails whatever the limit
        (240, 25, 0.1, "partial"),  # 10.4% > 10%
        (240, 24, 0.1, "complete"),  # exactly the limit is not more than it
        (240, 1, 0.1, "complete"),
        (1000, 1, 0.02, "complete"),  # one miss in a thousand: the case
        (1000, 20, 0.02, "complete"),
        (1000, 21, 0.02, "partial"),
        (240, 1, 0.0, "partial"),  # a limit of 0 keeps the old strictness
    ],
)
def test_unparseable_answers_decide_the_status_like_failed_calls(
    answered: int, unparseable: int, rate: float, expected: str
) -> None:
    found, reason = status.cell_status(answered, 0, 0.1, unparseable, rate, GRADE_ONLY)
    assert found == expected
    assert status.exit_code(found) == {"complete": 0, "partial": 3, "failed": 4}[expected]
    if expected == "complete":
        assert reason == ""
        return
    assert f"{unparseable:,} of {answered:,} answers could not be read as a grade" in reason
    # The first unreadable answer, quoted on one line.
    assert 'first: "Relevance: 2 The dress is the colour asked for, and in stock."' in reason
    assert "\n" not in reason


def test_the_worse_of_errors_and_unparseable_answers_decides_and_both_are_named() -> None:
    found, reason = status.cell_status(100, 2, 0.1, 50, 0.1, "no idea")
    assert found == "partial"
    assert "50 of 98 answers" in reason and "2 of 100 judgments failed" in reason
    found, reason = status.cell_status(100, 50, 0.1, 2, 0.01, "no idea")
    assert found == "failed" and reason.index("50 of 100") < reason.index("2 of 50 answers")


def test_a_long_or_empty_first_answer_is_quoted_short() -> None:
    quoted = status.quoted_answer("word " * 200)
    assert len(quoted) <= status.QUOTED_ANSWER_CHARS + 2 and quoted.endswith('…"')
    assert status.quoted_answer("  \n ") == "an empty answer"


def test_the_limit_must_be_a_share() -> None:
    with pytest.raises(ConfigError, match=r"max_unparseable_rate=1\.5 is not allowed; use a"):
        RunnerConfig(max_unparseable_rate=1.5).validate()
    assert RunnerConfig().max_unparseable_rate == 0.02


def test_a_cell_of_unreadable_answers_is_failed_and_reported_with_the_failures(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sweeps" / "s"
    make_run(root, "default", {key: HUMAN[key]["a"] for key in KEYS}, HUMAN, prompt_id="default")
    run_dir = make_run(
        root,
        "nuggets",
        dict.fromkeys(KEYS),
        HUMAN,
        prompt_id="nuggets",
        raw_output=dict.fromkeys(KEYS, GRADE_ONLY),
    )
    ended = read_summary(run_dir).status
    assert ended.status == "failed" and ended.exit_code == status.EXIT_FAILED
    assert 'first: "Relevance: 2 The dress' in str(ended.status_reason)

    analysis = analyse(cell_table(root), n_boot=20)
    assert [c.judge.prompt_id for c in analysis.datasets[0].cells] == ["default"]
    assert [(u.judge.prompt_id, u.status) for u in analysis.not_analysed] == [("nuggets", "failed")]
    html = (build_report(root, tmp_path / "reports", n_boot=20) / "index.html").read_text()
    failures = html[html.index("Failed or stopped cells</h2>") :]
    failures = failures[: failures.index("</table>")]
    assert ">nuggets</td>" in failures and "unparseable answers 20" in failures
    assert "20 of 20 answers could not be read as a grade" in failures


def test_a_few_unreadable_answers_leave_the_cell_partial_and_analysed(tmp_path: Path) -> None:
    labels: dict[tuple[str, str], int | None] = {key: HUMAN[key]["a"] for key in KEYS}
    labels[KEYS[3]] = None
    run_dir = make_run(
        tmp_path / "sweeps" / "s",
        "cell",
        labels,
        HUMAN,
        raw_output={KEYS[3]: "It depends."},
        max_unparseable_rate=0.02,
    )
    ended = read_summary(run_dir).status
    assert ended.status == "partial"
    assert str(ended.status_reason).startswith(
        '1 of 20 answers could not be read as a grade (5%); first: "It depends."'
    )
    analysis = analyse(cell_table(run_dir.parent), n_boot=20)
    assert len(analysis.datasets[0].cells) == 1 and not analysis.not_analysed


def test_a_rare_unreadable_answer_leaves_the_cell_complete_with_exit_0(tmp_path: Path) -> None:
    keys = [(f"q{i // 5}", f"r{i}") for i in range(100)]
    human = {key: {"a": i % 3} for i, key in enumerate(keys)}
    labels: dict[tuple[str, str], int | None] = {key: human[key]["a"] for key in keys}
    labels[keys[3]] = None
    run_dir = make_run(
        tmp_path / "sweeps" / "s", "cell", labels, human, raw_output={keys[3]: "It depends."}
    )
    summary = read_summary(run_dir)
    assert summary.status.status == "complete" and summary.status.exit_code == 0
    assert summary.n_unparseable == 1  # counted in the closing line
