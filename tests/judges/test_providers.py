"""The OpenAI and Anthropic judges, through the real SDK clients, against the loopback server."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from mmjudge.config import ModelConfig
from mmjudge.engine.policy import classify
from mmjudge.errors import ConfigError, CredentialError, FatalProviderError
from mmjudge.judges.anthropic import AnthropicJudge
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.http import MalformedResponseError, retry_after_seconds
from mmjudge.judges.openai import OpenAIJudge, default_max_tokens_param
from mmjudge.judges.registry import create_judge
from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse
from tests.fixtures.loopback_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    Behaviour,
    LoopbackServer,
    decode_image,
    estimate_tokens,
    image_size,
)

OPENAI_KEY = "sk-test-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-0123456789"
PROMPT = "Query: red running shoes\nResult: Nike Pegasus, red\nGrade the result 0, 1 or 2."
SYSTEM = "You are a careful relevance assessor."


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)


def make_image(encoding: str = "data_url", size: int = 512) -> EncodedImage:
    picture = Image.new("RGB", (size, size), (200, 30, 30))
    buffer = io.BytesIO()
    picture.save(buffer, format="JPEG", quality=85)
    raw = buffer.getvalue()
    encoded = base64.b64encode(raw).decode("ascii")
    data = {
        "data_url": f"data:image/jpeg;base64,{encoded}",
        "base64": encoded,
        "url": "https://images.example.com/shoe.jpg",
    }[encoding]
    return EncodedImage(
        source="shoe.jpg" if encoding != "url" else data,
        sha256=hashlib.sha256(raw if encoding != "url" else data.encode()).hexdigest(),
        media_type="image/jpeg",
        width=size if encoding != "url" else 0,
        height=size if encoding != "url" else 0,
        data=data,
        encoding=encoding,
    )


def make_request(*images: EncodedImage, system: str | None = SYSTEM) -> JudgeRequest:
    return JudgeRequest(item_key="q1:r1", prompt=PROMPT, system=system, images=tuple(images))


def openai_model(server: LoopbackServer | None = None, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {
        "name": "gpt4o",
        "provider": "openai",
        "model_id": "gpt-4o-2024-05-13",
        "supports_images": True,
        "temperature": 0.0,
        "max_tokens": 200,
        "api_key_env": "OPENAI_API_KEY",
        "base_url": server.openai_base_url if server else None,
    }
    settings.update(overrides)
    return ModelConfig(**settings)


def anthropic_model(server: LoopbackServer | None = None, **overrides: Any) -> ModelConfig:
    settings: dict[str, Any] = {
        "name": "claude35_sonnet",
        "provider": "anthropic",
        "model_id": "claude-3-5-sonnet-20240620",
        "supports_images": True,
        "temperature": 0.0,
        "max_tokens": 200,
        "api_key_env": "ANTHROPIC_API_KEY",
        "base_url": server.anthropic_base_url if server else None,
    }
    settings.update(overrides)
    return ModelConfig(**settings)


def call(judge: JudgeAPI, request: JudgeRequest) -> JudgeResponse:
    async def go() -> JudgeResponse:
        try:
            return await judge.generate(request)
        finally:
            await judge.aclose()

    return asyncio.run(go())


def failure(judge: JudgeAPI, request: JudgeRequest) -> Exception:
    """The exception ``generate`` raises, as the runner sees it: the run-stopping error when
    the judge classifies it as fatal (the test fails if ``generate`` returns)."""
    try:
        call(judge, request)
    except Exception as error:
        return classify(judge, error).fatal or error
    raise AssertionError("generate() succeeded but an error was expected")


JudgeFactory = Callable[..., JudgeAPI]


def new_openai(server: LoopbackServer, **kwargs: Any) -> JudgeAPI:
    timeout = kwargs.pop("timeout", None)
    return OpenAIJudge(openai_model(server, **kwargs), timeout=timeout)


def new_anthropic(server: LoopbackServer, **kwargs: Any) -> JudgeAPI:
    timeout = kwargs.pop("timeout", None)
    return AnthropicJudge(anthropic_model(server, **kwargs), timeout=timeout)


BOTH = pytest.mark.parametrize("factory", [new_openai, new_anthropic], ids=["openai", "anthropic"])


# -- OpenAI: what goes over the wire ---------------------------------------------------------


def test_openai_request_shape(loopback: LoopbackServer) -> None:
    image = make_image()
    response = call(new_openai(loopback), make_request(image, image))

    sent = loopback.last
    assert sent.path == OPENAI_PATH
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    body = sent.body
    assert body["model"] == "gpt-4o-2024-05-13"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 200
    assert "max_completion_tokens" not in body
    assert "reasoning_effort" not in body
    system, user = body["messages"]
    assert system == {"role": "system", "content": SYSTEM}
    assert user["role"] == "user"
    text, *images = user["content"]
    assert text == {"type": "text", "text": PROMPT}
    assert len(images) == 2
    for part in images:
        assert part["type"] == "image_url"
        assert part["image_url"]["detail"] == "low"
        url = part["image_url"]["url"]
        assert url.startswith("data:image/jpeg;base64,")
        decoded = Image.open(io.BytesIO(decode_image(url)))
        assert decoded.size == (512, 512)

    assert response.text == "2\nThe result matches the query."
    assert response.stop_reason == "stop"
    assert response.model == "gpt-4o-2024-05-13"
    assert response.latency_s > 0


def test_openai_detail_and_encodings(loopback: LoopbackServer) -> None:
    judge = new_openai(loopback, image_detail="high")
    call(judge, make_request(make_image("base64"), make_image("url")))
    parts = loopback.last.body["messages"][-1]["content"][1:]
    assert [part["image_url"]["detail"] for part in parts] == ["high", "high"]
    bare = make_image("base64")
    assert parts[0]["image_url"]["url"] == f"data:image/jpeg;base64,{bare.data}"
    assert parts[1]["image_url"]["url"] == "https://images.example.com/shoe.jpg"


def test_openai_text_only_sends_plain_content(loopback: LoopbackServer) -> None:
    call(new_openai(loopback), make_request(system=None))
    messages = loopback.last.body["messages"]
    assert messages == [{"role": "user", "content": PROMPT}]


def test_openai_temperature_left_out_when_none(loopback: LoopbackServer) -> None:
    call(new_openai(loopback, temperature=None), make_request())
    assert "temperature" not in loopback.last.body


def test_openai_reasoning_model_parameters(loopback: LoopbackServer) -> None:
    judge = new_openai(
        loopback,
        name="gpt5_mini",
        model_id="gpt-5-mini-2025-08-07",
        temperature=None,
        max_tokens=2000,
        options={"reasoning_effort": "minimal"},
    )
    call(judge, make_request())
    body = loopback.last.body
    assert body["max_completion_tokens"] == 2000
    assert "max_tokens" not in body
    assert body["reasoning_effort"] == "minimal"
    assert "temperature" not in body


def test_max_tokens_param_defaults_and_override(loopback: LoopbackServer) -> None:
    assert default_max_tokens_param("gpt-4o-2024-05-13") == "max_tokens"
    assert default_max_tokens_param("o3-mini") == "max_completion_tokens"
    assert default_max_tokens_param("gpt-5-nano") == "max_completion_tokens"
    assert default_max_tokens_param("openai/o4-mini") == "max_completion_tokens"
    judge = new_openai(loopback, options={"max_tokens_param": "max_completion_tokens"})
    call(judge, make_request())
    assert loopback.last.body["max_completion_tokens"] == 200
    with pytest.raises(ConfigError, match="max_tokens_param"):
        new_openai(loopback, options={"max_tokens_param": "max_output_tokens"})


# -- OpenAI: what comes back -----------------------------------------------------------------


def test_openai_usage_mapping(loopback: LoopbackServer) -> None:
    loopback.script(
        Behaviour.reply(
            "1\nPartly relevant.",
            usage={
                "prompt_tokens": 1200,
                "completion_tokens": 60,
                "total_tokens": 1260,
                "prompt_tokens_details": {"cached_tokens": 1024, "image_tokens": 85},
                "completion_tokens_details": {"reasoning_tokens": 48},
            },
        )
    )
    response = call(new_openai(loopback), make_request(make_image()))
    usage = response.usage
    assert usage.input_tokens == 1200
    assert usage.output_tokens == 60
    assert usage.cached_input_tokens == 1024
    assert usage.reasoning_tokens == 48
    assert usage.image_tokens == 85
    assert usage.cache_write_tokens == 0
    assert response.raw_usage["prompt_tokens_details"]["cached_tokens"] == 1024
    assert response.raw_usage["completion_tokens_details"]["rejected_prediction_tokens"] == 0
    assert response.raw_usage["total_tokens"] == 1260


def test_openai_estimated_usage_is_realistic(loopback: LoopbackServer) -> None:
    response = call(new_openai(loopback), make_request(make_image()))
    expected_prompt = 3 + 4 * 2 + estimate_tokens(SYSTEM) + estimate_tokens(PROMPT) + 85
    assert response.usage.input_tokens == expected_prompt
    assert response.usage.output_tokens == estimate_tokens(response.text)
    assert response.raw_usage["prompt_tokens"] == expected_prompt


def test_openai_missing_usage_gives_zeros(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.reply("0\nNot relevant.", omit_usage=True))
    response = call(new_openai(loopback), make_request())
    assert response.text == "0\nNot relevant."
    assert response.usage.to_dict() == dict.fromkeys(response.usage.to_dict(), 0)
    assert response.raw_usage == {}


def test_openai_refusal(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.refusal("I can't help with that request."))
    response = call(new_openai(loopback), make_request(make_image()))
    assert response.text == ""
    assert response.stop_reason == "refusal"
    assert response.usage.input_tokens > 0


def test_openai_length_stop(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.reply("2 " + "because " * 50))
    response = call(new_openai(loopback, max_tokens=10), make_request())
    assert response.stop_reason == "length"
    assert response.usage.output_tokens <= 10


def test_openai_compatible_without_key(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    model = openai_model(
        loopback, name="vllm_local", provider="openai_compatible", api_key_env=None
    )
    judge = create_judge(model)
    assert isinstance(judge, OpenAIJudge)
    assert judge.model is model
    call(judge, make_request())
    assert loopback.last.headers["authorization"] == "Bearer not-needed"


def test_openai_compatible_needs_base_url() -> None:
    model = openai_model(None, provider="openai_compatible", api_key_env=None)
    with pytest.raises(ConfigError, match=r"model\.base_url"):
        OpenAIJudge(model)


def test_openai_compatible_reads_named_key(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test-key")
    model = openai_model(loopback, provider="openai_compatible", api_key_env="GEMINI_API_KEY")
    call(OpenAIJudge(model), make_request())
    assert loopback.last.headers["authorization"] == "Bearer gm-test-key"


def test_text_only_model_refuses_images(loopback: LoopbackServer) -> None:
    judge = new_openai(loopback, supports_images=False)
    assert judge.modalities == ("text",)
    with pytest.raises(ConfigError, match="supports_images"):
        call(judge, make_request(make_image()))


# -- Anthropic -------------------------------------------------------------------------------


@pytest.mark.slow  # over a second
def test_anthropic_request_shape(loopback: LoopbackServer) -> None:
    response = call(new_anthropic(loopback), make_request(make_image()))

    sent = loopback.last
    assert sent.path == ANTHROPIC_PATH
    # Older SDKs send the key as x-api-key, newer ones as a bearer token.
    sent_key = sent.headers.get("x-api-key") or sent.headers["authorization"].removeprefix(
        "Bearer "
    )
    assert sent_key == ANTHROPIC_KEY
    assert "anthropic-version" in sent.headers
    body = sent.body
    assert body["model"] == "claude-3-5-sonnet-20240620"
    assert body["max_tokens"] == 200
    assert body["temperature"] == 0.0
    assert body["system"] == SYSTEM
    [message] = body["messages"]
    assert message["role"] == "user"
    image_block, text_block = message["content"]
    assert text_block == {"type": "text", "text": PROMPT}
    assert image_block["type"] == "image"
    source = image_block["source"]
    assert source["type"] == "base64"
    assert source["media_type"] == "image/jpeg"
    assert not source["data"].startswith("data:")
    decoded = base64.b64decode(source["data"], validate=True)
    assert Image.open(io.BytesIO(decoded)).size == (512, 512)
    assert image_size(decoded) == (512, 512)

    assert response.text == "2\nThe result matches the query."
    assert response.stop_reason == "end_turn"
    expected_input = 8 + estimate_tokens(SYSTEM) + estimate_tokens(PROMPT) + math.ceil(512**2 / 750)
    assert response.usage.input_tokens == expected_input


def test_anthropic_without_system_or_temperature(loopback: LoopbackServer) -> None:
    call(new_anthropic(loopback, temperature=None), make_request(system=None))
    body = loopback.last.body
    assert "system" not in body
    assert "temperature" not in body
    assert body["messages"][0]["content"] == [{"type": "text", "text": PROMPT}]


def test_anthropic_image_sources(loopback: LoopbackServer) -> None:
    call(new_anthropic(loopback), make_request(make_image("base64"), make_image("url")))
    first, second, _text = loopback.last.body["messages"][0]["content"]
    assert first["source"] == {
        "type": "base64",
        "media_type": "image/jpeg",
        "data": make_image("base64").data,
    }
    assert second["source"] == {"type": "url", "url": "https://images.example.com/shoe.jpg"}


def test_anthropic_usage_with_cache_buckets(loopback: LoopbackServer) -> None:
    loopback.script(
        Behaviour.reply(
            "2\nExact match.",
            usage={
                "input_tokens": 100,
                "output_tokens": 12,
                "cache_creation_input_tokens": 2000,
                "cache_read_input_tokens": 300,
                "output_tokens_details": {"thinking_tokens": 5},
            },
        )
    )
    response = call(new_anthropic(loopback), make_request(make_image()))
    usage = response.usage
    assert usage.input_tokens == 2400
    assert usage.output_tokens == 12
    assert usage.cache_write_tokens == 2000
    assert usage.cached_input_tokens == 300
    assert usage.reasoning_tokens == 5
    raw = response.raw_usage
    assert raw["input_tokens"] == 100
    assert raw["cache_creation_input_tokens"] == 2000
    assert raw["cache_read_input_tokens"] == 300
    assert raw["service_tier"] == "standard"


def test_anthropic_missing_usage_and_refusal(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.reply("1\nSomewhat.", omit_usage=True), Behaviour.refusal(""))
    judge = new_anthropic(loopback)

    async def both() -> list[JudgeResponse]:
        try:
            return [await judge.generate(make_request()) for _ in range(2)]
        finally:
            await judge.aclose()

    plain, refused = asyncio.run(both())
    assert plain.text == "1\nSomewhat."
    assert plain.usage.input_tokens == 0
    assert plain.raw_usage == {}
    assert refused.text == ""
    assert refused.stop_reason == "refusal"


def test_anthropic_base_url_with_v1_is_accepted(loopback: LoopbackServer) -> None:
    judge = new_anthropic(loopback, base_url=loopback.anthropic_base_url + "/v1/")
    call(judge, make_request())
    assert loopback.last.path == ANTHROPIC_PATH


# -- errors ----------------------------------------------------------------------------------


@BOTH
@pytest.mark.parametrize(
    "behaviour",
    [
        Behaviour.rate_limit(retry_after=1),
        Behaviour.server_error(500),
        Behaviour.server_error(503),
        Behaviour.server_error(529),
        Behaviour.drop(),
        Behaviour.malformed(),
        Behaviour.raw(200, "<html>bad gateway</html>", {"content-type": "text/html"}),
    ],
    ids=["429", "500", "503", "529", "dropped", "malformed-json", "not-json"],
)
def test_transient_errors_are_retryable(
    loopback: LoopbackServer, factory: JudgeFactory, behaviour: Behaviour
) -> None:
    loopback.script(behaviour)
    judge = factory(loopback)
    error = failure(judge, make_request())
    assert not isinstance(error, FatalProviderError)
    assert judge.classify_error(error).retryable, repr(error)
    if behaviour.action in ("malformed", "raw"):
        assert isinstance(error, MalformedResponseError)


@BOTH
def test_timeout_is_retryable(loopback: LoopbackServer, factory: JudgeFactory) -> None:
    loopback.script(Behaviour.hang(seconds=5))
    judge = factory(loopback, timeout=0.3)
    error = failure(judge, make_request())
    assert "Timeout" in type(error).__name__
    assert judge.classify_error(error).retryable


@BOTH
def test_unrelated_errors_are_not_retryable(
    loopback: LoopbackServer, factory: JudgeFactory
) -> None:
    judge = factory(loopback)
    assert not judge.classify_error(ValueError("a bug")).retryable
    assert not judge.classify_error(KeyError("x")).retryable


@BOTH
def test_retry_after_header(loopback: LoopbackServer, factory: JudgeFactory) -> None:
    loopback.script(
        Behaviour.rate_limit(retry_after=7),
        Behaviour.error(429, retry_after=30, retry_after_ms=1500),
        Behaviour.rate_limit(retry_after=None),
    )
    judge = factory(loopback)

    async def errors() -> list[Exception]:
        found = []
        try:
            for _ in range(3):
                try:
                    await judge.generate(make_request())
                except Exception as error:
                    found.append(error)
        finally:
            await judge.aclose()
        return found

    seven, ms, none = asyncio.run(errors())
    assert retry_after_seconds(seven) == 7.0
    assert judge.classify_error(seven).retry_after == 7.0
    assert retry_after_seconds(ms) == 1.5
    assert retry_after_seconds(none) is None
    assert retry_after_seconds(ValueError("no response")) is None


def test_retry_after_http_date(loopback: LoopbackServer) -> None:
    loopback.script(
        Behaviour.error(503, headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        Behaviour.error(503, headers={"retry-after": "soon"}),
    )
    judge = new_openai(loopback)

    async def errors() -> list[Exception]:
        try:
            return [await _error_of(judge) for _ in range(2)]
        finally:
            await judge.aclose()

    past, garbage = asyncio.run(errors())
    assert retry_after_seconds(past) == 0.0
    assert retry_after_seconds(garbage) is None


async def _error_of(judge: JudgeAPI) -> Exception:
    try:
        await judge.generate(make_request())
    except Exception as error:
        return error
    raise AssertionError("generate() succeeded but an error was expected")


@BOTH
@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, "check the key in {env}"),
        (403, "check the key in {env}"),
        (404, "unknown model '{model_id}'"),
        (400, "rejected the request (400"),
    ],
)
def test_fatal_errors(
    loopback: LoopbackServer, factory: JudgeFactory, status: int, expected: str
) -> None:
    loopback.script(Behaviour.error(status, "temperature is not supported with this model."))
    judge = factory(loopback)
    error = failure(judge, make_request())
    assert isinstance(error, FatalProviderError)
    message = str(error)
    env = "OPENAI_API_KEY" if isinstance(judge, OpenAIJudge) else "ANTHROPIC_API_KEY"
    model_id = getattr(judge, "model_id", "")
    assert expected.format(env=env, model_id=model_id) in message
    assert "\n" not in message
    assert message.startswith(("model 'gpt4o'", "model 'claude35_sonnet'"))
    assert OPENAI_KEY not in message and ANTHROPIC_KEY not in message
    if status == 404:
        assert "model.model_id" in message
    if status == 400:
        assert "temperature is not supported" in message
    assert not judge.classify_error(error.__cause__).retryable  # type: ignore[arg-type]


@BOTH
def test_bad_image_is_an_item_failure_not_fatal(
    loopback: LoopbackServer, factory: JudgeFactory
) -> None:
    loopback.script(Behaviour.error(400, "Invalid image: could not process image data."))
    judge = factory(loopback)
    error = failure(judge, make_request(make_image()))
    assert not isinstance(error, FatalProviderError)
    assert getattr(error, "status_code", None) == 400
    assert not judge.classify_error(error).retryable


def test_long_provider_message_is_truncated(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.error(400, "unsupported value " + "x" * 5000))
    error = failure(new_openai(loopback), make_request())
    assert isinstance(error, FatalProviderError)
    assert len(str(error)) < 500


def test_quota_exhausted_is_fatal(loopback: LoopbackServer) -> None:
    body = {"error": {"message": "You exceeded your current quota.", "code": "insufficient_quota"}}
    loopback.script(Behaviour.raw(429, json.dumps(body)))
    judge = new_openai(loopback)
    error = failure(judge, make_request())
    assert isinstance(error, FatalProviderError)
    assert "billing" in str(error)
    assert not judge.classify_error(error.__cause__).retryable  # type: ignore[arg-type]


def test_should_retry_header_wins(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.error(500, headers={"x-should-retry": "false"}))
    judge = new_openai(loopback)
    assert not judge.classify_error(failure(judge, make_request())).retryable


# -- keys and redaction ----------------------------------------------------------------------


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(CredentialError) as caught:
        OpenAIJudge(openai_model())
    assert str(caught.value) == (
        "model 'gpt4o' needs an API key: set the OPENAI_API_KEY environment variable"
    )


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_key_is_missing(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", value)
    with pytest.raises(CredentialError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge(anthropic_model())


def test_default_key_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(CredentialError, match="OPENAI_API_KEY"):
        OpenAIJudge(openai_model(api_key_env=None))
    with pytest.raises(CredentialError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge(anthropic_model(api_key_env=None))


def test_key_is_not_kept_on_the_judge(loopback: LoopbackServer) -> None:
    for judge in (new_openai(loopback), new_anthropic(loopback)):
        public = {k: v for k, v in vars(judge).items() if not k.startswith("_")}
        assert OPENAI_KEY not in repr(public) and ANTHROPIC_KEY not in repr(public)
        assert OPENAI_KEY not in judge.describe() and ANTHROPIC_KEY not in judge.describe()
        asyncio.run(judge.aclose())


@BOTH
def test_redacted_request(loopback: LoopbackServer, factory: JudgeFactory) -> None:
    images = (make_image(), make_image("base64"), make_image("url"))
    judge = factory(loopback)
    redacted = judge.redacted_request(make_request(*images))  # type: ignore[attr-defined]
    text = json.dumps(redacted)
    payload = make_image("base64").data
    assert payload not in text
    assert payload[:200] not in text
    assert "base64," not in text
    assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text
    assert "authorization" not in text.lower() and "x-api-key" not in text.lower()
    for image in images:
        assert f"sha256:{image.sha256}" in text
    assert json.dumps(PROMPT) in text
    asyncio.run(judge.aclose())


# -- the loopback server itself --------------------------------------------------------------


def test_loopback_scripts_by_path_and_counts(loopback: LoopbackServer) -> None:
    loopback.script(Behaviour.reply("0\nNo.", latency_s=0.05), path=ANTHROPIC_PATH)
    loopback.set_default(Behaviour.reply("1\nDefault for OpenAI."), path=OPENAI_PATH)
    first = call(new_openai(loopback), make_request())
    second = call(new_anthropic(loopback), make_request())
    assert first.text == "1\nDefault for OpenAI."
    assert second.text == "0\nNo."
    assert loopback.pending() == 0
    assert loopback.counts() == {OPENAI_PATH: 1, ANTHROPIC_PATH: 1}
    assert [r.path for r in loopback.requests] == [OPENAI_PATH, ANTHROPIC_PATH]


def test_loopback_responder_and_concurrency() -> None:
    def responder(request: Any) -> str | Behaviour:
        prompt = request.body["messages"][-1]["content"]
        return Behaviour.server_error() if "fail" in prompt else f"{len(prompt) % 3}\nok"

    with LoopbackServer(responder=responder, latency_s=0.1, record=False) as server:
        judge = OpenAIJudge(openai_model(server))

        async def many() -> list[JudgeResponse | BaseException]:
            requests = [JudgeRequest(item_key=str(i), prompt=f"item {i}") for i in range(200)]
            requests.append(JudgeRequest(item_key="bad", prompt="please fail"))
            try:
                return await asyncio.gather(
                    *(judge.generate(r) for r in requests), return_exceptions=True
                )
            finally:
                await judge.aclose()

        results = asyncio.run(many())
        assert server.request_count == 201
        assert server.requests == []
    answers = [r for r in results if isinstance(r, JudgeResponse)]
    assert len(answers) == 200
    assert answers[7].text == f"{len('item 7') % 3}\nok"
    assert isinstance(results[-1], Exception) and judge.classify_error(results[-1]).retryable


def test_loopback_unknown_route(loopback: LoopbackServer) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(loopback.url + "/v2/nothing", timeout=5)
    assert caught.value.code == 404


def test_debug_log_is_redacted(loopback: LoopbackServer, caplog: pytest.LogCaptureFixture) -> None:
    image = make_image()
    with caplog.at_level("DEBUG", logger="mmjudge.judges"):
        call(new_openai(loopback), make_request(image))
        call(new_anthropic(loopback), make_request(image))
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert logged.count(f"sha256:{image.sha256}") == 2
    assert make_image("base64").data[:100] not in logged
    assert OPENAI_KEY not in logged and ANTHROPIC_KEY not in logged
