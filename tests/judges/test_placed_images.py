"""Requests that place their images in the prompt text (``JudgeRequest.image_places``: a call
about several results, each result's pictures after its marker): the parts in reading order,
each provider's body, and the hashes that tell such requests apart."""

from __future__ import annotations

import dataclasses

import pytest

from mmjudge.config import ModelConfig
from mmjudge.engine.response_cache import request_key
from mmjudge.judges.anthropic import AnthropicJudge
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.judges.payloads import placed_images
from mmjudge.judges.registry import facts
from mmjudge.records import EncodedImage, JudgeRequest, PromptCacheMark, canonical_json, sha256_text


def image(name: str, encoding: str = "base64") -> EncodedImage:
    data = f"https://example.test/{name}.jpg" if encoding == "url" else f"{name.upper()}DATA"
    return EncodedImage(
        source=f"{name}.jpg",
        sha256=sha256_text(name),
        media_type="image/jpeg",
        width=512,
        height=512,
        data=data,
        encoding=encoding,
    )


PROMPT = "Head\n\nR1\nfields one\n\nR2\nfields two\n\nClose"
#: Right after "R1" and after "R2" (the first result has two pictures).
PLACES = (PROMPT.index("R1") + 2, PROMPT.index("R1") + 2, PROMPT.index("R2") + 2)
A, B, C = image("a"), image("b"), image("c")


def placed(**changes: object) -> JudgeRequest:
    request = JudgeRequest(
        item_key="call:x", prompt=PROMPT, system="sys", images=(A, B, C), image_places=PLACES
    )
    return dataclasses.replace(request, **changes)  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000")


def model(provider: str, model_id: str) -> ModelConfig:
    return ModelConfig(
        name=provider,
        provider=provider,
        model_id=model_id,
        supports_images=True,
        max_tokens=50,
        base_url="http://127.0.0.1:9",
    )


def test_the_parts_come_in_reading_order_with_no_empty_text_between_two_images() -> None:
    assert placed_images(placed()) == [
        "Head\n\nR1",
        A,
        B,
        "\nfields one\n\nR2",
        C,
        "\nfields two\n\nClose",
    ]
    # An image at the very start and one at the very end leave no empty text either.
    edges = placed(images=(A, C), image_places=(0, len(PROMPT)))
    assert placed_images(edges) == [A, PROMPT, C]


def test_openai_sends_each_image_where_the_prompt_places_it_with_its_detail() -> None:
    judge = OpenAIJudge(model("openai", "gpt-4o-mini"))
    content = judge.request_body(placed())["messages"][1]["content"]
    kinds = [part["type"] for part in content]
    assert kinds == ["text", "image_url", "image_url", "text", "image_url", "text"]
    assert content[0]["text"] == "Head\n\nR1" and content[3]["text"] == "\nfields one\n\nR2"
    urls = [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    assert urls == [
        "data:image/jpeg;base64,ADATA",
        "data:image/jpeg;base64,BDATA",
        "data:image/jpeg;base64,CDATA",
    ]
    assert all(p["image_url"]["detail"] == "low" for p in content if p["type"] == "image_url")
    redacted = judge.redacted_request(placed())["messages"][1]["content"]
    assert redacted[1]["image_url"]["url"] == f"sha256:{A.sha256}"
    # Without places, the prompt first and the images after it, as before.
    plain = judge.request_body(placed(image_places=()))["messages"][1]["content"]
    assert [p["type"] for p in plain] == ["text", "image_url", "image_url", "image_url"]
    assert plain[0]["text"] == PROMPT


def test_anthropic_sends_each_image_where_the_prompt_places_it_after_the_cached_part() -> None:
    judge = AnthropicJudge(model("anthropic", "claude-sonnet-4-5"))
    url = image("d", "url")
    marked = placed(
        images=(A, B, url),
        cache_mark=PromptCacheMark(prefix_chars=4, ttl="5m"),
    )
    content = judge.request_body(marked)["messages"][0]["content"]
    kinds = [part["type"] for part in content]
    assert kinds == ["text", "text", "image", "image", "text", "image", "text"]
    assert content[0] == {"type": "text", "text": "Head", "cache_control": {"type": "ephemeral"}}
    assert content[1]["text"] == "\n\nR1"
    assert content[2]["source"] == {"type": "base64", "media_type": "image/jpeg", "data": "ADATA"}
    assert content[5]["source"] == {"type": "url", "url": "https://example.test/d.jpg"}
    assert "".join(p["text"] for p in content if p["type"] == "text") == PROMPT
    assert sum("cache_control" in part for part in content) == 1
    # A mark reaching past the first image is not a leading part: no breakpoint then.
    late = placed(cache_mark=PromptCacheMark(prefix_chars=PLACES[0] + 3, ttl="5m"))
    late_content = judge.request_body(late)["messages"][0]["content"]
    assert all("cache_control" not in part for part in late_content)
    assert [p["type"] for p in late_content] == ["text", "image", "image", "text", "image", "text"]
    # Without places or a mark, the images first and the prompt after them, as before.
    plain = judge.request_body(placed(image_places=()))["messages"][0]["content"]
    assert [p["type"] for p in plain] == ["image", "image", "image", "text"]


def test_where_the_images_stand_changes_the_hashes_and_a_request_without_places_keeps_its_own() -> (
    None
):
    request = placed()
    moved = placed(image_places=(PLACES[0], PLACES[2], PLACES[2]))
    unplaced = placed(image_places=())
    assert len({request.prompt_hash(), moved.prompt_hash(), unplaced.prompt_hash()}) == 3
    # The hash of a request without places is the one written down for every request before.
    images = canonical_json([i.sha256 for i in unplaced.images])
    expected = sha256_text(
        f'{{"images":{images},"prompt":{canonical_json(PROMPT)},"system":"sys"}}'
    )
    assert unplaced.prompt_hash() == expected
    # With places, it is the same canonical form with the places in their sorted place.
    with_places = sha256_text(
        canonical_json(
            {
                "image_places": list(PLACES),
                "images": [i.sha256 for i in request.images],
                "prompt": PROMPT,
                "system": "sys",
            }
        )
    )
    assert request.prompt_hash() == with_places
    config = model("openai", "gpt-4o-mini")
    keys = {request_key(config, r) for r in (request, moved, unplaced)}
    assert len(keys) == 3


def test_the_providers_state_their_image_limits_and_a_compatible_server_none() -> None:
    openai = facts("openai").image_limits
    anthropic = facts("anthropic").image_limits
    assert openai is not None and (openai.max_images, openai.max_bytes) == (500, 50_000_000)
    assert anthropic is not None and (anthropic.max_images, anthropic.max_bytes) == (
        100,
        32_000_000,
    )
    assert facts("openai_compatible").image_limits is None
