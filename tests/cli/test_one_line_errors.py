"""Issue 46: what ended in a traceback ends in one line naming the fix: ``mmjudge report`` over
many folders (a report name too long for a folder) or into a folder it cannot write, and a
Ctrl-C while ``python -m mmjudge.sweep`` is still loading its modules."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mmjudge.cli.report import main
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep
from tests.helpers import sweep_env

pytestmark = pytest.mark.slow

SHOP = FakeDataset("shop", n_queries=4, images=0)


@pytest.fixture
def sixteen(tmp_path: Path) -> list[Path]:
    """Sixteen sweep folders with long names (as results/sweeps/<time> holds them)."""
    return [
        write_sweep(
            tmp_path / "sweeps" / f"2026-11-28_21-31-{n:02d}_a_long_sweep_folder_name",
            [SHOP],
            [FakeJudge("cheap", accuracy=0.6, usd_per_judgment=1e-4)],
            dataset_root=tmp_path / "datasets",
        ).root
        for n in range(16)
    ]


def test_a_report_over_sixteen_folders_is_built(
    tmp_path: Path, sixteen: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*map(str, sixteen), "--out", str(tmp_path / "reports"), "--n-boot", "20"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (report,) = (tmp_path / "reports").iterdir()
    assert report.name.startswith(sixteen[0].name + "+") and "-more-" in report.name
    assert out.strip() == str(report / "index.html")


def test_a_report_into_a_folder_that_cannot_be_made_is_one_line(
    tmp_path: Path, sixteen: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "afile").write_text("")
    code = main([str(sixteen[0]), "--out", str(tmp_path / "afile" / "reports")])
    _, err = capsys.readouterr()
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.startswith(f"mmjudge report: cannot write or read {tmp_path / 'afile'}")
    assert "--out" in line


#: Runs ``python -m mmjudge.sweep`` as a user's shell does, with a Ctrl-C arriving as the
#: command imports Hydra (what a stop in the first tenths of a second meets). A shell starts a
#: foreground command with SIGINT handled and unblocked; a test runner's process need not (an
#: ignored or blocked SIGINT is inherited), so the script sets both as the shell would.
_STOPPED_WHILE_LOADING = """
import builtins, os, runpy, signal, sys

signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
real_import = builtins.__import__

def importing(name, *args, **kwargs):
    if name.startswith("hydra"):
        builtins.__import__ = real_import
        os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, *args, **kwargs)

builtins.__import__ = importing
sys.argv = ["mmjudge.sweep", "model=lexical"]
runpy.run_module("mmjudge.sweep", run_name="__main__", alter_sys=True)
"""


def test_a_ctrl_c_while_the_sweep_loads_ends_it_quietly(tmp_path: Path) -> None:
    env = {**sweep_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _STOPPED_WHILE_LOADING],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert done.returncode == 128 + signal.SIGINT, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert done.stderr.strip() == ""
    assert list(tmp_path.iterdir()) == []
