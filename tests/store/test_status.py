"""Cell statuses, exit codes, the multirun's code and counts, and the resume command."""

from __future__ import annotations

import shlex
import signal

import pytest

import mmjudge.cli.sweep
from mmjudge.cli.exits import resume_command
from mmjudge.engine.interrupt import StopSignal
from mmjudge.store import status


@pytest.mark.parametrize(
    ("n", "errors", "rate", "expected"),
    [
        (16, 0, 0.1, "complete"),
        (16, 1, 0.1, "partial"),
        (16, 2, 0.1, "failed"),  # 12.5% > 10%
        (16, 8, 0.5, "partial"),  # exactly the limit is not more than it
        (16, 16, 1.0, "failed"),  # every judgment failed, whatever the limit
        (0, 0, 0.1, "complete"),
    ],
)
def test_a_cell_status_follows_its_failed_share(
    n: int, errors: int, rate: float, expected: str
) -> None:
    found, reason = status.cell_status(n, errors, rate)
    assert found == expected
    assert (reason == "") == (expected == "complete")


def test_exit_codes_are_distinct_and_a_sweep_reports_its_worst_cell() -> None:
    codes = {s: status.exit_code(s) for s in status.ORDER}
    assert codes["complete"] == codes["skipped"] == codes["dry_run"] == 0
    assert len({codes["partial"], codes["failed"], codes["stopped_by_budget"], 2}) == 4
    assert status.exit_code("interrupted", signal.SIGTERM) == 143
    assert status.sweep_exit_code(["complete", "skipped"]) == 0
    assert status.sweep_exit_code(["complete", "partial"]) == status.EXIT_PARTIAL
    assert status.sweep_exit_code(["partial", "stopped_by_budget"]) == status.EXIT_BUDGET
    assert status.sweep_exit_code(["stopped_by_budget", "failed"]) == status.EXIT_FAILED


def test_status_counts_read_in_a_fixed_order() -> None:
    counts = status.count_statuses(["failed", "complete", "skipped", "complete", "partial"])
    assert list(counts.items()) == [("complete", 2), ("partial", 1), ("failed", 1), ("skipped", 1)]
    assert status.status_line(counts) == "5 cells: 2 complete, 1 partial, 1 failed, 1 skipped"


def test_the_resume_command_repeats_the_arguments_and_pins_the_folder() -> None:
    argv = ["model=gpt4o", "hydra.run.dir=old", "dataset.path=/data/my set"]
    line = resume_command(argv, "/runs/a b", multirun=False, program="mmj")
    assert shlex.split(line) == [
        "mmj",
        "model=gpt4o",
        "dataset.path=/data/my set",
        "hydra.run.dir=/runs/a b",
    ]
    sweep = resume_command(["-m", "model=a,b"], "/s", multirun=True, program="mmj")
    assert shlex.split(sweep) == ["mmj", "-m", "model=a,b", "hydra.sweep.dir=/s"]


@pytest.mark.parametrize(
    ("error", "code", "name"),
    [(KeyboardInterrupt(), 130, "SIGINT"), (StopSignal(signal.SIGTERM), 143, "SIGTERM")],
)
def test_a_stop_outside_the_judging_loop_is_one_line_and_its_own_exit_code(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: BaseException,
    code: int,
    name: str,
) -> None:
    def stopped() -> None:
        raise error

    monkeypatch.setattr(mmjudge.cli.sweep, "_app", stopped)
    monkeypatch.setattr(mmjudge.cli.sweep.sys, "argv", ["mmjudge.sweep", "model=lexical"])
    previous = signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(SystemExit) as exited:
            mmjudge.cli.sweep.run_app()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert exited.value.code == code
    err = capsys.readouterr().err.strip()
    assert err == (
        f"mmjudge: stopped by {name}; nothing in flight was lost. Run the same command again "
        "with hydra.run.dir=<the run folder> to go on where it stopped"
    )


def test_failures_no_rerun_can_mend_are_named_apart_from_those_it_retries() -> None:
    lacking = status.Ungradable(5, (("q1", "d1"), ("q1", "d2"), ("q2", "d7")))
    found, reason = status.cell_status(100, 7, 0.1, ungradable=lacking)
    assert found == "partial"
    assert reason == (
        "7 of 100 judgments failed (7%); the replayed file has no grade for 5 of them "
        "(first: 'q1' 'd1'; 'q1' 'd2'; 'q2' 'd7', …); running again will not grade them: add "
        "their grades to the file; run the same command again to retry the other 2"
    )
    found, reason = status.cell_status(4, 4, 0.1, ungradable=status.Ungradable(4, (("q", "d"),)))
    assert found == "failed"
    assert reason == (
        "4 of 4 judgments failed (100%): every judgment failed; the replayed file has no grade "
        "for any of them (first: 'q' 'd', …); running again will not grade them: add their "
        "grades to the file"
    )
    assert "run the same command again to retry them" in status.cell_status(100, 7, 0.1)[1]
