"""A server that answers every request with a 429: the run stops, failed, once
``runner.rate_limit_wait_s`` has passed with nothing but rate limits, in one line that names
the endpoint, the provider's message and how to resume."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mmjudge.store import read_summary
from mmjudge.store.status import EXIT_FAILED
from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.helpers import run_sweep

KEY = {"OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef"}


@pytest.mark.slow
def test_nothing_but_rate_limits_stops_the_run(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.set_default(Behaviour.rate_limit(retry_after=None))
    started = time.monotonic()
    result = run_sweep(
        tmp_path,
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "runner.rate_limit_wait_s=2",
        "runner.backoff_base_s=0.05",
        "runner.backoff_max_s=0.2",
        "runner.concurrency=4",
        env=KEY,
    )
    took = time.monotonic() - started
    assert result.returncode == EXIT_FAILED, result.stderr
    (line,) = [x for x in result.stderr.splitlines() if "were rate limits" in x]
    assert f"from {loopback.openai_base_url}" in line
    assert "Rate limit reached; try again later." in line
    assert "run the same command again to resume" in line
    assert "Traceback" not in result.stderr
    (run_dir,) = (tmp_path / "results" / "runs").iterdir()
    assert read_summary(run_dir).status.status == "failed"
    # Stopped soon after the wait, not after every item's retries (5 each, backing off).
    assert took < 60
