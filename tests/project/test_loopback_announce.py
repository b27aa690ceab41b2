"""The loopback server's ``--announce-first`` mode, which benchmarks/fixed_cost.py uses to time
when a command's first call arrives."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fixtures import loopback_server
from tests.fixtures.loopback_server import RecordedRequest

ROOT = Path(__file__).resolve().parents[2]


def test_the_first_request_is_announced_once(capsys) -> None:
    seen: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> str:
        seen.append(request)
        return "2"

    respond = loopback_server._announcing_first(answer)
    before = time.time()
    assert respond("first") == "2"  # type: ignore[arg-type]
    assert respond("second") == "2"  # type: ignore[arg-type]
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("first request at ")
    assert before <= float(lines[0].rsplit(" ", 1)[1]) <= time.time()
    assert seen == ["first", "second"]


@pytest.mark.slow
def test_a_server_started_with_announce_first_prints_when_a_call_arrives() -> None:
    command = [sys.executable, "-m", "tests.fixtures.loopback_server", "--announce-first"]
    server = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        serving = server.stdout.readline()
        base = serving.split("OpenAI: ", 1)[1].rstrip(")\n")
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        sent = time.time()
        request = urllib.request.Request(
            f"{base}/chat/completions",
            data=body.encode(),
            headers={"Content-Type": "application/json"},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
        with opener.open(request, timeout=10) as response:
            assert response.status == 200
        line = server.stdout.readline()
        assert line.startswith("first request at ")
        assert sent - 1 <= float(line.rsplit(" ", 1)[1]) <= time.time()
    finally:
        server.terminate()
        server.wait(10)
