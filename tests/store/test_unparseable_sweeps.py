"""The issue's case end to end: a judge that answers a grade to every prompt, asked by a
test-bank prompt to rate the bank's entries, leaves no answer that can be read. The cell is
failed, not complete, and the sweep exits with a failed cell's code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.store import read_summary
from mmjudge.store.status import EXIT_FAILED
from tests.fixtures.loopback_server import DEFAULT_TEXT, LoopbackServer, RecordedRequest
from tests.helpers import run_sweep

KEY = {"OPENAI_API_KEY": "sk-test-loopback"}


def grades_only(_request: RecordedRequest) -> str:
    """A grade and a reason, whatever the prompt asks for."""
    return DEFAULT_TEXT


@pytest.mark.slow
def test_a_bank_prompt_answered_with_grades_fails_the_cell(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.responder = grades_only
    result = run_sweep(
        tmp_path,
        "-m",
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        "prompt=default,nuggets",
        "dataset.limit=8",
        "report.build=false",
        env=KEY,
    )
    assert result.returncode == EXIT_FAILED, result.stderr
    assert "sweep: 2 cells: 1 complete, 1 failed" in result.stderr
    assert 'answers could not be read as a grade (100%); first: "2 The result matches' in (
        result.stderr
    )
    (sweep,) = (tmp_path / "results" / "sweeps").iterdir()
    ended = {
        run.name.rsplit(".", 1)[-1]: read_summary(run).status
        for run in sweep.iterdir()
        if (run / "summary.json").is_file()
    }
    assert ended["default"].status == "complete"
    assert ended["nuggets"].status == "failed" and ended["nuggets"].exit_code == EXIT_FAILED
