"""Output piped to a reader that stops early (``mmjudge … | head``) ends the command quietly:
no traceback, no "Exception ignored" line, the exit status of a closed pipe (141)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mmjudge.cli.exits import EXIT_PIPE_CLOSED
from tests.helpers import run_sweep

pytestmark = pytest.mark.slow  # every test starts the command


def _with_stdout_closed(*args: str, cwd: Path) -> tuple[int, str]:
    """Run ``python -m mmjudge ARGS`` with its reader gone before it writes a line."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mmjudge", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    return process.wait(timeout=120), err


def test_testbank_show_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    code, err = _with_stdout_closed(
        "testbank", "show", "dataset=demo_fashion", "kind=nuggets", cwd=tmp_path
    )
    assert (code, err) == (EXIT_PIPE_CLOSED, "")


def test_help_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    assert _with_stdout_closed("--help", cwd=tmp_path) == (EXIT_PIPE_CLOSED, "")


def test_reprice_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    done = run_sweep(tmp_path, "model=lexical", "dataset.limit=4", "report.build=false")
    assert done.returncode == 0, done.stderr
    code, err = _with_stdout_closed("reprice", str(tmp_path / "results"), cwd=tmp_path)
    assert (code, err) == (EXIT_PIPE_CLOSED, "")
