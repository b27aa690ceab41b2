"""Where a judge's calls go: ``model.base_url``, else the variable its provider's SDK reads,
each checked to be a URL a judge can call."""

from __future__ import annotations

import os
import urllib.parse

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.keyguard import redact_text


def endpoint_for(model: ModelConfig, base_url_env: str | None) -> str | None:
    """Where a model's calls go when not to its provider's public endpoint, else None.

    ``model.base_url`` when set; otherwise ``base_url_env``, the variable the provider's SDK
    reads (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``: its descriptor's
    :attr:`~mmjudge.judges.descriptor.JudgeDescriptor.base_url_env`), as the SDK would use it
    when given no base URL (a blank value counts as unset; a value with a blank in it, such as
    the newline a file read into the variable ends with, is refused like the setting's). An
    empty ``model.base_url`` is refused: the SDK would call the public endpoint in its place.
    """
    if model.base_url is not None:
        return checked_base_url(str(model.base_url), "model.base_url")
    value = os.environ.get(base_url_env, "") if base_url_env else ""
    return checked_base_url(value, base_url_env) if value.strip() and base_url_env else None


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
