"""Issue 46, money under faults, against a loopback server that bills every request it receives
(each answer reports the same usage, so every request costs the same): three SIGKILLs, three
SIGTERMs, or answers costing 20x their forecast, under ``runner.max_cost_usd``, cost at most
the cap plus one round of calls in flight; a run whose sends all timed out keeps its folder
when stopped, and the next run counts those sends; possibly billed is one figure after any
number of stops."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.fixtures.loopback_server import OPENAI_PATH, Behaviour, LoopbackServer
from tests.helpers import run_sweep, start_sweep

pytestmark = pytest.mark.slow

KEY = "sk-faults-test-0123456789abcdef"
ENV = {"OPENAI_API_KEY": KEY}
#: gpt4o's prices (conf/pricing/2026-10-31.yaml, gpt-4o-2024-05-13), dollars per token.
INPUT_USD, OUTPUT_USD = 5.0e-6, 15.0e-6
#: Calls in flight at once in these tests: one round.
ROUND = 4


def billing(server: LoopbackServer, prompt: int, completion: int) -> float:
    """Make every answer report this usage; returns what each request costs."""
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    server.set_default(Behaviour.reply(usage={**usage, "total_tokens": prompt + completion}))
    return prompt * INPUT_USD + completion * OUTPUT_USD


def billed(server: LoopbackServer, unit_usd: float) -> float:
    """What the server would bill: every request it received, answered or not."""
    return len(server.requests_to(OPENAI_PATH)) * unit_usd


def cell(loopback: LoopbackServer, run_dir: Path, cap: float, *extra: str) -> list[str]:
    return [
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=80",
        f"runner.concurrency={ROUND}",
        f"runner.max_cost_usd={cap}",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        "report.build=false",
        f"hydra.run.dir={run_dir}",
        *extra,
    ]


def stop_in_flight(
    loopback: LoopbackServer, process: subprocess.Popen[bytes], how: int, more: int
) -> None:
    """Stop ``process`` with ``how`` once ``more`` further requests reached the server (none
    is answered: they are all in flight), or let it be when it ends first (its budget)."""
    start = loopback.request_count
    deadline = time.monotonic() + 60
    while loopback.request_count < start + more and process.poll() is None:
        assert time.monotonic() < deadline, "the run sent nothing"
        time.sleep(0.01)
    if process.poll() is None:
        time.sleep(0.2)
        process.send_signal(how)
    process.wait(timeout=60)


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_three_stops_in_flight_cost_at_most_the_cap_and_one_round(
    tmp_path: Path, loopback: LoopbackServer, how: int
) -> None:
    unit = billing(loopback, prompt=300, completion=20)  # about the forecast of a call
    loopback.latency_s = 30.0  # no answer comes before the stop: a round is in flight
    cap = 6 * unit
    run_dir = tmp_path / "run"
    args = cell(loopback, run_dir, cap, "runner.grace_s=0.1")
    for _ in range(3):
        stop_in_flight(loopback, start_sweep(tmp_path, *args, env=ENV), how, more=ROUND)
    loopback.latency_s = 0.0
    last = run_sweep(tmp_path, *args, env=ENV)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped_by_budget", last.stderr
    assert billed(loopback, unit) <= cap + ROUND * unit + 1e-12, last.stderr


def dear_or_slow(unit_tokens: dict[str, int]):  # type: ignore[no-untyped-def]
    """One request in four (the first of each four) gets a dear answer at once; the others
    take longer than the runner waits, and are billed all the same."""
    count = {"n": 0}

    def respond(_request):  # type: ignore[no-untyped-def]
        count["n"] += 1
        if count["n"] % 4 == 1:
            total = unit_tokens["prompt_tokens"] + unit_tokens["completion_tokens"]
            return Behaviour.reply(usage={**unit_tokens, "total_tokens": total})
        return Behaviour.hang(5.0)

    return respond


def test_answers_dearer_than_forecast_cost_at_most_the_cap_and_one_round(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    # A call is forecast at about 300 input tokens and a few dozen output tokens, ~$0.002;
    # each answer reports 2,500 output tokens of reasoning, about 20 times that, and three
    # calls in four take longer than the runner waits: those are billed too.
    tokens = {"prompt_tokens": 300, "completion_tokens": 2500}
    unit = tokens["prompt_tokens"] * INPUT_USD + tokens["completion_tokens"] * OUTPUT_USD
    loopback.responder = dear_or_slow(tokens)
    cap = 0.1
    run_dir = tmp_path / "run"
    args = cell(
        loopback,
        run_dir,
        cap,
        "runner.timeout_s=1",
        "runner.max_retries=3",
        "runner.breaker_failures=100",
    )
    done = run_sweep(tmp_path, *args, env=ENV)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped_by_budget", done.stderr
    forecast = summary["forecast"]
    assert forecast["usd"] / forecast["calls"] * 15 < unit  # the answers are that much dearer
    assert billed(loopback, unit) <= cap + ROUND * unit + 1e-12, done.stderr


def _console_sends(text: str) -> int:
    found = re.findall(r"possibly billed \+\$[0-9.]+ \((\d+) sends given up", text)
    return int(found[-1]) if found else 0


def test_a_stopped_run_whose_sends_all_timed_out_keeps_its_folder_and_the_next_counts_them(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 3.0  # every answer comes after the runner's 1 s limit
    run_dir = tmp_path / "run"
    args = [
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=10",
        f"runner.concurrency={ROUND}",
        "runner.timeout_s=1",
        "runner.backoff_base_s=30",  # after the first timeouts, the run waits to retry
        "runner.backoff_max_s=30",
        f"hydra.run.dir={run_dir}",
    ]
    process = start_sweep(tmp_path, *args, env=ENV)
    deadline = time.monotonic() + 60
    while len(loopback.requests_to(OPENAI_PATH)) < ROUND:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.02)
    time.sleep(2.0)  # timed out, waiting to retry: nothing in flight
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    sent = len(loopback.requests_to(OPENAI_PATH))
    assert run_dir.is_dir(), "the folder holding the evidence of billed sends was removed"
    first = json.loads((run_dir / "summary.json").read_text())
    assert first["status"] == "interrupted"
    assert first["calls"]["possibly_billed"] == sent == ROUND

    loopback.latency_s = 0.0
    again = run_sweep(tmp_path, *args, "runner.timeout_s=30", env=ENV)
    resumed = json.loads((run_dir / "summary.json").read_text())
    assert resumed["status"] == "complete", again.stderr
    cost = resumed["cost"]
    assert resumed["calls"]["possibly_billed"] == cost["possibly_billed_requests"] == sent
    assert _console_sends(again.stdout + again.stderr) == sent


def test_possibly_billed_is_one_figure_after_repeated_breaker_stops(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 2.0  # every answer comes after the runner's 1 s limit
    run_dir = tmp_path / "run"
    args = [
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=40",
        f"runner.concurrency={ROUND}",
        "runner.timeout_s=1",
        "runner.max_retries=1",
        "runner.breaker_failures=3",
        "runner.grace_s=0",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        "report.build=false",
        f"hydra.run.dir={run_dir}",
    ]
    for _ in range(3):
        stopped = run_sweep(tmp_path, *args, env=ENV)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["status"] == "failed", stopped.stderr  # the breaker stopped it
        sent = len(loopback.requests_to(OPENAI_PATH))
        figures = (
            _console_sends(stopped.stdout + stopped.stderr),
            summary["cost"]["possibly_billed_requests"],
            summary["calls"]["possibly_billed"],
        )
        # Nothing was answered: every send is possibly billed or was resent and answered.
        assert figures == (sent, sent, sent), stopped.stderr
    loopback.latency_s = 0.0
    done = run_sweep(tmp_path, *args, "runner.timeout_s=30", env=ENV)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "complete", done.stderr
    unanswered = len(loopback.requests_to(OPENAI_PATH)) - summary["calls"]["api_calls"]
    cost = summary["cost"]
    assert cost["possibly_billed_requests"] + cost["resent_requests"] == unanswered
    assert summary["calls"]["possibly_billed"] == cost["possibly_billed_requests"]
