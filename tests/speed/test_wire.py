"""Calls after a judge's first skip most of the SDK's per-call machinery
(:mod:`mmjudge.speed.wire`): they must put the same request on the wire and give the same
answers and errors as the SDK's own path, for the OpenAI and the Anthropic SDK alike."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from mmjudge.engine.policy import error_text
from mmjudge.errors import FatalProviderError
from mmjudge.judges.anthropic import AnthropicJudge
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.http import SDKJudge
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.records import JudgeRequest
from mmjudge.speed import wire
from tests.fixtures.loopback_server import ANTHROPIC_PATH, OPENAI_PATH, Behaviour, LoopbackServer
from tests.judges.test_providers import (  # noqa: F401
    ANTHROPIC_KEY,
    OPENAI_KEY,
    _keys,
    anthropic_model,
    make_image,
    openai_model,
)

#: Headers that differ between two sends by design: a fresh key per request, the encodings
#: asked for (aiohttp decodes gzip and deflate itself), and connection handling.
PER_SEND = {"idempotency-key", "accept-encoding", "connection"}


#: Each SDK's judge, model settings, the path its calls go to, and the header with its key.
PROVIDERS: dict[str, tuple[Any, Any, str, tuple[str, str]]] = {
    "openai": (OpenAIJudge, openai_model, OPENAI_PATH, ("authorization", f"Bearer {OPENAI_KEY}")),
    "anthropic": (
        AnthropicJudge,
        anthropic_model,
        ANTHROPIC_PATH,
        ("authorization", f"Bearer {ANTHROPIC_KEY}"),
    ),
}


def judge_for(
    server: LoopbackServer, provider: str, timeout: float | None = None, **overrides: Any
) -> SDKJudge:
    judge_class, model, _path, _key = PROVIDERS[provider]
    judge: SDKJudge = judge_class(model(server, **overrides), timeout=timeout)
    return judge


def sent_to(server: LoopbackServer, provider: str) -> list[Any]:
    """The requests the server received at the provider's path."""
    return server.requests_to(PROVIDERS[provider][2])


def sent_key(sent: Any, provider: str) -> str | None:
    """The key header of a request as the SDK sends it (older Anthropic SDKs send the key as
    ``x-api-key``, newer ones as a bearer token)."""
    header, _value = PROVIDERS[provider][3]
    if provider == "anthropic" and "x-api-key" in sent.headers:
        return f"Bearer {sent.headers['x-api-key']}"
    return sent.headers.get(header)


def request(text: str = "Query: café crème ü — red shoes\nGrade 0, 1 or 2.") -> JudgeRequest:
    return JudgeRequest(item_key="q1:r1", prompt=text, system="Be careful.")


async def _sequence(judge: JudgeAPI, requests: list[JudgeRequest]) -> list[Any]:
    results: list[Any] = []
    try:
        for item in requests:
            try:
                results.append(await judge.generate(item))
            except Exception as error:
                results.append(error)
    finally:
        await judge.aclose()
    return results


def run(judge: JudgeAPI, *requests: JudgeRequest) -> list[Any]:
    return asyncio.run(_sequence(judge, list(requests)))


def test_later_calls_skip_the_sdk_and_send_the_same_request(
    loopback: LoopbackServer, provider: str
) -> None:
    judge = judge_for(loopback, provider)
    with_image = JudgeRequest(
        item_key="q1:r2", prompt="Query: shoes", system=None, images=(make_image(),)
    )
    answers = run(judge, request(), request(), with_image, with_image)
    assert all(not isinstance(answer, Exception) for answer in answers), answers
    assert judge._wire is not None and judge._wire.fast_calls == 4  # the first too
    first, second, image_sdk, image_fast = sent_to(loopback, provider)
    assert first.body == second.body and first.size == second.size
    assert image_sdk.body == image_fast.body and image_sdk.size == image_fast.size
    same = {k: v for k, v in first.headers.items() if k not in PER_SEND | {"content-length"}}
    assert {k: second.headers.get(k) for k in same} == same
    assert sent_key(second, provider) == PROVIDERS[provider][3][1]
    assert answers[0].text == answers[1].text and answers[0].usage == answers[1].usage


def test_calls_started_together_wait_for_the_first_and_take_the_fast_path(
    loopback: LoopbackServer, provider: str
) -> None:
    judge = judge_for(loopback, provider)

    async def together() -> list[Any]:
        try:
            return await asyncio.gather(*(judge.generate(request()) for _ in range(12)))
        finally:
            await judge.aclose()

    answers = asyncio.run(together())
    assert all(answer.text == answers[0].text for answer in answers)
    assert judge._wire is not None and judge._wire.fast_calls == 12  # after one capture
    bodies = [sent.body for sent in sent_to(loopback, provider)]
    assert len(bodies) == 12 and all(body == bodies[0] for body in bodies)


def test_calls_started_together_use_the_sdk_where_no_template_can_be_made(
    loopback: LoopbackServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = judge_for(loopback, provider)
    client = judge._client
    copies = 0

    def with_options(**kwargs: Any) -> Any:
        nonlocal copies
        copies += 1
        raise RuntimeError("cannot be copied")

    monkeypatch.setattr(client, "with_options", with_options)

    async def together() -> list[Any]:
        try:
            return await asyncio.gather(
                *(judge.generate(request()) for _ in range(4)), return_exceptions=True
            )
        finally:
            await judge.aclose()

    answers = asyncio.run(together())
    assert all(not isinstance(answer, Exception) for answer in answers), answers
    assert copies == 1  # one try at the template for the calls started together
    assert judge._wire is not None and judge._wire.fast_calls == 0
    assert len(sent_to(loopback, provider)) == 4  # each through the SDK


def test_the_httpx_option_keeps_every_call_on_the_sdk(
    loopback: LoopbackServer, provider: str
) -> None:
    judge = judge_for(loopback, provider, options={"http_client": "httpx"})
    run(judge, request(), request())
    assert judge._wire is None
    assert len(sent_to(loopback, provider)) == 2


BEHAVIOURS = [
    Behaviour.reply("2\nRelevant."),
    Behaviour.refusal(),
    Behaviour.reply("1", omit_usage=True),
    Behaviour.rate_limit(retry_after=2),
    Behaviour.server_error(503),
    Behaviour.error(401, "Incorrect API key provided"),
    Behaviour.error(404, "The model does not exist"),
    Behaviour.error(400, "Invalid image data"),
    Behaviour.error(400, "temperature is out of range"),
    Behaviour.drop(),
    Behaviour.malformed(),
    Behaviour.raw(200, "<html>bad gateway</html>", {"content-type": "text/html"}),
    Behaviour.raw(200, '{"id": "x", "object": "chat.completion"}'),
    Behaviour.raw(200, '{"id": "x", "type": "message", "content": [{"type": "text"}]}'),
    Behaviour.raw(200, '{"content": [{"type": "thinking", "thinking": "hm"}, "x"], "usage": 3}'),
    Behaviour.raw(200, "[1, 2]"),
    Behaviour.raw(302, "", {"location": "http://127.0.0.1:9/elsewhere"}),
]


def _seen(judge: SDKJudge, outcome: Any) -> tuple[Any, ...]:
    """What a user and the runner see of an outcome."""
    if isinstance(outcome, Exception):
        verdict = judge.classify_error(outcome)
        return (
            type(outcome).__name__,
            error_text(outcome),
            isinstance(outcome, FatalProviderError),
            verdict.retryable,
            verdict.retry_after,
            None if verdict.fatal is None else str(verdict.fatal),
            getattr(outcome, "status_code", None),
        )
    return (outcome.text, outcome.usage, outcome.raw_usage, outcome.stop_reason, outcome.model)


@pytest.mark.parametrize("behaviour", BEHAVIOURS, ids=lambda b: f"{b.action}-{b.status}")
def test_answers_and_errors_are_the_same_on_either_path(
    loopback: LoopbackServer, provider: str, behaviour: Behaviour
) -> None:
    sdk_judge = judge_for(loopback, provider)
    loopback.script(behaviour)
    (through_sdk,) = run(sdk_judge, request())
    fast_judge = judge_for(loopback, provider)
    loopback.script(Behaviour.reply("0"), behaviour)
    _warm, fast = run(fast_judge, request(), request())
    assert fast_judge._wire is not None and fast_judge._wire.fast_calls == 2
    assert _seen(fast_judge, fast) == _seen(sdk_judge, through_sdk)


def test_a_timeout_is_the_sdks_timeout_error(loopback: LoopbackServer, provider: str) -> None:
    sdk_judge = judge_for(loopback, provider, timeout=0.3)
    loopback.script(Behaviour.hang(seconds=5))
    (through_sdk,) = run(sdk_judge, request())
    fast_judge = judge_for(loopback, provider, timeout=0.3)
    loopback.script(Behaviour.reply("0"), Behaviour.hang(seconds=5))
    _warm, fast = run(fast_judge, request(), request())
    assert type(fast) is type(through_sdk)
    assert fast_judge.classify_error(fast).retryable


def test_a_refused_connection_is_the_sdks_connection_error(provider: str) -> None:
    with LoopbackServer() as server:
        judge = judge_for(server, provider)

        async def go() -> Exception:
            await judge.generate(request())
            await judge.aclose()  # the next call opens a new connection
            server.stop()
            try:
                await judge.generate(request())
            except Exception as error:
                return error
            finally:
                await judge.aclose()
            raise AssertionError("no error")

        error = asyncio.run(go())
    assert judge._wire is not None and judge._wire.fast_calls == 2
    sdk = __import__(provider)
    assert type(error) is sdk.APIConnectionError  # not its timeout error: nothing timed out
    assert "Connection error." in error_text(error) and "refused" in error_text(error).lower()
    assert judge.classify_error(error).retryable


def test_the_environments_proxy_is_looked_up_once_per_judge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mmjudge.speed.wire import _env_proxy

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert _env_proxy("https://api.openai.com/v1/chat/completions") == "http://proxy.internal:3128"
    assert _env_proxy("http://127.0.0.1:8000/v1/chat/completions") is None


def test_each_fast_call_sends_a_fresh_idempotency_key_where_the_sdk_sent_one() -> None:
    sdk_key = "stainless-python-retry-0b5c7e4a-2f7e-4a55-9f0e-1c2d3e4f5a6b"
    headers = {"Authorization": "Bearer k", "Idempotency-Key": sdk_key}
    name = wire.idempotency_header(headers)
    assert name == "Idempotency-Key"
    template = wire._Template("http://127.0.0.1/v1/x", headers, 0, name)
    keys = {template.headers_for_a_call()["Idempotency-Key"] for _ in range(3)}
    assert len(keys) == 3 and all(key.startswith("stainless-python-retry-") for key in keys)
    assert sdk_key not in keys
    # a key the user set for every request is theirs: sent as it is
    assert wire.idempotency_header({"Idempotency-Key": "mine"}) is None


#: Answers at JSON's corners: big and negative-zero numbers, float round trips, repeated keys,
#: NaN and infinities, surrogates, a BOM, whitespace.
JSON_TEXTS = [
    b'{"id": "x", "choices": [{"message": {"content": "2\\nok"}}], "usage": {"a": 1}}',
    b'{"a": 123456789012345678901234567890, "b": -0.0, "c": 1.0000000000000002}',
    b'{"a": 1, "a": 2}',
    b'{"a": 1e400}',
    b'{"a": NaN, "b": -Infinity}',
    b'{"a": "\\ud800 \\u0000 \\u00e9"}',
    b'\xef\xbb\xbf{"a": 1}',
    b' [1, 2.5e-3, "x"] ',
]


@pytest.mark.parametrize("raw", JSON_TEXTS)
def test_a_json_answer_reads_as_json_loads_reads_it(raw: bytes) -> None:
    assert repr(wire._parsed(raw, "application/json")) == repr(json.loads(raw))
    assert repr(wire._parsed(raw, "text/plain")) == repr(json.loads(raw))


def test_an_answer_that_is_not_json_is_an_error_under_a_json_type_and_text_otherwise() -> None:
    with pytest.raises(json.JSONDecodeError):
        wire._parsed(b"<html>busy</html>", "application/json; charset=utf-8")
    assert wire._parsed(b"<html>busy</html>", "text/html") == "<html>busy</html>"


def _json_compact(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class _Grade(int):
    pass


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "temperature": 0.0, "messages": [{"role": "user", "content": "é\u2028"}]},
        {"temperature": 1e-05, "top_p": 1e22, "x": -0.0, "y": 2**70},
        {"images": ("tuple", "of", "strings")},
        {1: "an int key"},
        {"grade": _Grade(2), "flag": True, "none": None},
        {"nan": float("nan")},
        {"inf": [float("-inf")]},
        {"surrogate": "\ud800"},
        {"bytes": b"raw"},
    ],
)
def test_a_body_is_written_as_the_sdks_write_it(body: Any) -> None:
    try:
        expected: Any = _json_compact(body)
    except Exception as error:
        expected = type(error)
    try:
        written: Any = wire._compact(body)
    except Exception as error:
        written = type(error)
    assert written == expected
