"""``OPENAI_BASE_URL`` and ``ANTHROPIC_BASE_URL`` are honoured as the official SDKs honour them,
and ``model.base_url`` wins over them: judges, the response cache's key and summary.json agree
on where the calls go."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mmjudge.config import ModelConfig
from mmjudge.engine.response_cache import request_key
from mmjudge.errors import ConfigError
from mmjudge.judges import anthropic as anthropic_provider
from mmjudge.judges import openai as openai_provider
from mmjudge.judges.anthropic import AnthropicJudge
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.judges.registry import endpoint_override
from mmjudge.records import JudgeRequest
from tests.fixtures.loopback_server import ANTHROPIC_PATH, OPENAI_PATH, LoopbackServer

KEY = "test-key-for-the-loopback-server"
LIMIT = 4
REQUEST = JudgeRequest(item_key="q1:r1", prompt="Query: shoes\nResult: red shoes\nGrade 0-2.")


@pytest.fixture(autouse=True)
def _environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def dead_url(path: str = "/v1") -> str:
    """A loopback URL where nothing listens (a port that was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def model(provider: str, base_url: str | None = None, **settings: Any) -> ModelConfig:
    anthropic = provider == "anthropic"
    key_env = "ANTHROPIC_API_KEY" if anthropic else "OPENAI_API_KEY"
    return ModelConfig(
        name="judge",
        provider=provider,
        model_id="claude-3-haiku-20240307" if anthropic else "gpt-4o-mini-2024-07-18",
        api_key_env=settings.pop("api_key_env", key_env),
        base_url=base_url,
        **settings,
    )


def answer(judge: JudgeAPI) -> str:
    async def go() -> str:
        try:
            return (await judge.generate(REQUEST)).text
        finally:
            await judge.aclose()

    return asyncio.run(go())


def test_openai_judge_calls_OPENAI_BASE_URL(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    judge = OpenAIJudge(model("openai"))
    assert judge.base_url == loopback.openai_base_url
    assert answer(judge)
    assert len(loopback.requests_to(OPENAI_PATH)) == 1


def test_anthropic_judge_calls_ANTHROPIC_BASE_URL(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", loopback.anthropic_base_url)
    judge = AnthropicJudge(model("anthropic"))
    assert answer(judge)
    assert len(loopback.requests_to(ANTHROPIC_PATH)) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic", "openai_compatible"])
def test_model_base_url_wins_over_the_variable(
    provider: str, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", dead_url())
    monkeypatch.setenv("ANTHROPIC_BASE_URL", dead_url(""))
    if provider == "anthropic":
        judge: JudgeAPI = AnthropicJudge(model(provider, loopback.anthropic_base_url))
        path = ANTHROPIC_PATH
    else:
        judge = OpenAIJudge(model(provider, loopback.openai_base_url))
        path = OPENAI_PATH
    assert answer(judge)
    assert len(loopback.requests_to(path)) == 1


def test_a_compatible_server_may_come_from_OPENAI_BASE_URL_alone(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = {"api_key_env": None}
    with pytest.raises(ConfigError, match="OPENAI_BASE_URL"):
        OpenAIJudge(model("openai_compatible", **settings))
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    assert answer(OpenAIJudge(model("openai_compatible", **settings)))
    assert loopback.last.headers["authorization"] == "Bearer not-needed"


def test_a_blank_variable_means_the_public_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "  ")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    assert OpenAIJudge(model("openai")).base_url == openai_provider.DEFAULT_BASE_URL
    assert AnthropicJudge(model("anthropic")).base_url == anthropic_provider.DEFAULT_BASE_URL


def test_local_judges_ignore_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", dead_url())
    lexical = ModelConfig(name="lexical", provider="lexical", model_id="lexical-bm25")
    assert endpoint_override(lexical) is None


def test_the_cache_key_follows_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    gateway = "http://127.0.0.1:8000/v1"
    public = request_key(model("openai"), REQUEST)
    assert public == request_key(model("openai", None), REQUEST)
    monkeypatch.setenv("OPENAI_BASE_URL", gateway)
    through_variable = request_key(model("openai"), REQUEST)
    assert through_variable != public
    assert through_variable == request_key(model("openai", gateway), REQUEST)


def test_credentials_in_the_variable_are_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    password = "pw" + os.urandom(8).hex()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:{password}@127.0.0.1:9/v1")
    # Refused before any call (the SDK's key header clashes with them), and not repeated.
    with pytest.raises(ConfigError) as refused:
        OpenAIJudge(model("openai"))
    assert password not in str(refused.value)


# -- real sweeps ------------------------------------------------------------------------------


def sweep(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mmjudge.sweep",
            *args,
            f"dataset.limit={LIMIT}",
            f"paths.results={tmp_path / 'results'}",
            f"paths.reports={tmp_path / 'reports'}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            "runner.progress=false",
            "report.build=false",
        ],
        cwd=tmp_path,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def summary_of(tmp_path: Path) -> dict[str, Any]:
    [run_dir] = (tmp_path / "results" / "runs").iterdir()
    return dict(json.loads((run_dir / "summary.json").read_text()))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("judge", "variable", "path"),
    [
        ("gpt4o_mini", "OPENAI_BASE_URL", OPENAI_PATH),
        ("claude3_haiku", "ANTHROPIC_BASE_URL", ANTHROPIC_PATH),
    ],
)
def test_a_sweep_goes_where_the_variable_says(
    judge: str, variable: str, path: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    url = loopback.openai_base_url if path == OPENAI_PATH else loopback.anthropic_base_url
    key = "OPENAI_API_KEY" if path == OPENAI_PATH else "ANTHROPIC_API_KEY"
    result = sweep(tmp_path, f"model={judge}", env={variable: url, key: KEY})
    assert result.returncode == 0, result.stderr
    assert len(loopback.requests_to(path)) == LIMIT
    summary = summary_of(tmp_path)
    assert summary["endpoint"] == url and summary["n_errors"] == 0
    assert summary["config"]["model"]["base_url"] is None


@pytest.mark.slow
def test_in_a_sweep_model_base_url_wins(tmp_path: Path, loopback: LoopbackServer) -> None:
    env = {"OPENAI_BASE_URL": dead_url(), "OPENAI_API_KEY": KEY}
    result = sweep(
        tmp_path, "model=gpt4o_mini", f"model.base_url={loopback.openai_base_url}", env=env
    )
    assert result.returncode == 0, result.stderr
    assert len(loopback.requests_to(OPENAI_PATH)) == LIMIT
    assert summary_of(tmp_path)["endpoint"] == loopback.openai_base_url
