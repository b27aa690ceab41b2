"""The forecast learns output tokens per call from the cell's cached answers, and says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mmjudge.config import ModelConfig, PromptConfig
from mmjudge.costs.forecast import forecast_call
from mmjudge.costs.output_tokens import from_answer_format
from mmjudge.costs.sheets import price_for
from mmjudge.costs.tokens import count_tokens
from mmjudge.engine.cell import forecast, run_cell
from mmjudge.judges.registry import token_counting
from mmjudge.prompts.passages import answer_schema, grades_answer
from mmjudge.records import JudgeRequest, canonical_json
from tests.costs.test_ledger import sheet
from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.helpers import compose_config


def cell(tmp_path: Path, server: LoopbackServer, run: str, *extra: str) -> dict[str, Any]:
    overrides = [
        "model=gpt4o_mini",
        f"model.base_url={server.openai_base_url}",
        "dataset.limit=24",
        "runner.progress=false",
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        f"paths.image_cache={tmp_path / 'images'}",
        *extra,
    ]
    if "runner.dry_run=true" in extra:
        return forecast(compose_config(overrides), tmp_path / run).to_dict()
    return run_cell(compose_config(overrides), tmp_path / run).to_json()


def test_after_one_run_the_forecast_is_within_ten_percent_of_its_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer() as server:
        # A terse judge: far fewer output tokens than the answer format suggests.
        server.set_default(Behaviour.reply("2", usage={"completion_tokens": 3}))
        first = cell(tmp_path, server, "first")
        assert first["forecast"]["output_basis"] == "the prompt's answer format"
        again = cell(tmp_path, server, "again", "runner.dry_run=true")
    cost = first["cost"]["total_usd"]
    assert cost > 0
    assert abs(first["forecast"]["usd"] - cost) / cost > 0.10  # the format's guess was off
    assert again["forecast"]["output_basis"].startswith("cached answers to this cell")
    assert abs(again["forecast"]["usd"] - cost) / cost <= 0.10
    assert again["forecast"]["output_tokens"] == 3 * again["forecast"]["calls"]


def test_a_figure_the_user_sets_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer() as server:
        cell(tmp_path, server, "first")
        dry = cell(
            tmp_path, server, "dry", "runner.dry_run=true", "runner.forecast_output_tokens=7"
        )
    assert dry["forecast"]["output_basis"] == "runner.forecast_output_tokens=7"
    assert dry["forecast"]["output_tokens"] == 7 * dry["forecast"]["calls"]


def test_the_answer_format_sets_the_estimate() -> None:
    grade_only = from_answer_format(PromptConfig(explanation=False)).tokens
    explained = from_answer_format(PromptConfig()).tokens
    panel = from_answer_format(PromptConfig(raters=3, aspects=True, confidence=True)).tokens
    assert grade_only < explained < panel


def test_several_results_per_call_expect_one_grade_each_and_a_reason_only_where_asked() -> None:
    """A call about several results is answered with each result's marker and grade (5
    tokens), whatever ``prompt.explanation`` says: the single result's explanation is not
    asked for; ``prompt.passage_reasons`` adds one sentence (25 tokens) per result."""
    assert from_answer_format(PromptConfig(passages_per_call=5)).tokens == 5
    assert from_answer_format(PromptConfig(passages_per_call=5, explanation=False)).tokens == 5
    assert from_answer_format(PromptConfig(passages_per_call=5, passage_reasons=True)).tokens == 30
    assert from_answer_format(PromptConfig(passage_reasons=True)).tokens == 27  # one: unchanged


@pytest.mark.parametrize(
    ("provider", "model_id", "added"),
    [("openai", "gpt-4o-mini-2024-07-18", 0), ("anthropic", "claude-haiku-4-5-20251001", 313)],
)
def test_a_structured_answer_forecasts_its_schema_and_the_tool_prompt_as_input(
    provider: str, model_id: str, added: int
) -> None:
    model = ModelConfig(name="m", provider=provider, model_id=model_id)
    price = price_for(sheet("2026-10-31"), model)
    answer = grades_answer(5, (0, 1, 2), reasons=False)
    plain = JudgeRequest(item_key="c", prompt="Query: red dress\n\nR1\nname: Wrap dress")
    structured = JudgeRequest(item_key="c", prompt=plain.prompt, answer=answer)
    counting = token_counting(provider, model_id)

    def counted(text: str) -> int:
        return count_tokens(text, model_id, counting).tokens

    text = "\n" + plain.prompt
    schema_tokens = counted(text + "\n" + canonical_json(answer_schema(answer))) - counted(text)
    assert schema_tokens > 50
    grown = forecast_call(structured, model, price, 25).input_tokens
    assert grown - forecast_call(plain, model, price, 25).input_tokens == schema_tokens + added


def test_answers_from_the_cache_are_not_forecast(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer() as server:
        cell(tmp_path, server, "first")
        rerun = cell(tmp_path, server, "rerun")
        assert server.request_count == 24
    assert rerun["calls"]["api_calls"] == 0 and rerun["calls"]["cache_hits"] == 24
    assert rerun["forecast"]["calls"] == 0
