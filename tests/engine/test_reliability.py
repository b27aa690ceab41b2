"""``python -m mmjudge.sweep`` against the loopback server when things go wrong: a cell that
cannot work stops in seconds, statuses and exit codes say how each cell ended, Ctrl-C and
SIGTERM stop cleanly and print the command that resumes, resent requests are counted, and two
processes on one cell pay for each item once."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from mmjudge.store.status import EXIT_FAILED, EXIT_PARTIAL, EXIT_SIGINT, EXIT_SIGTERM
from tests.fixtures.loopback_server import OPENAI_PATH, BatchPlan, Behaviour, LoopbackServer

pytestmark = pytest.mark.slow

KEY = "sk-test-loopback-0123456789abcdef"


def command(tmp_path: Path, *args: str, limit: int = 16) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mmjudge.sweep",
        *args,
        f"dataset.limit={limit}",
        f"paths.results={tmp_path / 'results'}",
        f"paths.reports={tmp_path / 'reports'}",
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        f"paths.image_cache={tmp_path / 'images'}",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
    ]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["OPENAI_API_KEY"] = KEY
    return env


def run(tmp_path: Path, *args: str, limit: int = 16) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(tmp_path, *args, limit=limit),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=environment(),
        check=False,
    )


def start(tmp_path: Path, *args: str, limit: int = 16) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command(tmp_path, *args, limit=limit),
        cwd=tmp_path,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_requests(server: LoopbackServer, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while server.request_count < n:
        assert time.monotonic() < deadline, f"only {server.request_count} requests arrived"
        time.sleep(0.02)


def only_run(tmp_path: Path) -> Path:
    (run_dir,) = sorted((tmp_path / "results" / "runs").iterdir())
    return run_dir


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]


def prompts(server: LoopbackServer) -> Counter[str]:
    return Counter(json.dumps(r.body["messages"]) for r in server.requests_to(OPENAI_PATH))


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the breaker --------------------------------------------------------------------------------


def test_nothing_listening_stops_a_240_item_cell_in_one_line(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = run(tmp_path, "model=gpt4o", f"model.base_url={url}", limit=240)
    assert result.returncode == EXIT_FAILED
    assert "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "calls in a row" in x]
    assert url in line and "were refused" in line and "check model.base_url" in line
    assert "ConnectionRefusedError" in line
    summary = summary_of(only_run(tmp_path))
    assert summary["status"] == "failed" and summary["exit_code"] == EXIT_FAILED
    assert summary["n_judgments"] < 240  # stopped, not 240 error rows
    assert summary["n_items"] == 240


def test_a_server_answering_only_500s_stops_the_cell(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.set_default(Behaviour.server_error(500))
    result = run(
        tmp_path,
        "model=gpt4o",
        "runner.concurrency=4",
        "runner.breaker_failures=6",
        f"model.base_url={loopback.openai_base_url}",
        limit=240,
    )
    assert result.returncode == EXIT_FAILED, result.stderr
    assert "got only server errors (5xx)" in result.stderr and "Traceback" not in result.stderr
    # First attempts, the failed retries that open the breaker, and the calls in flight.
    assert loopback.request_count <= 6 + 2 * 4


def test_https_against_a_plain_http_server_names_tls(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    url = f"https://127.0.0.1:{loopback.port}/v1"
    result = run(tmp_path, "model=gpt4o", f"model.base_url={url}", "runner.timeout_s=5")
    assert result.returncode == EXIT_FAILED, result.stderr
    assert "TLS handshake" in result.stderr and "http:// against https://" in result.stderr


# --- statuses in a run and a sweep -------------------------------------------------------------


def image_requests_fail(request) -> str | Behaviour:  # type: ignore[no-untyped-def]
    """A server that cannot read any image: a per-item 400, not retried, not fatal."""
    content = request.body["messages"][-1]["content"]
    if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
        return Behaviour.error(400, "Invalid image: the image could not be decoded.")
    return "2\nThe result matches the query."


def test_a_sweep_with_a_failed_cell_exits_non_zero_and_says_so_everywhere(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.responder = image_requests_fail
    result = run(
        tmp_path,
        "-m",
        "model=gpt4o_mini",
        "modality=text,mm",
        f"model.base_url={loopback.openai_base_url}",
        "hydra.callbacks.sweep_report.ensembles=false",
    )
    assert result.returncode == EXIT_FAILED, result.stderr
    assert "sweep: 2 cells: 1 complete, 1 failed" in result.stderr
    (sweep_dir,) = (tmp_path / "results" / "sweeps").iterdir()
    data = json.loads((sweep_dir / "sweep_summary.json").read_text())
    assert data["by_status"] == {"complete": 1, "failed": 1}
    assert data["exit_code"] == EXIT_FAILED
    failed = next(c for c in data["cells"] if c["status"] == "failed")
    assert failed["modality"] == "mm" and failed["n_errors"] == 16
    assert "every judgment failed" in failed["status_reason"]
    assert "Invalid image" in failed["first_error"]
    html = (tmp_path / "reports" / sweep_dir.name / "index.html").read_text()
    assert "2 judge cells (1 complete, 1 failed), of which 1 is analysed" in html
    assert "Failed or stopped cells" in html and "16 of 16" in html
    # The image question names the failure instead of suggesting the sweep that just ran.
    assert "failed or were stopped, so it cannot be answered" in html
    assert "sweep a vision model" not in html


def test_some_failed_rows_make_a_partial_cell(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.error(400, "Invalid image: too large."))
    result = run(tmp_path, "model=gpt4o", f"model.base_url={loopback.openai_base_url}")
    assert result.returncode == EXIT_PARTIAL, result.stderr
    assert "status partial: 1 of 16 judgments failed" in result.stderr
    summary = summary_of(only_run(tmp_path))
    assert summary["status"] == "partial" and summary["errors"]["by_kind"] == {"BadRequestError": 1}


# --- stopping cleanly ---------------------------------------------------------------------------


def resume_args(stderr: str) -> list[str]:
    """The resume command an interrupted run printed."""
    lines = stderr.splitlines()
    index = next(i for i, line in enumerate(lines) if "with:" in line)
    return shlex.split(lines[index + 1])


@pytest.mark.parametrize(
    ("signal_number", "code"), [(signal.SIGINT, EXIT_SIGINT), (signal.SIGTERM, EXIT_SIGTERM)]
)
def test_a_signal_keeps_answers_in_flight_writes_the_summary_and_prints_the_resume_command(
    tmp_path: Path, loopback: LoopbackServer, signal_number: int, code: int
) -> None:
    loopback.latency_s = 0.5  # a slow responder: calls are in flight when the signal comes
    args = ["model=gpt4o", "runner.concurrency=3", f"model.base_url={loopback.openai_base_url}"]
    process = start(tmp_path, *args)
    wait_for_requests(loopback, 4)
    process.send_signal(signal_number)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    run_dir = only_run(tmp_path)
    summary = summary_of(run_dir)
    assert summary["status"] == "interrupted" and summary["exit_code"] == code
    # Calls in flight answered within the grace period, and their rows were written.
    assert summary["n_judgments"] == loopback.request_count < 16
    assert summary["calls"]["abandoned_in_flight"] == 0
    resume = resume_args(stderr)
    assert resume[-1] == f"hydra.run.dir={run_dir}"
    assert "model=gpt4o" in resume and f"model.base_url={loopback.openai_base_url}" in resume

    loopback.latency_s = 0.0
    again = subprocess.run(resume, cwd=tmp_path, env=environment(), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    keys = [(r["query_id"], r["result_id"]) for r in rows(run_dir)]
    assert len(keys) == len(set(keys)) == 16
    assert max(prompts(loopback).values()) == 1  # nothing was asked twice


def test_calls_given_up_after_the_grace_period_are_counted_as_resent_on_resume(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.set_default(Behaviour.hang(20))  # answers that never come
    args = [
        "model=gpt4o",
        "runner.concurrency=3",
        "runner.grace_s=0.5",
        f"model.base_url={loopback.openai_base_url}",
    ]
    process = start(tmp_path, *args)
    wait_for_requests(loopback, 3)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_SIGTERM, stderr
    run_dir = only_run(tmp_path)
    assert summary_of(run_dir)["calls"]["abandoned_in_flight"] == 3

    loopback.set_default(None)
    again = subprocess.run(
        resume_args(stderr), cwd=tmp_path, env=environment(), capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    summary = summary_of(run_dir)
    sent_twice = sum(n - 1 for n in prompts(loopback).values())
    assert sent_twice == 3
    assert summary["cost"]["resent_requests"] == summary["calls"]["resent"] == 3
    lost = sum(r["cost_usd"] * r["resent"] for r in rows(run_dir))
    assert lost > 0 and summary["cost"]["resent_usd"] == pytest.approx(lost)
    paid = sum(r["cost_usd"] for r in rows(run_dir) if not r["cached"])
    assert summary["cost"]["spent_usd"] == pytest.approx(paid + summary["cost"]["resent_usd"])


def test_a_sigkill_in_flight_is_counted_as_resent_on_resume(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 3.0
    args = ["model=gpt4o", "runner.concurrency=4", f"model.base_url={loopback.openai_base_url}"]
    process = start(tmp_path, *args)
    wait_for_requests(loopback, 4)
    time.sleep(0.3)  # the first four are at the server, none answered yet
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    run_dir = only_run(tmp_path)

    loopback.latency_s = 0.0
    again = run(tmp_path, *args, f"hydra.run.dir={run_dir}")
    assert again.returncode == 0, again.stderr
    summary = summary_of(run_dir)
    assert sum(n - 1 for n in prompts(loopback).values()) == 4
    assert summary["cost"]["resent_requests"] == 4 and summary["n_judgments"] == 16


def test_two_processes_on_one_cell_pay_for_each_item_once(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 0.05
    base = ["model=gpt4o", "runner.concurrency=4", f"model.base_url={loopback.openai_base_url}"]
    dirs = [tmp_path / "results" / "runs" / name for name in ("first", "second")]
    processes = [start(tmp_path, *base, f"hydra.run.dir={d}", limit=40) for d in dirs]
    for process in processes:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
    assert max(prompts(loopback).values()) == 1
    assert loopback.request_count == 40
    for run_dir in dirs:
        assert len(rows(run_dir)) == 40
    cached = sum(sum(r["cached"] for r in rows(d)) for d in dirs)
    assert cached == 40  # every item paid for by one process, read by the other


def test_batch_mode_stops_on_a_signal_and_resumes_without_submitting_again(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.batch_default = BatchPlan(in_progress_polls=100_000)  # a batch that runs long
    args = [
        "model=gpt4o",
        "runner.mode=batch",
        "runner.batch_poll_s=0.1",
        f"model.base_url={loopback.openai_base_url}",
    ]
    process = start(tmp_path, *args)
    deadline = time.monotonic() + 60
    while not loopback.batches:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)
    time.sleep(0.3)  # a few polls
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_SIGINT, stderr
    assert "Traceback" not in stderr and "keep running at the provider" in stderr
    run_dir = only_run(tmp_path)
    summary = summary_of(run_dir)
    assert summary["status"] == "interrupted" and "batches.json" in summary["stopped_because"]

    (batch,) = loopback.batches
    loopback.replan(batch.id, BatchPlan(in_progress_polls=0))
    again = subprocess.run(
        resume_args(stderr), cwd=tmp_path, env=environment(), capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr
    assert len(loopback.batches) == 1  # collected, not submitted again
    assert summary_of(run_dir)["status"] == "complete" and len(rows(run_dir)) == 16
