"""The structured answer of a call about several results on the wire: each judge, through
its real SDK client, against the loopback server: OpenAI's ``response_format`` with a strict
JSON schema, Anthropic's forced tool; the answer read back as the JSON object the parser
reads; the schema and Anthropic's tool-use system prompt in the input tokens; the same body in
a batch entry."""

from __future__ import annotations

import json

import pytest

from mmjudge.config import ModelConfig
from mmjudge.judges.anthropic import TOOL_PROMPT_TOKENS, AnthropicJudge
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.prompts.passages import grades_answer, parse_passages
from mmjudge.records import JudgeRequest
from tests.fixtures.loopback_server import ANTHROPIC_FORCED_TOOL_TOKENS, Behaviour, LoopbackServer
from tests.judges.test_providers import call

GRADES = (0, 1, 2, 3)
PROMPT = "Query: red dress\n\nR1\nname: Wrap dress\n\nR2\nname: Pea coat\n\nR3\nname: Red gown"
SCHEMA = {
    "type": "object",
    "properties": {f"R{n}": {"type": "integer", "enum": [0, 1, 2, 3]} for n in (1, 2, 3)},
    "required": ["R1", "R2", "R3"],
    "additionalProperties": False,
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")


def request(*, structured: bool = True) -> JudgeRequest:
    answer = grades_answer(3, GRADES, reasons=False) if structured else None
    return JudgeRequest(item_key="call:1", prompt=PROMPT, grades=GRADES, answer=answer)


def mini(server: LoopbackServer) -> ModelConfig:
    return ModelConfig(
        name="gpt4o_mini",
        provider="openai",
        model_id="gpt-4o-mini-2024-07-18",
        api_key_env="OPENAI_API_KEY",
        base_url=server.openai_base_url,
    )


def haiku(server: LoopbackServer) -> ModelConfig:
    return ModelConfig(
        name="claude_haiku45",
        provider="anthropic",
        model_id="claude-haiku-4-5-20251001",
        api_key_env="ANTHROPIC_API_KEY",
        base_url=server.anthropic_base_url,
    )


def test_openai_sends_a_strict_json_schema_and_reads_the_object(loopback: LoopbackServer) -> None:
    judge = OpenAIJudge(mini(loopback))
    answer = call(judge, request())
    body = loopback.last.body
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "grades", "strict": True, "schema": SCHEMA},
    }
    # The server keeps to the schema, as constrained decoding does: every key, on the scale.
    assert json.loads(answer.text) == {"R1": 2, "R2": 2, "R3": 2}
    assert [g.label for g in parse_passages(answer.text, 3, GRADES).grades] == [2, 2, 2]
    # A batch entry carries the same body.
    line = json.loads(OpenAIJudge(mini(loopback)).batch_entry("c1", request()))
    assert line["body"]["response_format"] == body["response_format"]


def test_anthropic_forces_one_tool_and_reads_its_input(loopback: LoopbackServer) -> None:
    judge = AnthropicJudge(haiku(loopback))
    answer = call(judge, request())
    body = loopback.last.body
    assert body["tools"] == [
        {
            "name": "grades",
            "description": "Record the grade of each result shown, under its marker.",
            "input_schema": SCHEMA,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "grades"}
    assert answer.stop_reason == "tool_use"
    assert json.loads(answer.text) == {"R1": 2, "R2": 2, "R3": 2}
    entry = json.loads(AnthropicJudge(haiku(loopback)).batch_entry("c1", request()))
    assert entry["params"]["tool_choice"] == body["tool_choice"]


def test_a_tool_call_is_the_answer_even_beside_text(loopback: LoopbackServer) -> None:
    """Anthropic's answer is the tool's input; a text block beside it is not read."""
    raw = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": [
            {"type": "text", "text": "R1: 0"},
            {"type": "tool_use", "id": "toolu_1", "name": "grades", "input": {"R1": 3}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    loopback.script(Behaviour.raw(200, json.dumps(raw)))
    answer = call(AnthropicJudge(haiku(loopback)), request())
    assert json.loads(answer.text) == {"R1": 3}


def test_a_request_without_a_structured_answer_sends_neither(loopback: LoopbackServer) -> None:
    call(OpenAIJudge(mini(loopback)), request(structured=False))
    assert "response_format" not in loopback.last.body
    call(AnthropicJudge(haiku(loopback)), request(structured=False))
    assert "tools" not in loopback.last.body and "tool_choice" not in loopback.last.body


def test_the_schema_and_the_tool_prompt_are_billed_as_input(loopback: LoopbackServer) -> None:
    plain = call(AnthropicJudge(haiku(loopback)), request(structured=False)).usage.input_tokens
    tool = call(AnthropicJudge(haiku(loopback)), request()).usage.input_tokens
    assert tool - plain > TOOL_PROMPT_TOKENS == ANTHROPIC_FORCED_TOOL_TOKENS
    plain = call(OpenAIJudge(mini(loopback)), request(structured=False)).usage.input_tokens
    schema = call(OpenAIJudge(mini(loopback)), request()).usage.input_tokens
    assert schema > plain
