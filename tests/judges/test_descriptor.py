"""A provider's facts are declared once, by the judge class that serves it
(:mod:`mmjudge.judges.descriptor`), and every place that needs them reads them there: the
registry, the config check, the token counts of a forecast, the report's colours and the
packages a summary records."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mmjudge.config import ModelConfig
from mmjudge.costs.tokens import _encoding, count_tokens
from mmjudge.errors import ConfigError
from mmjudge.judges import registry
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.descriptor import (
    ANTHROPIC,
    GEMINI,
    OPENAI,
    JudgeDescriptor,
    ModelMaker,
    TokenCounting,
    maker_by_id,
)
from mmjudge.judges.http import SDKJudge
from mmjudge.records import JudgeRequest, JudgeResponse
from mmjudge.store.provenance import CORE_PACKAGES, package_versions, packages

SHIPPED = {
    "anthropic",
    "distilled",
    "embedding",
    "lexical",
    "openai",
    "openai_compatible",
    "replay",
}
#: What a batch judge implements beside ``generate`` (:class:`mmjudge.judges.base.BatchJudge`).
BATCH_METHODS = ("batch_entry", "batch_submit", "batch_poll", "batch_results")


class Plugin(JudgeAPI):
    """A judge from outside the package: paid, with an SDK that is not installed."""

    descriptors = (
        JudgeDescriptor(
            "acme",
            sdk="acme_sdk_that_is_not_installed",
            extra="acme",
            packages=("acme-sdk",),
            key_env="ACME_API_KEY",
            maker=ModelMaker("Acme", ("acme",), TokenCounting(factor=1.5)),
        ),
    )

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        raise AssertionError("never called")


@pytest.fixture
def plugin() -> Iterator[type[JudgeAPI]]:
    registry.register(Plugin)
    yield Plugin
    registry.unregister(Plugin)


def model(provider: str, max_tokens: int = 200, api_key_env: str | None = None) -> ModelConfig:
    return ModelConfig(
        name="m", provider=provider, model_id="m-1", max_tokens=max_tokens, api_key_env=api_key_env
    )


def test_the_shipped_judges_are_found_without_a_list_of_them() -> None:
    assert set(registry.provider_names()) == SHIPPED
    for provider in SHIPPED:
        cls = registry.judge_classes()[provider]
        assert cls.__module__.startswith("mmjudge.judges.")
        assert cls.described(provider).provider == provider


@pytest.mark.parametrize("provider", sorted(SHIPPED))
def test_each_descriptor_says_what_its_class_does(provider: str) -> None:
    cls = registry.judge_classes()[provider]
    facts = cls.described(provider)
    has_batch_api = all(callable(getattr(cls, name, None)) for name in BATCH_METHODS)
    assert (facts.batch_api is not None) == has_batch_api
    assert (facts.sdk is not None) == issubclass(cls, SDKJudge)
    assert not (facts.free and facts.key_env)  # a free judge needs no key
    assert facts.free or facts.base_url_env  # a paid one is called somewhere
    assert not facts.free or facts.default_base_url is None


def test_families_and_token_counts_follow_the_maker_of_the_models() -> None:
    openai, compatible = registry.describe("openai"), registry.describe("openai_compatible")
    assert openai is not None and compatible is not None
    # OpenAI's API serves OpenAI's models, so its ids need not say so
    assert openai.family("ft:gpt-4o:acme::1") == "OpenAI"
    assert openai.tokens("ft:gpt-4o:acme::1") == TokenCounting(exact=True)
    # a compatible server's models are known by their id's first word
    assert compatible.family("google/gemini-2.5-flash") == "Google"
    assert compatible.tokens("google/gemini-2.5-flash") == TokenCounting(factor=1.0)
    assert compatible.tokens("meta-llama/Llama-3.3-70B") == TokenCounting(factor=1.1)
    assert compatible.family("my-model") == "openai_compatible"
    assert registry.token_counting("anthropic", "claude-haiku-4-5") == TokenCounting(factor=1.2)
    assert registry.token_counting("nobody", "gemini-pro") == GEMINI.tokens
    assert maker_by_id("Claude-3-Haiku") is ANTHROPIC and maker_by_id("o3-mini") is OPENAI
    assert maker_by_id("gemma-2-9b") is not GEMINI and maker_by_id(None) is None


def test_an_estimated_count_is_the_o200k_count_times_the_factor() -> None:
    text = "Query: red dress\nResult: a long red dress in silk, sizes 8 to 16.\nGrade 0-2."
    o200k = len(_encoding("gpt-4o").encode_ordinary(text))
    assert count_tokens(text, "claude-haiku-4-5", ANTHROPIC.tokens) == (round(o200k * 1.2), False)
    assert count_tokens(text, "gpt-4o", OPENAI.tokens) == (o200k, True)
    assert count_tokens(text, "x", TokenCounting()) == (round(o200k * 1.1), False)


def test_a_registered_judge_is_read_everywhere(plugin: type[JudgeAPI]) -> None:
    assert registry.describe("acme") is plugin.descriptors[0]
    assert registry.family_of("acme", "acme-large") == "Acme"
    assert registry.token_counting("acme", "acme-large") == TokenCounting(factor=1.5)
    assert registry.is_free(model("acme")) is False
    assert plugin.api_key_env(model("acme")) == "ACME_API_KEY"
    assert plugin.api_key_env(model("acme", api_key_env="MY_KEY")) == "MY_KEY"
    assert "acme-sdk" in packages() and package_versions()["acme-sdk"] == "not installed"
    with pytest.raises(ConfigError) as missing:
        registry.judge_class(model("acme"))
    assert str(missing.value) == (
        "provider 'acme' for model 'm' needs a missing package "
        "(acme_sdk_that_is_not_installed); install it with: pip install 'mmjudge[acme]'"
    )


def test_a_registered_judge_leaves_no_trace_once_removed(plugin: type[JudgeAPI]) -> None:
    assert registry.token_counting("acme", "acme-large") == TokenCounting(factor=1.5)
    registry.unregister(plugin)
    assert registry.describe("acme") is None and "acme" not in registry.provider_names()
    assert registry.token_counting("acme", "acme-large") == TokenCounting()  # not remembered
    registry.register(plugin)  # for the fixture to remove


def test_a_class_without_descriptors_serves_no_provider() -> None:
    class Nameless(JudgeAPI):
        async def generate(self, request: JudgeRequest) -> JudgeResponse:
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="declares no descriptors"):
        registry.register(Nameless)
    with pytest.raises(ConfigError, match=r"model.provider='acme' is not served by Nameless"):
        Nameless.described("acme")


def test_the_output_limit_a_provider_needs_is_checked_by_its_facts(
    plugin: type[JudgeAPI],
) -> None:
    with pytest.raises(ConfigError, match=r"^model.max_tokens=0 is not allowed; use a whole"):
        registry.check_model(model("acme", max_tokens=0))
    registry.check_model(model("acme", max_tokens=1))
    registry.check_model(model("lexical", max_tokens=0))  # free: writes no text
    registry.check_model(model("nobody", max_tokens=0))  # fails later, with its own error


def test_keys_come_from_the_config_or_the_providers_own_variable() -> None:
    openai = registry.judge_classes()["openai"]
    assert openai.api_key_env(model("openai")) == "OPENAI_API_KEY"
    assert openai.api_key_env(model("openai_compatible")) is None  # a local server needs none
    assert openai.api_key_env(model("openai_compatible", api_key_env="GEMINI_API_KEY")) == (
        "GEMINI_API_KEY"
    )
    lexical = registry.judge_classes()["lexical"]
    assert lexical.api_key_env(model("lexical", api_key_env="STRAY")) is None


def test_a_summary_records_the_core_packages_and_each_judges_own() -> None:
    names = packages()
    assert names[: len(CORE_PACKAGES)] == CORE_PACKAGES
    assert {"openai", "anthropic", "sentence-transformers"} <= set(names)
    assert len(names) == len(set(names))  # each once, though two providers share the openai SDK
