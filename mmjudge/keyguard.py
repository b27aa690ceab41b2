"""Keep credentials out of everything a run writes: refuse them early, redact what is written.

Keys live only in environment variables named by ``model.api_key_env``. Hydra would save the
command line and the composed config into every run folder before the job starts, so mmjudge
turns Hydra's copies off (``hydra.output_subdir: null``) and checks before anything is
written: the command line in ``main`` (:func:`check_overrides`), the composed config in the
:class:`KeyGuard` callback (before Hydra creates a run folder or a multirun's
``multirun.yaml``) and again in each job (:func:`keep_run_config`), which then writes the
``.hydra/`` copies itself, redacted by path.

A secret is recognised

- by where it goes: a setting named like a credential (``api_key``, ``token``, ``auth``,
  ``password``, ``*_secret``, headers, cookies...), and ``hydra.job.env_set`` of a variable
  named like one or named by a ``model.api_key_env``;
- by shape: provider key formats, ``Bearer`` credentials, a password in a URL
  (``user:password@host``) or a credential in its query (``?key=…``), and an
  ``${oc.env:…}`` interpolation of a credential variable;
- by value: text holding the value of an environment variable whose name marks a credential
  (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``...) or that a ``model.api_key_env``
  names, when that value has at least :data:`MIN_SECRET_CHARS` characters and is not a path.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, QuotedString
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf

from mmjudge.errors import ConfigError

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


def _parsed(argument: str) -> Any:
    """Hydra's parse of one override, or None for a flag (``-m``, ``--config-dir=…``) or text
    Hydra cannot parse (Hydra reports that itself; the text is still checked for secrets)."""
    if argument.startswith("-"):
        return None
    try:
        return _parser().parse_override(argument)
    except Exception:
        return None


def _override_leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` pairs of a parsed override value; dict keys extend the path."""
    if isinstance(value, ChoiceSweep):
        for choice in value.list:
            yield from _override_leaves(choice, path)
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _override_leaves(child, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _override_leaves(child, path)
    elif isinstance(value, QuotedString):
        yield path, value.text
    elif value is not None:
        yield path, value


def override_problem(
    argument: str, secrets: Mapping[str, str], key_envs: Collection[str]
) -> str | None:
    """A one-line error when one command-line argument would put a secret on disk."""
    override = _parsed(argument)
    name = argument.split("=", 1)[0] if override is None else override.get_key_element()
    name = redact_text(name, secrets)
    why = value_problem(argument, secrets, key_envs)
    if why is None and override is not None and not override.is_delete():
        key = str(override.key_or_group)
        for path, leaf in _override_leaves(override.value(), key):
            if leaf is None or str(leaf) == "":
                continue
            why = destination_problem(path, key_envs)
            if why is not None:
                break
    if why is None:
        return None
    fix = "" if ENV_FIX in why else f"; {FIX}"
    return f"refusing the override '{name}=…': {why}{fix}"


def check_overrides(
    arguments: Sequence[str],
    secrets: Mapping[str, str] | None = None,
    key_envs: Collection[str] = (),
) -> str | None:
    """The first problem with command-line arguments (Hydra overrides), or None."""
    named = set(key_envs) | _key_envs_in_overrides(arguments)
    found = secret_values(named) if secrets is None else secrets
    for argument in arguments:
        problem = override_problem(argument, found, named)
        if problem:
            return problem
    return None


def _key_envs_in_overrides(arguments: Iterable[str]) -> set[str]:
    names = set()
    for argument in arguments:
        name, _, value = argument.lstrip("+~").partition("=")
        if name.endswith("api_key_env") and value:
            names.add(value.strip("'\""))
    return names


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
        child_path = f"{path}[{key}]" if isinstance(key, int) else _join(path, str(key))
        try:
            child = node[key]
        except Exception:  # a value that cannot be resolved is checked as written
            if not isinstance(node, DictConfig | ListConfig):
                raise
            child = node._get_node(key)._value()  # type: ignore[union-attr]
        yield from config_leaves(child, child_path)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def key_envs_of(*configs: Any) -> set[str]:
    """Variable names that any ``api_key_env`` setting of ``configs`` names."""
    return {
        str(value)
        for config in configs
        for path, value in config_leaves(config)
        if path.rsplit(".", 1)[-1] == "api_key_env" and value
    }


def check_config(
    config: Any,
    secrets: Mapping[str, str] | None = None,
    key_envs: Collection[str] = (),
) -> str | None:
    """The first setting of a composed config that holds or receives a secret, or None.

    ``config`` is a DictConfig or plain containers; the ``hydra`` node, when present, is
    checked too, its recorded overrides included.
    """
    named = set(key_envs) | key_envs_of(config)
    found = secret_values(named) if secrets is None else secrets
    for path, value in config_leaves(config):
        if value is None or str(value) == "":
            continue
        if re.search(r"(^|\.)overrides\.(task|hydra)\[\d+\]$", path):
            problem = override_problem(str(value), found, named)
            if problem:
                return problem
            continue
        why = destination_problem(path, named) or value_problem(str(value), found, named)
        if why is not None:
            fix = "" if ENV_FIX in why else f"; {FIX}"
            return f"refusing config setting '{path}': {why}{fix}"
    return None


# -- redaction ---------------------------------------------------------------------------------


def redact_text(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """``text`` with every recognisable secret replaced by ``<redacted>``."""
    found = secret_values() if secrets is None else secrets
    for value in sorted(found, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    text = KEY_PATTERN.sub(REDACTED, text)
    text = BEARER.sub(rf"\1 {REDACTED}", text)
    text = URL_PASSWORD.sub(rf"\1{REDACTED}@", text)
    return URL_QUERY_CREDENTIAL.sub(rf"\1{REDACTED}", text)


def redact_override(argument: str, secrets: Mapping[str, str] | None = None) -> str:
    """One override as it may be written: a credential destination loses its whole value."""
    found = secret_values() if secrets is None else secrets
    override = _parsed(argument)
    if override is not None and not override.is_delete():
        key = str(override.key_or_group)
        for path, _leaf in _override_leaves(override.value(), key):
            if destination_problem(path, ()) is not None:
                return f"{override.get_key_element()}={REDACTED}"
    return redact_text(argument, found)


def redact(
    tree: Any,
    secrets: Mapping[str, str] | None = None,
    key_envs: Collection[str] = (),
    path: str = "",
) -> Any:
    """A copy of plain containers with every secret redacted, by path and by value.

    A value at a credential destination (see :func:`destination_problem`) is replaced whole;
    recorded overrides lose the value of a credential destination; any other text loses
    what :func:`redact_text` recognises.
    """
    found = secret_values(key_envs) if secrets is None else secrets
    if isinstance(tree, Mapping):
        out = {}
        for key, value in tree.items():
            child = _join(path, str(key))
            empty = value is None or value == "" or value == {} or value == []
            hidden = not empty and destination_problem(child, key_envs) is not None
            out[key] = REDACTED if hidden else redact(value, found, key_envs, child)
        return out
    if isinstance(tree, list | tuple):
        items = [redact(v, found, key_envs, f"{path}[{i}]") for i, v in enumerate(tree)]
        return type(tree)(items) if isinstance(tree, tuple) else items
    if isinstance(tree, str):
        if re.search(r"(^|\.)overrides\.(task|hydra)$", path.rsplit("[", 1)[0]):
            return redact_override(tree, found)
        return redact_text(tree, found)
    return tree


class RedactingFilter(logging.Filter):
    """Rewrites log records that hold a recognisable secret (attached to log handlers)."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        super().__init__()
        self.secrets = dict(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record: logging reports it when the handler formats it
        clean = redact_text(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(
                logging.Formatter().formatException(record.exc_info), self.secrets
            )
        return True


def redact_logs(secrets: Mapping[str, str] | None = None) -> None:
    """Attach a :class:`RedactingFilter` to every handler of the root logger (once each)."""
    found = secret_values() if secrets is None else secrets
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter(found))


# -- Hydra ------------------------------------------------------------------------------------


class KeyGuard(Callback):
    """Stops a run or multirun whose composed config holds a secret, before Hydra writes.

    Hydra calls ``on_run_start`` and ``on_multirun_start`` after composing the config and
    before it creates the run folder or writes ``multirun.yaml``. Each job's own config (with
    its sweep choices) is checked again by :func:`keep_run_config`.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _stop_on(check_config(config))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _stop_on(check_config(config))


def _stop_on(problem: str | None) -> None:
    if problem:
        print(f"mmjudge: {problem}", file=sys.stderr)
        raise SystemExit(2)


def keep_run_config(task_cfg: DictConfig, run_dir: Path) -> None:
    """Check a job's composed config, then write its ``.hydra/`` copies, redacted.

    Hydra's own copies are turned off (``hydra.output_subdir: null``) because it writes
    them before the job can look at them. These have the same names and layout
    (``config.yaml``, ``hydra.yaml``, ``overrides.yaml``); log handlers are made to redact
    too. Raises :class:`ConfigError` naming the setting when a secret is found.
    """
    from hydra.core.hydra_config import HydraConfig

    hydra_root = HydraConfig.instance().cfg
    key_envs = key_envs_of(task_cfg)
    secrets = secret_values(key_envs)
    for config in (task_cfg, hydra_root):
        problem = check_config(config, secrets, key_envs)
        if problem:
            raise ConfigError(problem)
    redact_logs(secrets)
    hydra_dir = run_dir / ".hydra"
    hydra_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "config.yaml": redact(_plain(task_cfg), secrets, key_envs),
        "hydra.yaml": redact(_plain(hydra_root), secrets, key_envs),
        "overrides.yaml": [
            redact_override(str(item), secrets) for item in HydraConfig.get().overrides.task
        ],
    }
    for name, tree in files.items():
        text = OmegaConf.to_yaml(OmegaConf.create(tree))
        (hydra_dir / name).write_text(text, encoding="utf-8")


def _plain(config: Any) -> Any:
    """A config as plain containers, interpolations kept as written (as Hydra saves it)."""
    return OmegaConf.to_container(config, resolve=False, enum_to_str=True)


def resolved_config(cfg: Any) -> dict[str, Any]:
    """A cell's resolved config as run records keep it (Hydra's own settings left out),
    redacted by path and by value; ``cfg`` is a composed config or a typed one.

    A config holding a key is refused before the run starts; the redaction is the second
    line of defence, for whatever a later change lets through.
    """
    node = cfg if isinstance(cfg, DictConfig) else OmegaConf.structured(cfg)
    container = OmegaConf.to_container(node, resolve=True)
    assert isinstance(container, dict)
    container.pop("hydra", None)
    clean = redact(container, key_envs=key_envs_of(container))
    return {str(k): v for k, v in clean.items()}
