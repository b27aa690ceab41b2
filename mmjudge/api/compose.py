"""Compose a sweep's config in Python from the same overrides the command line takes
(:mod:`mmjudge.config.compose`), typed and checked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf.errors import OmegaConfBaseException

from mmjudge.config import SweepConfig
from mmjudge.config.compose import compose_raw, first_line
from mmjudge.errors import ConfigError

__all__ = ["compose", "compose_raw", "first_line"]


def compose(overrides: Sequence[str] = (), config_dir: str | Path | None = None) -> SweepConfig:
    """The typed config of one cell for ``overrides`` (``["model=lexical", "modality=mm"]``).

    ``config_dir`` is a folder of the user's own configs laid out like the shipped ones
    (``model/``, ``dataset/``, ``pricing/``, ``experiment/``…); its files are found beside the
    shipped ones. The result is what :func:`mmjudge.run_cell` and :meth:`mmjudge.Judge.from_config`
    take.

    Raises:
        ConfigError: an unknown setting or group option, a key in an override, a value of the
            wrong type or out of range; the message is one line, as the command prints it.
    """
    from mmjudge.engine.cell import typed_config

    raw = compose_raw(overrides, config_dir)
    try:
        return typed_config(raw)
    except OmegaConfBaseException as error:
        raise ConfigError(first_line(error)) from None
