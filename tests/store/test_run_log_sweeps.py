"""``sweep.log`` in each run folder holds what the console showed for that run: the calls in
flight, a breaker's stop line, a skipped cell's reason, the closing line, the report's path,
each printed once on the console; and no key, though the server echoed one."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import pytest

from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.helpers import run_sweep, start_sweep

KEY = "sk-test-loopback-0123456789abcdef"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_logs(root: Path) -> dict[str, str]:
    found = {}
    for log in (root / "results").glob("**/sweep.log"):
        found[log.parent.name] = log.read_text(encoding="utf-8")
    return found


def console_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.slow
def test_a_breaker_stop_is_kept_in_the_run_log_and_printed_once(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "model=gpt4o",
        f"model.base_url=http://127.0.0.1:{closed_port()}/v1",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        "dataset.limit=16",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == 4, result.stderr
    ((_, log),) = run_logs(tmp_path).items()
    lines = console_lines(result.stderr)
    stop = next(line for line in lines if "calls in a row" in line)
    closing = next(line for line in lines if line.startswith("demo_fashion × gpt4o × text:"))
    first = next(line for line in lines if "calls in flight" in line)
    for line in (first, stop, closing):
        assert lines.count(line) == 1, line  # printed once
        assert line in log, line  # and kept
    assert closing not in result.stdout
    assert log.index(first) < log.index(stop) < log.index(closing)
    # nothing was judged, so no report is built (and none is announced)
    assert not any(line.startswith("report: ") for line in lines)


@pytest.mark.slow
def test_each_cell_of_a_multirun_keeps_its_own_lines_a_skip_included(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path, "-m", "model=lexical", "modality=text,image", "dataset.limit=8", env={}
    )
    assert result.returncode == 0, result.stderr
    logs = run_logs(tmp_path)
    assert len(logs) == 2
    image = next(text for name, text in logs.items() if ".image." in name)
    text = next(text for name, text in logs.items() if ".text." in name)
    assert "demo_fashion × lexical × image: skipped — " in image
    assert "demo_fashion × lexical × text: 8 judgments" in text
    assert "× image" not in text and "× text" not in image


@pytest.mark.slow
def test_a_key_the_server_echoes_is_redacted_in_the_run_log(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.set_default(Behaviour.error(500, f"upstream refused key {KEY}"))
    result = run_sweep(
        tmp_path,
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        "dataset.limit=16",
        "report.build=false",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == 4, result.stderr
    ((_, log),) = run_logs(tmp_path).items()
    assert "got only server errors" in log and "<redacted>" in log
    assert KEY not in log and KEY not in result.stderr


@pytest.mark.slow
def test_a_stop_by_signal_and_the_resume_command_are_kept(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 0.5  # calls are in flight when the signal comes
    process = start_sweep(
        tmp_path,
        "model=gpt4o",
        "runner.concurrency=3",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=16",
        env={"OPENAI_API_KEY": KEY},
    )
    deadline = time.monotonic() + 60
    while loopback.request_count < 4:
        assert time.monotonic() < deadline, "the run sent nothing"
        time.sleep(0.02)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 143
    ((name, log),) = run_logs(tmp_path).items()
    stop = log.index("mmjudge: received SIGTERM")
    assert "interrupted;" in log[stop:] and f"hydra.run.dir={tmp_path}" in log[stop:]
    assert name in log[stop:]  # the resume command pins this run's folder
