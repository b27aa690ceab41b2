"""What counts as a secret: credential-shaped values, settings and variables named like
credentials, and the walks over overrides and configs that find where each value goes."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, QuotedString
from omegaconf import DictConfig, ListConfig, OmegaConf

REDACTED = "<redacted>"
#: Values shorter than this are not treated as secrets (``1``, ``true``, a short name).
MIN_SECRET_CHARS = 8
#: Where Hydra keeps the environment it sets for a job.
ENV_SET = "hydra.job.env_set."

#: Shapes of provider and platform keys (OpenAI, Anthropic, Google, GitHub, Hugging Face, AWS),
#: each starting a word (``mask-rcnn_resnet50_fpn_v2`` holds no key).
KEY_PATTERN = re.compile(
    r"(?<![A-Za-z0-9_\-])(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|hf_[A-Za-z0-9]{30,}|AKIA[0-9A-Z]{16})"
)
BEARER = re.compile(r"\b(bearer)\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE)
URL_PASSWORD = re.compile(r"\b([a-z][a-z0-9+.\-]*://)[^/?#\s@:]*:[^/?#\s@]+@", re.IGNORECASE)
URL_QUERY_CREDENTIAL = re.compile(
    r"([?&](?:api[_-]?key|key|token|access[_-]?token|auth|secret|password|sig|signature)=)"
    r"[^&#\s'\"]+",
    re.IGNORECASE,
)
ENV_INTERPOLATION = re.compile(r"\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)")

#: Setting names that hold a credential, whole or as an ending (compared lower-cased, ``-``
#: read as ``_``). ``price_key`` or ``max_tokens`` are not among them.
CREDENTIAL_SETTINGS = frozenset(
    {
        "key",
        "apikey",
        "api_key",
        "token",
        "auth",
        "authorization",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "headers",
        "bearer",
    }
)
CREDENTIAL_SETTING_ENDINGS = (
    "_api_key",
    "_apikey",
    "access_key",
    "private_key",
    "secret_key",
    "_token",
    "_secret",
    "_password",
    "_passwd",
    "_auth",
    "_authorization",
    "_credential",
    "_credentials",
    "_cookie",
    "_cookies",
    "_headers",
)
#: Words of an environment variable's name (split on ``_``) that mark it as a credential.
CREDENTIAL_VARIABLE_WORDS = frozenset(
    {
        "KEY",
        "APIKEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PASSPHRASE",
        "PAT",
        "CREDENTIAL",
        "CREDENTIALS",
    }
)

FIX = (
    "keep keys in environment variables and name them with model.api_key_env=VAR_NAME "
    "(settings and overrides are written to disk)"
)
ENV_FIX = "set the variable in the environment before starting mmjudge instead"


def credential_setting(name: str) -> bool:
    """Whether a setting (one component of a config path) is named like a credential."""
    normal = name.strip().lower().replace("-", "_")
    return normal in CREDENTIAL_SETTINGS or normal.endswith(CREDENTIAL_SETTING_ENDINGS)


def credential_variable(name: str) -> bool:
    """Whether an environment variable is named like a credential (``OPENAI_API_KEY``)."""
    return any(word in CREDENTIAL_VARIABLE_WORDS for word in name.upper().split("_"))


def secret_values(
    key_envs: Iterable[str] = (), env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``{value: variable}`` for the credentials in the environment worth looking for.

    A variable counts when its name marks a credential or a ``model.api_key_env`` names it,
    and its value has at least :data:`MIN_SECRET_CHARS` characters and is not a file path
    (``GOOGLE_APPLICATION_CREDENTIALS`` names a file; the file is not the secret's text).
    """
    source = os.environ if env is None else env
    named = set(key_envs)
    found: dict[str, str] = {}
    for name, raw in source.items():
        value = raw.strip()
        if not (credential_variable(name) or name in named):
            continue
        if len(value) >= MIN_SECRET_CHARS and not value.startswith(("/", "~", "./", "../")):
            found.setdefault(value, name)
    return found


# -- recognising a secret in one value or one destination ------------------------------------


def value_problem(text: str, secrets: Mapping[str, str], key_envs: Collection[str]) -> str | None:
    """Why ``text`` must not be written (without repeating it), or None."""
    for value, variable in secrets.items():
        if value in text:
            return f"it holds the value of the credential variable {variable}"
    if KEY_PATTERN.search(text):
        return "it holds what looks like an API key"
    if BEARER.search(text):
        return "it holds a Bearer credential"
    if URL_PASSWORD.search(text):
        return "its URL carries a password (user:password@host)"
    if URL_QUERY_CREDENTIAL.search(text):
        return "its URL carries a credential in its query (?key=…)"
    for variable in ENV_INTERPOLATION.findall(text):
        if credential_variable(variable) or variable in key_envs:
            return f"it reads the credential variable {variable} into the config"
    return None


def destination_problem(path: str, key_envs: Collection[str]) -> str | None:
    """Why a setting at ``path`` (``model.options.auth``) must not hold a value, or None."""
    if path.startswith(ENV_SET):
        variable = path[len(ENV_SET) :]
        if credential_variable(variable) or variable in key_envs:
            return (
                f"it would set the credential variable {variable}, and Hydra's settings are "
                f"written to disk; {ENV_FIX}"
            )
        return None
    components = [part for part in re.split(r"[./]|\[\d+\]", path) if part]
    for part in components:
        if credential_setting(part):
            return f"'{part}' is named like a credential (key, token, auth, headers, password)"
    return None


# -- overrides (the command line, and hydra.overrides in a composed config) ------------------


@functools.cache
def _parser() -> OverridesParser:
    return OverridesParser.create()


@functools.lru_cache(maxsize=1024)
def parse_override(argument: str) -> Any:
    """Hydra's parse of one override, or None for a flag (``-m``, ``--config-dir=…``) or text
    Hydra cannot parse (Hydra reports that itself; the text is still checked for secrets).

    Kept per text: a run checks the same overrides several times (the command line, the
    composed config's record of them, the copies it writes), and each parse runs Hydra's
    ANTLR grammar. Callers only read the result."""
    if argument.startswith("-"):
        return None
    try:
        return _parser().parse_override(argument)
    except Exception:
        return None


def override_leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` pairs of a parsed override value; dict keys extend the path."""
    if isinstance(value, ChoiceSweep):
        for choice in value.list:
            yield from override_leaves(choice, path)
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from override_leaves(child, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for child in value:
            yield from override_leaves(child, path)
    elif isinstance(value, QuotedString):
        yield path, value.text
    elif value is not None:
        yield path, value


# -- composed configs -------------------------------------------------------------------------


def config_leaves(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, value)`` for every leaf, interpolations resolved where they can be.

    A value that cannot be resolved yet (a Hydra runtime value before the job starts, a
    missing one) is given as written.
    """
    if isinstance(node, DictConfig | Mapping):
        keys: Iterable[Any] = node.keys()
    elif isinstance(node, ListConfig | list | tuple):
        keys = range(len(node))
    else:
        yield path, node
        return
    for key in keys:
        child_path = f"{path}[{key}]" if isinstance(key, int) else join_path(path, str(key))
        try:
            child = node[key]
        except Exception:  # a value that cannot be resolved is checked as written
            if not isinstance(node, DictConfig | ListConfig):
                raise
            child = OmegaConf.to_container(node, resolve=False)[key]  # type: ignore[index]
        yield from config_leaves(child, child_path)


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def key_envs_of(*configs: Any) -> set[str]:
    """Variable names that any ``api_key_env`` setting of ``configs`` names."""
    return {name for config in configs for name in key_envs_in(config_leaves(config))}


def key_envs_in(leaves: Iterable[tuple[str, Any]]) -> set[str]:
    """Variable names that the ``api_key_env`` settings among ``leaves`` name."""
    return {
        str(value) for path, value in leaves if path.rsplit(".", 1)[-1] == "api_key_env" and value
    }
