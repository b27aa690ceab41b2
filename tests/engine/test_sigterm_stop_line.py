"""The line printed when a stop signal arrives names the signal received, how to stop at once
with that same signal and, for SIGTERM, how to resume (a scheduler may kill the process
before its closing lines)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mmjudge.engine.stop_line import stop_line
from mmjudge.store.status import EXIT_SIGTERM
from tests.fixtures.loopback_server import LoopbackServer


def test_sigterm_says_what_was_received_and_how_to_resume(tmp_path: Path) -> None:
    line = stop_line(signal.SIGTERM, batch=False, grace_s=30, in_flight=3, run_dir=tmp_path)
    assert line.startswith("received SIGTERM, a request to stop: no new calls")
    assert "for the 3 in flight" in line and "send SIGTERM again to stop at once" in line
    assert "Ctrl-C" not in line
    assert line.endswith(
        f"run the same command again on the same run folder ({tmp_path}); finished rows are kept"
    )


def test_ctrl_c_keeps_its_own_words() -> None:
    line = stop_line(signal.SIGINT, batch=False, grace_s=5, in_flight=2, run_dir=Path("x"))
    assert line == (
        "Ctrl-C (SIGINT): no new calls; waiting up to 5 s (runner.grace_s) for the 2 in "
        "flight, then saving; press Ctrl-C again to stop at once"
    )


def test_a_batch_run_stopped_by_sigterm_says_how_to_resume(tmp_path: Path) -> None:
    line = stop_line(signal.SIGTERM, batch=True, grace_s=5, in_flight=9, run_dir=tmp_path)
    assert line.startswith("received SIGTERM, a request to stop: no new batches")
    assert "To resume, run the same command again" in line


def test_the_command_names_the_setting_that_finds_the_folder_again(tmp_path: Path) -> None:
    folder = tmp_path / "a run"
    line = stop_line(
        signal.SIGTERM,
        batch=False,
        grace_s=5,
        in_flight=1,
        run_dir=folder,
        resume_setting=f"hydra.run.dir={folder}",
    )
    assert line.endswith(f"adding 'hydra.run.dir={folder}'; finished rows are kept")


@pytest.mark.slow
def test_a_sweep_sent_sigterm_prints_the_signal_and_the_folder_to_resume(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 0.5  # calls are in flight when the signal comes
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = "sk-test-loopback-0123456789abcdef"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mmjudge.sweep",
            "model=gpt4o",
            "runner.concurrency=3",
            f"model.base_url={loopback.openai_base_url}",
            "dataset.limit=16",
            f"paths.results={tmp_path / 'results'}",
            f"paths.reports={tmp_path / 'reports'}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.image_cache={tmp_path / 'images'}",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while loopback.request_count < 3:
        assert time.monotonic() < deadline, "no requests arrived"
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_SIGTERM, stderr
    (run_dir,) = sorted((tmp_path / "results" / "runs").iterdir())
    (line,) = [line for line in stderr.splitlines() if "a request to stop" in line]
    assert line.startswith("mmjudge: received SIGTERM, a request to stop: no new calls")
    assert "Ctrl-C" not in line
    assert f"adding hydra.run.dir={run_dir}; finished rows are kept" in line
