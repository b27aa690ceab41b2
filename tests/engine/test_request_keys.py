"""Cache keys and prompt hashes written out part by part are the ones a whole dict gives, so
caches filled by earlier versions still answer."""

from __future__ import annotations

from typing import Any

import pytest

from mmjudge.config import ModelConfig
from mmjudge.engine.response_cache import RequestKeys, ResponseCache, request_key
from mmjudge.judges.registry import endpoint_override
from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse, canonical_json, sha256_text


def dict_key(model: ModelConfig, request: JudgeRequest) -> str:
    """The key as it was first defined: the canonical JSON of one dict."""
    return sha256_text(
        canonical_json(
            {
                "provider": model.provider,
                "model": model.model_id,
                "base_url": endpoint_override(model),
                "system": request.system,
                "prompt": request.prompt,
                "images": [[image.sha256, image.width, image.height] for image in request.images],
                "image_detail": model.image_detail if request.images else None,
                "temperature": model.temperature,
                "max_tokens": model.max_tokens,
                "options": dict(model.options),
                "grades": list(request.grades),
            }
        )
    )


def dict_prompt_hash(request: JudgeRequest) -> str:
    return sha256_text(
        canonical_json(
            {
                "system": request.system,
                "prompt": request.prompt,
                "images": [image.sha256 for image in request.images],
            }
        )
    )


IMAGE = EncodedImage("a.jpg", "ab" * 32, "image/jpeg", 512, 384, "data:image/jpeg;base64,AAAA")

MODELS = [
    ModelConfig(name="m", provider="openai", model_id="gpt-4o-mini"),
    ModelConfig(
        name="m2",
        provider="anthropic",
        model_id="claude-x",
        base_url="http://127.0.0.1:9/v1",
        temperature=None,
        max_tokens=300,
        image_detail="high",
        options={"reasoning_effort": "low", "nested": {"b": [1, 2.5, None], "a": "é"}},
    ),
    ModelConfig(name="m3", provider="openai_compatible", model_id="qwen", temperature=0.7),
]

REQUESTS = [
    JudgeRequest(item_key="k", prompt="Query: red shoes\nGrade 0, 1 or 2."),
    JudgeRequest(
        item_key="k",
        prompt='Quotes " and \\ and tabs\t, café crème ü — 靴, emoji 👟, nul \x00, \u2028',
        system="Be careful.",
        grades=(0, 1, 2, 3),
    ),
    JudgeRequest(item_key="k", prompt="", system="", images=(IMAGE, IMAGE), grades=(1, 0)),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_keys_written_part_by_part_equal_the_dict_keys(
    model: ModelConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    keys = RequestKeys(model)
    for request in REQUESTS:
        assert keys(request) == dict_key(model, request) == request_key(model, request)


def test_keys_of_earlier_versions_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys computed by the version before keys were written part by part."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    keys = RequestKeys(MODELS[0])
    assert [keys(request) for request in REQUESTS] == PINNED_KEYS


def test_prompt_hashes_equal_the_dict_hashes() -> None:
    for request in REQUESTS:
        assert request.prompt_hash() == dict_prompt_hash(request)
    assert [request.prompt_hash() for request in REQUESTS] == PINNED_HASHES


#: Computed by the earlier version (one dict encoded per key), for MODELS[0] and REQUESTS.
PINNED_KEYS = [
    "3412727e3fd31aac769151cdd163a192159e5259e398d36b810864ca3ed1e66e",
    "1105e186d754ad32af9c96b5d2c8d9aae2d37010fc7a705fb0e21c46528bdc02",
    "df84282305e2c09dd596048d247705215d2a5bd37cb3beb8f2635d16e691396f",
]
PINNED_HASHES = [
    "708a0150a7af6579ea1c4bda1fc60c8c63e33f23d0b8ab737633a273213a9271",
    "922a04b3b3b4b85d54be0cfe2f015f77273bd5f1cdf27efb5a8d3a610f8f9ea4",
    "1718a91497ddd2372a2bd636e226b8df3f2ea9dcf4094582e05ce48c55cfaff4",
]


def test_get_many_returns_what_get_returns(tmp_path: Any) -> None:
    cache = ResponseCache(tmp_path / "responses.sqlite")
    stored = {f"k{i}": JudgeResponse(text=f"Grade: {i % 3}", model="m") for i in range(1203)}
    for key, response in stored.items():
        cache.put(key, response)
    wanted = [f"k{i}" for i in range(0, 2400, 2)]  # half of them are not there
    found = cache.get_many(wanted)
    assert found == {key: cache.get(key) for key in wanted if cache.get(key) is not None}
    assert sorted(found) == sorted(key for key in wanted if key in stored)
    assert cache.get_many([]) == {}
    cache.close()


def test_a_repeat_sample_has_its_own_key_and_the_first_keeps_the_old_one() -> None:
    model = ModelConfig(name="m", provider="openai", model_id="gpt-x")
    first = JudgeRequest(item_key="q\tr", prompt="grade this", system="sys")
    repeat = JudgeRequest(item_key="q\tr\t#2", prompt="grade this", system="sys", sample=2)
    assert request_key(model, first) == dict_key(model, first)
    expected = sha256_text(
        canonical_json(
            {
                "provider": "openai",
                "model": "gpt-x",
                "base_url": endpoint_override(model),
                "system": "sys",
                "prompt": "grade this",
                "images": [],
                "image_detail": None,
                "temperature": model.temperature,
                "max_tokens": model.max_tokens,
                "options": dict(model.options),
                "grades": list(repeat.grades),
                "sample": 2,
            }
        )
    )
    assert request_key(model, repeat) == expected != request_key(model, first)
    assert repeat.prompt_hash() == first.prompt_hash()  # the model reads the same prompt
