"""Compose a cell's config from the overrides the command line takes: the shipped configs
(package data, ``pkg://mmjudge.conf``, see :mod:`mmjudge.locations`) with a user's own folder of
configs on Hydra's search path, so its files extend the shipped groups (a
``model/my_judge.yaml`` there is chosen with ``model=my_judge``) as ``--config-dir`` does on the
command line. The library, the grid of a sweep or a race, and the tests compose through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from mmjudge.errors import ConfigError
from mmjudge.locations import CONFIG_DIR, CONFIG_MODULE

#: The primary config's name in the config folder.
CONFIG_NAME = "config"


def compose_raw(
    overrides: Sequence[str] = (),
    config_dir: str | Path | None = None,
    *,
    with_hydra: bool = False,
) -> DictConfig:
    """The composed config before it is typed (``with_hydra``: with its ``hydra`` node, which
    holds the sweep's folders and an experiment's sweep parameters).

    Raises:
        ConfigError: an unknown setting or group option, a key in an override, a value of the
            wrong type; the message is one line, as the command prints it.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import HydraException

    from mmjudge.config.hydra_errors import CONFIG_FILE_ERRORS, config_file_error_line
    from mmjudge.config.keys import unknown_setting
    from mmjudge.config.resolvers import register as register_resolvers
    from mmjudge.keyguard import check_overrides

    register_resolvers()
    arguments = list(overrides)
    problem = check_overrides(arguments)
    if problem is None and config_dir is None:
        # A user's folder may add group options the shipped folder does not know; Hydra's
        # own check names those.
        problem = unknown_setting(arguments, CONFIG_DIR)
    if problem:
        raise ConfigError(problem)
    if config_dir is not None:
        arguments.append(f"hydra.searchpath=[{search_path_entry(config_dir)}]")
    try:
        with initialize_config_module(config_module=CONFIG_MODULE, version_base="1.3"):
            return hydra_compose(
                config_name=CONFIG_NAME, overrides=arguments, return_hydra_config=with_hydra
            )
    except (HydraException, OmegaConfBaseException) as error:
        raise ConfigError(first_line(error)) from None
    except CONFIG_FILE_ERRORS as error:
        folder = Path(config_dir).expanduser() if config_dir is not None else None
        raise ConfigError(config_file_error_line(error, folder)) from None


def search_path_entry(config_dir: str | Path) -> str:
    """Hydra's search-path entry for a user's config folder (absolute, checked to exist).

    Raises:
        ConfigError: the folder does not exist.
    """
    folder = Path(config_dir).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"config folder {config_dir} does not exist")
    return f"file://{folder}"


def first_line(error: BaseException) -> str:
    """An error's first line (Hydra's and OmegaConf's messages run over several)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
