"""Provider prompt caching on the wire: each judge, through its real SDK client, against the
loopback server, which caches prefixes and reports them the way each provider does; the
answers priced from the shipped sheet."""

from __future__ import annotations

import pytest

from mmjudge.config import ModelConfig
from mmjudge.costs.calls import CallPricer
from mmjudge.costs.sheets import ModelPrice
from mmjudge.judges.anthropic import AnthropicJudge
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.records import JudgeRequest, JudgeResponse, PromptCacheMark
from tests.costs.test_ledger import sheet
from tests.fixtures.loopback_server import LoopbackServer, estimate_tokens
from tests.judges.test_providers import call, make_image

SHARED = "Grade each search result for relevance on the scale below. " * 150 + "\n\n"
SYSTEM = "You grade search results for relevance."


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789")


def request(query: str, ttl: str = "5m", *, marked: bool = True) -> JudgeRequest:
    prompt = f"{SHARED}Query: {query}\nResult: a red dress\nGrade it 0, 1 or 2."
    mark = PromptCacheMark(prefix_chars=len(SHARED), ttl=ttl, key=f"key-{query}")
    return JudgeRequest(
        item_key=f"{query}:r1",
        prompt=prompt,
        system=SYSTEM,
        query=query,
        cache_mark=mark if marked else None,
    )


def sonnet(server: LoopbackServer) -> ModelConfig:
    return ModelConfig(
        name="claude_sonnet45",
        provider="anthropic",
        model_id="claude-sonnet-4-5-20250929",
        api_key_env="ANTHROPIC_API_KEY",
        base_url=server.anthropic_base_url,
        supports_images=True,
        prompt_cache_min_tokens=1024,
    )


def mini(server: LoopbackServer) -> ModelConfig:
    return ModelConfig(
        name="gpt4o_mini",
        provider="openai",
        model_id="gpt-4o-mini-2024-07-18",
        api_key_env="OPENAI_API_KEY",
        base_url=server.openai_base_url,
        prompt_cache_min_tokens=1024,
    )


def price(model: ModelConfig) -> ModelPrice:
    from mmjudge.costs.sheets import price_for

    return price_for(sheet("2026-10-31"), model)


def answers(judge: AnthropicJudge | OpenAIJudge, *requests: JudgeRequest) -> list[JudgeResponse]:
    return [call(judge, one) for one in requests]


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_marks_the_end_of_the_shared_part(loopback: LoopbackServer) -> None:
    call(AnthropicJudge(sonnet(loopback)), request("red dress"))
    body = loopback.last.body
    assert body["system"] == SYSTEM
    first, rest = body["messages"][0]["content"]
    assert first == {"type": "text", "text": SHARED, "cache_control": {"type": "ephemeral"}}
    assert rest == {"type": "text", "text": request("red dress").prompt[len(SHARED) :]}


def test_anthropic_one_hour_marks_say_so(loopback: LoopbackServer) -> None:
    call(AnthropicJudge(sonnet(loopback)), request("red dress", "1h"))
    first = loopback.last.body["messages"][0]["content"][0]
    assert first["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_anthropic_without_a_mark_sends_one_text_block(loopback: LoopbackServer) -> None:
    judge = AnthropicJudge(sonnet(loopback))
    call(judge, request("red dress", marked=False))
    assert loopback.last.body["messages"][0]["content"] == [
        {"type": "text", "text": request("red dress").prompt}
    ]
    unmarked = JudgeRequest(
        **{**request("red dress", marked=False).__dict__, "images": (make_image(),)}
    )
    call(judge, unmarked)
    blocks = loopback.last.body["messages"][0]["content"]
    assert [block["type"] for block in blocks] == ["image", "text"]  # images first, unmarked


def test_anthropic_puts_a_marked_requests_images_after_the_shared_part_and_caches_it(
    loopback: LoopbackServer,
) -> None:
    """With images, the shared part still comes first, with its breakpoint, so that every
    item's call reads it from the cache; the item's image and text follow."""
    judge = AnthropicJudge(sonnet(loopback))
    first, second = (
        JudgeRequest(**{**request(query).__dict__, "images": (make_image(),)})
        for query in ("red dress", "blue skirt")
    )
    answered = answers(judge, first, second)
    blocks = loopback.last.body["messages"][0]["content"]
    assert [block["type"] for block in blocks] == ["text", "image", "text"]
    assert blocks[0] == {"type": "text", "text": SHARED, "cache_control": {"type": "ephemeral"}}
    assert blocks[0]["text"] + blocks[2]["text"] == second.prompt
    shared = 8 + estimate_tokens(SYSTEM) + estimate_tokens(SHARED)
    assert answered[0].raw_usage["cache_creation_input_tokens"] == shared
    assert answered[1].raw_usage["cache_read_input_tokens"] == shared


def test_anthropic_writes_once_then_reads_priced_from_the_sheet(loopback: LoopbackServer) -> None:
    model = sonnet(loopback)
    first, second = answers(AnthropicJudge(model), request("red dress"), request("blue skirt"))
    shared = 8 + estimate_tokens(SYSTEM) + estimate_tokens(SHARED)
    assert first.raw_usage["cache_creation_input_tokens"] == shared
    assert first.raw_usage["cache_read_input_tokens"] == 0
    assert second.raw_usage["cache_read_input_tokens"] == shared
    assert second.usage.cached_input_tokens == shared
    rest = second.raw_usage["input_tokens"]
    assert second.usage.input_tokens == shared + rest
    pricer = CallPricer(price(model), model)
    out = second.usage.output_tokens
    # claude-sonnet-4-5 on 2026-10-31: input 3, cache write 3.75, cache read 0.30, output 15.
    assert pricer(request("x"), first).total_usd == pytest.approx(
        (shared * 3.75 + first.raw_usage["input_tokens"] * 3 + out * 15) / 1e6
    )
    assert pricer(request("x"), second).total_usd == pytest.approx(
        (shared * 0.3 + rest * 3 + out * 15) / 1e6
    )


def test_anthropic_hour_writes_are_priced_at_the_hour_rate(loopback: LoopbackServer) -> None:
    model = sonnet(loopback)
    (first,) = answers(AnthropicJudge(model), request("red dress", "1h"))
    written = first.raw_usage["cache_creation"]["ephemeral_1h_input_tokens"]
    assert written == first.usage.cache_write_1h_tokens == first.usage.cache_write_tokens > 0
    rest, out = first.raw_usage["input_tokens"], first.usage.output_tokens
    assert CallPricer(price(model), model)(request("x"), first).total_usd == pytest.approx(
        (written * 6.0 + rest * 3 + out * 15) / 1e6
    )


def test_anthropic_below_the_minimum_nothing_is_cached(loopback: LoopbackServer) -> None:
    loopback.prompt_cache.min_tokens = 100_000
    first, second = answers(AnthropicJudge(sonnet(loopback)), request("a"), request("b"))
    for answer in (first, second):
        assert answer.usage.cached_input_tokens == answer.usage.cache_write_tokens == 0


# -- OpenAI ----------------------------------------------------------------------------------


def test_openai_sends_a_cache_key_per_query(loopback: LoopbackServer) -> None:
    judge = OpenAIJudge(mini(loopback))
    call(judge, request("red dress"))
    assert loopback.last.body["prompt_cache_key"] == "key-red dress"
    assert loopback.last.body["messages"][1]["content"] == request("red dress").prompt
    call(OpenAIJudge(mini(loopback)), request("red dress", marked=False))
    assert "prompt_cache_key" not in loopback.last.body


def test_openai_reports_cached_tokens_priced_from_the_sheet(loopback: LoopbackServer) -> None:
    model = mini(loopback)
    first, second = answers(OpenAIJudge(model), request("red dress"), request("blue skirt"))
    assert first.raw_usage["prompt_tokens_details"]["cached_tokens"] == 0
    cached = second.raw_usage["prompt_tokens_details"]["cached_tokens"]
    # The shared part is about 1,370 tokens: cached in steps of 128 past 1,024.
    assert cached >= 1024 and (cached - 1024) % 128 == 0
    assert second.usage.cached_input_tokens == cached
    prompt, out = second.usage.input_tokens, second.usage.output_tokens
    # gpt-4o-mini on 2026-10-31: input 0.15, cached input 0.075, output 0.60.
    assert CallPricer(price(model), model)(request("x"), second).total_usd == pytest.approx(
        ((prompt - cached) * 0.15 + cached * 0.075 + out * 0.6) / 1e6
    )
