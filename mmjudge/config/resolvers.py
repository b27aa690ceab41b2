"""The interpolations the shipped ``config.yaml`` uses (``${mmjudge_path:…}`` and the rest),
registered with OmegaConf once, with the schema, before any config is composed: by the command
(``mmjudge sweep``, ``python -m mmjudge.sweep``) and by the library (:func:`mmjudge.compose`)
alike, so both read the same config the same way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from mmjudge.config import register_configs
from mmjudge.config.names import register_resolvers as register_names
from mmjudge.locations import resolve_path


def _resolve_path(value: str) -> str:
    return str(resolve_path(value))


def _log_level(verbose: object) -> str:
    """The level of mmjudge's and Hydra's own loggers: INFO, or DEBUG with ``hydra.verbose=true``
    (libraries stay at the root's WARNING unless the user turns them up; see conf/config.yaml)."""
    return "DEBUG" if verbose is True else "INFO"


def _file_stem(path: object) -> str:
    """A file's stem, for a cell named after its file (the replay judge's ``replay-<stem>``);
    ``unset`` without one."""
    text = "" if path is None else str(path)
    return Path(text).stem if text.strip() else "unset"


RESOLVERS: dict[str, Callable[..., Any]] = {
    "mmjudge_path": _resolve_path,
    "mmjudge_file_stem": _file_stem,
    "mmjudge_log_level": _log_level,
}


def register() -> None:
    """Register the resolvers and the primary config's schema (idempotent)."""
    for name, function in RESOLVERS.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, function)
    register_names()
    register_configs()
