"""Prompt caching end to end: a sweep through each provider's real SDK against the loopback
server, which caches prefixes the way the provider does; the requests, the rows' usage, the
summary's ``prompt_cache`` block and the dry run's line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.loopback_server import ANTHROPIC_PATH, OPENAI_PATH, LoopbackServer
from tests.helpers import run_sweep

pytestmark = pytest.mark.slow  # every test here starts python -m mmjudge.sweep

KEY = "sk-test-loopback-0123456789abcdef"
LIMIT = 8
#: The demo prompt's shared part is a few hundred tokens: below every provider's minimum, so
#: the tests lower the model's and the server's minimum alike.
MINIMUM = 100
QUICK = (f"dataset.limit={LIMIT}", "prompt=guidelines", "runner.concurrency=1")


def summary(tmp_path: Path) -> dict:
    (run_dir,) = sorted((tmp_path / "results" / "runs").iterdir())
    return dict(json.loads((run_dir / "summary.json").read_text()))


def test_anthropic_marks_the_shared_part_and_the_summary_tells_the_saving(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.prompt_cache.min_tokens = MINIMUM
    overrides = (
        *QUICK,
        "model=claude_sonnet45",
        f"model.prompt_cache_min_tokens={MINIMUM}",
        f"model.base_url={loopback.anthropic_base_url}",
    )
    dry = run_sweep(tmp_path, *overrides, "runner.dry_run=true", env={"ANTHROPIC_API_KEY": KEY})
    assert dry.returncode == 0, dry.stderr
    assert "prompt cache: " in dry.stdout and "below list price" in dry.stdout
    (tmp_path / "run").mkdir()
    result = run_sweep(tmp_path / "run", *overrides, env={"ANTHROPIC_API_KEY": KEY})
    assert result.returncode == 0, result.stderr
    sent = loopback.requests_to(ANTHROPIC_PATH)
    assert len(sent) == LIMIT
    shared = {r.body["messages"][0]["content"][0]["text"] for r in sent}
    assert len(shared) == 1  # the same marked part in every request
    first = sent[0].body["messages"][0]["content"]
    assert first[0]["cache_control"] == {"type": "ephemeral"}
    assert first[1]["text"].startswith("Query: ")
    block = summary(tmp_path / "run")["prompt_cache"]
    prefix = block["write_tokens"]
    assert prefix > MINIMUM and block["read_tokens"] == (LIMIT - 1) * prefix
    assert block["hit_rate"] == pytest.approx(block["read_tokens"] / block["input_tokens"])
    # claude-sonnet-4-5: reads save 3.00 - 0.30 a million tokens, the one write costs 0.75 more.
    saved = ((LIMIT - 1) * prefix * 2.7 - prefix * 0.75) / 1e6
    assert block["saved_usd"] == pytest.approx(saved)
    assert block["saved_usd_per_million"] == pytest.approx(saved / LIMIT * 1e6)


def test_off_sends_no_mark_and_the_summary_has_no_block(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.prompt_cache.min_tokens = MINIMUM
    result = run_sweep(
        tmp_path,
        *QUICK,
        "model=claude_sonnet45",
        "runner.prompt_cache=off",
        f"model.prompt_cache_min_tokens={MINIMUM}",
        f"model.base_url={loopback.anthropic_base_url}",
        env={"ANTHROPIC_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    for sent in loopback.requests_to(ANTHROPIC_PATH):
        assert len(sent.body["messages"][0]["content"]) == 1
    assert "prompt_cache" not in summary(tmp_path)


def test_openai_keys_each_query_and_reports_what_it_cached(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.prompt_cache.min_tokens = MINIMUM
    result = run_sweep(
        tmp_path,
        *QUICK,
        "model=gpt4o_mini",
        f"model.prompt_cache_min_tokens={MINIMUM}",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    sent = loopback.requests_to(OPENAI_PATH)
    keys = {r.body["prompt_cache_key"] for r in sent}
    queries = {r.body["messages"][1]["content"].split("Query: ", 1)[1].split("\n")[0] for r in sent}
    assert len(keys) == len(queries)
    block = summary(tmp_path)["prompt_cache"]
    assert block["write_tokens"] == 0 and block["read_tokens"] > 0
    assert block["saved_usd"] == pytest.approx(block["read_tokens"] * (0.15 - 0.075) / 1e6)


def test_a_shared_part_below_the_minimum_is_skipped_and_the_dry_run_says_so(
    tmp_path: Path,
) -> None:
    result = run_sweep(
        tmp_path,
        *QUICK,
        "model=claude_haiku45",
        "runner.dry_run=true",
        env={"ANTHROPIC_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    assert "prompt cache skipped: the shared part is " in result.stdout
    assert "below claude-haiku-4-5-20251001's minimum of 4,096" in result.stdout
