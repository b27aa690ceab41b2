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

What counts as a secret is in :mod:`.recognise`, redaction in :mod:`.redaction`; this module
holds the checks and the Hydra side, and every caller imports all three from here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from mmjudge.errors import ConfigError
from mmjudge.keyguard.recognise import (
    BEARER,
    CREDENTIAL_SETTING_ENDINGS,
    CREDENTIAL_SETTINGS,
    CREDENTIAL_VARIABLE_WORDS,
    ENV_FIX,
    ENV_INTERPOLATION,
    ENV_SET,
    FIX,
    KEY_PATTERN,
    MIN_SECRET_CHARS,
    REDACTED,
    URL_PASSWORD,
    URL_QUERY_CREDENTIAL,
    config_leaves,
    credential_setting,
    credential_variable,
    destination_problem,
    key_envs_in,
    key_envs_of,
    override_leaves,
    parse_override,
    secret_values,
    value_problem,
)
from mmjudge.keyguard.redaction import (
    RedactingFilter,
    redact,
    redact_logs,
    redact_override,
    redact_text,
)
from mmjudge.keyguard.yaml_text import yaml_text

__all__ = [
    "BEARER",
    "CREDENTIAL_SETTINGS",
    "CREDENTIAL_SETTING_ENDINGS",
    "CREDENTIAL_VARIABLE_WORDS",
    "ENV_FIX",
    "ENV_INTERPOLATION",
    "ENV_SET",
    "FIX",
    "KEY_PATTERN",
    "MIN_SECRET_CHARS",
    "REDACTED",
    "URL_PASSWORD",
    "URL_QUERY_CREDENTIAL",
    "KeyGuard",
    "RedactingFilter",
    "check_config",
    "check_overrides",
    "config_leaves",
    "credential_setting",
    "credential_variable",
    "destination_problem",
    "keep_run_config",
    "key_envs_in",
    "key_envs_of",
    "override_problem",
    "redact",
    "redact_logs",
    "redact_override",
    "redact_text",
    "resolved_config",
    "secret_values",
    "value_problem",
]

# -- overrides (the command line, and hydra.overrides in a composed config) ------------------


def override_problem(
    argument: str, secrets: Mapping[str, str], key_envs: Collection[str]
) -> str | None:
    """A one-line error when one command-line argument would put a secret on disk."""
    override = parse_override(argument)
    name = argument.split("=", 1)[0] if override is None else override.get_key_element()
    name = redact_text(name, secrets)
    why = value_problem(argument, secrets, key_envs)
    if why is None and override is not None and not override.is_delete():
        key = str(override.key_or_group)
        for path, leaf in override_leaves(override.value(), key):
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


def check_config(
    config: Any,
    secrets: Mapping[str, str] | None = None,
    key_envs: Collection[str] = (),
) -> str | None:
    """The first setting of a composed config that holds or receives a secret, or None.

    ``config`` is a DictConfig or plain containers; the ``hydra`` node, when present, is
    checked too, its recorded overrides included.
    """
    # One walk of the config serves both the key variables it names and the check itself.
    leaves = list(config_leaves(config))
    named = set(key_envs) | key_envs_in(leaves)
    found = secret_values(named) if secrets is None else secrets
    for path, value in leaves:
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
        # The overrides as typed: one holding ${...} is text here, not an interpolation.
        "overrides.yaml": [
            redact_override(str(item), secrets) for item in _plain(HydraConfig.get().overrides.task)
        ],
    }
    for name, tree in files.items():
        (hydra_dir / name).write_text(yaml_text(tree), encoding="utf-8")


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
