"""Providers registered by name on factories that import their SDK only when used."""

from __future__ import annotations

import importlib
import os
import urllib.parse
from collections.abc import Callable

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.base import JudgeAPI
from mmjudge.keyguard import redact_text

#: provider name -> "module:Class"; the class is built as ``Class(model_config)``.
_PROVIDERS: dict[str, str] = {
    "lexical": "mmjudge.judges.lexical:LexicalJudge",
    "openai": "mmjudge.judges.openai:OpenAIJudge",
    "openai_compatible": "mmjudge.judges.openai:OpenAIJudge",
    "anthropic": "mmjudge.judges.anthropic:AnthropicJudge",
    "embedding": "mmjudge.judges.embedding:EmbeddingJudge",
    "replay": "mmjudge.judges.replay:ReplayJudge",
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
    URL (a blank value counts as unset; a value with a blank in it, such as the newline a
    file read into the variable ends with, is refused like the setting's). Judges, the
    response cache's key and the summary all read it here, so they agree on the endpoint. An
    empty ``model.base_url`` is refused: the SDK would call the public endpoint in its place.
    """
    if model.base_url is not None:
        return checked_base_url(str(model.base_url), "model.base_url")
    variable = BASE_URL_ENVS.get(str(model.provider))
    value = os.environ.get(variable, "") if variable else ""
    return checked_base_url(value, variable) if value.strip() and variable else None


#: The schemes a judge's HTTP client can call.
_SCHEMES = ("http", "https")


def checked_base_url(url: str, source: str) -> str:
    """``url`` when a judge can call it; otherwise a :class:`ConfigError` naming ``source``
    (the setting or environment variable it came from) and what to give instead.

    Refused: an empty URL (the SDK would call the public endpoint instead), whitespace in it
    (an unencoded space in a path the server never matches), no scheme (``localhost:8000/v1``),
    a scheme other than http(s), no host, and a user name or password in the URL (the SDK's key
    header clashes with it, and the URL is kept in records). The credentials are never
    repeated in the message.
    """
    example = "e.g. http://127.0.0.1:8000/v1 or https://api.example.com/v1"
    if not url.strip():
        raise ConfigError(
            f"{source} is empty; give the server's full URL, {example}, or leave {source} "
            "out (null) for the provider's public endpoint"
        )
    if any(char.isspace() for char in url):
        raise ConfigError(
            f"{source}={redact_text(url)!r} holds a space or another blank; remove it, or write "
            "a space that belongs in the path as %20"
        )
    try:
        parts = urllib.parse.urlsplit(url)
        has_credentials = parts.username is not None or parts.password is not None
        host = parts.hostname
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError:
        raise ConfigError(
            f"{source} is not a URL a judge can call; give the server's full URL, {example}"
        ) from None
    if has_credentials:
        raise ConfigError(
            f"{source} holds a user name or password in the URL; remove them (give "
            "scheme://host/path only) and put the key in the environment variable that "
            "model.api_key_env names"
        )
    scheme = parts.scheme.lower()
    shown = repr(redact_text(url))
    if "://" not in url or not scheme:
        raise ConfigError(
            f"{source}={shown} has no scheme; give the server's full URL starting with "
            f"http:// or https://, {example}"
        )
    if scheme not in _SCHEMES:
        raise ConfigError(
            f"{source}={shown} uses {scheme}://, which judges cannot call; give an http:// "
            f"or https:// URL, {example}"
        )
    if not host:
        raise ConfigError(f"{source}={shown} names no host; give the server's full URL, {example}")
    return url


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
