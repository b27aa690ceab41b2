"""Providers registered by name on factories that import their SDK only when used."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.base import JudgeAPI

#: provider name -> "module:Class"; the class is built as ``Class(model_config)``.
_PROVIDERS: dict[str, str] = {
    "lexical": "mmjudge.judges.lexical:LexicalJudge",
    "openai": "mmjudge.judges.openai:OpenAIJudge",
    "openai_compatible": "mmjudge.judges.openai:OpenAIJudge",
    "anthropic": "mmjudge.judges.anthropic:AnthropicJudge",
    "embedding": "mmjudge.judges.embedding:EmbeddingJudge",
}

#: Which optional extra to install when a provider's import fails.
_EXTRAS: dict[str, str] = {"embedding": "local"}

#: The environment variable each provider's official SDK reads for its base URL.
BASE_URL_ENVS: dict[str, str] = {
    "openai": "OPENAI_BASE_URL",
    "openai_compatible": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
}


def endpoint_override(model: ModelConfig) -> str | None:
    """Where a model's calls go when not to its provider's public endpoint, else None.

    ``model.base_url`` when set; otherwise the variable the provider's SDK reads
    (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``), as the SDK would use it when given no base
    URL (a blank value counts as unset). Judges, the response cache's key and the summary all
    read it here, so they agree on the endpoint.
    """
    if model.base_url:
        return str(model.base_url)
    variable = BASE_URL_ENVS.get(str(model.provider))
    value = os.environ.get(variable, "").strip() if variable else ""
    return value or None


def provider_names() -> list[str]:
    return sorted(_PROVIDERS)


def register(name: str, target: str) -> None:
    """Register ``module:Class`` under ``name`` (for plugins and tests)."""
    _PROVIDERS[name] = target


def judge_class(model: ModelConfig) -> type[JudgeAPI]:
    """The judge class for a model config, importing its SDK lazily."""
    target = _PROVIDERS.get(model.provider)
    if target is None:
        choices = ", ".join(provider_names())
        raise ConfigError(
            f"model.provider='{model.provider}' is unknown for model '{model.name}'; "
            f"choose one of: {choices}"
        )
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        extra = _EXTRAS.get(model.provider)
        hint = f"pip install 'mmjudge[{extra}]'" if extra else "pip install -e ."
        raise ConfigError(
            f"provider '{model.provider}' for model '{model.name}' needs a missing package "
            f"({exc.name}); install it with: {hint}"
        ) from exc
    cls: type[JudgeAPI] = getattr(module, class_name)
    return cls


def is_free(model: ModelConfig) -> bool:
    """Whether the model's judge says it runs at no charge (:attr:`JudgeAPI.free`); False for
    a provider nobody registered, whose cell fails with its own error."""
    if model.provider not in _PROVIDERS:
        return False
    return judge_class(model).free


def create_judge(model: ModelConfig) -> JudgeAPI:
    """Build the judge for a model config (reads its API key from the environment)."""
    factory: Callable[[ModelConfig], JudgeAPI] = judge_class(model)
    return factory(model)
