"""Shared test helpers: paths to the shared real data, config composition, and the one way
tests start ``python -m mmjudge.sweep`` as a user would.

Starting a sweep subprocess costs seconds (a fresh interpreter, Hydra, the SDKs), so every
test that does it must be marked ``@pytest.mark.slow``; :func:`run_sweep` and
:func:`start_sweep` refuse to run in a test without that mark, which keeps
``pytest -m "not slow"`` fast as tests are added. Typical use::

    @pytest.mark.slow
    def test_something(tmp_path: Path, loopback: LoopbackServer) -> None:
        result = run_sweep(tmp_path, "model=gpt4o", f"model.base_url={loopback.openai_base_url}",
                           env={"OPENAI_API_KEY": "sk-test"})
        assert result.returncode == 0, result.stderr
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

import mmjudge.sweep  # noqa: F401  (registers the schema and the path resolver)
from mmjudge.locations import CONFIG_DIR, package_path

#: The repository checkout the tests run from (README, .ci, fixtures).
REPO_ROOT = Path(__file__).resolve().parents[1]
#: The demo dataset as shipped (package data: datasets/ at the top of a checkout).
DEMO_DIR = package_path("pkg://mmjudge/datasets/demo_fashion")

SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
CONF_DIR = str(CONFIG_DIR)

#: The test item being run, set by ``tests/conftest.py`` (None outside a test).
RUNNING_TEST: ContextVar[pytest.Item | None] = ContextVar("RUNNING_TEST", default=None)


def installed(module: str) -> bool:
    """Whether ``module`` can be imported; a missing parent package counts as not installed
    (``find_spec("a.b")`` raises when ``a`` itself is absent)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def shared_data(name: str) -> Path:
    """A folder of the shared real datasets, or skip the test with the reason."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"shared dataset {path} is not present (only in the development checkout)")
    return path


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The config Hydra's ``compose`` makes of ``overrides``.

    Composing takes a tenth of a second, most of it reading the same YAML files again, and the
    tests compose hundreds of configs that differ only in values (a dataset's path, a limit).
    So the config groups chosen are composed once per process, and the value overrides are
    applied to a copy the way Hydra applies them after composing (``OmegaConf.update`` with
    ``merge=True``); any other override, and any error, goes to Hydra's own ``compose``, so an
    error is Hydra's own. ``tests/config/test_compose_helper.py`` holds both ways to the same
    config."""
    overrides = list(overrides or [])
    split = _split_values(overrides)
    if split is None:
        return hydra_compose(overrides)
    groups, values = split
    try:
        cfg = copy.deepcopy(_composed_groups(tuple(groups)))
        for key, value in values:
            OmegaConf.update(cfg, key, value, merge=True)
    except Exception:
        return hydra_compose(overrides)
    return cfg


def hydra_compose(overrides: list[str]) -> DictConfig:
    """The config composed by Hydra's ``compose`` itself, without its ``hydra`` node."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=False)


@functools.cache
def _composed_groups(groups: tuple[str, ...]) -> DictConfig:
    return hydra_compose(list(groups))


def _split_values(overrides: list[str]) -> tuple[list[str], list[tuple[str, Any]]] | None:
    """``overrides`` as the ones that choose config groups (or anything else Hydra does while
    composing) and the plain value changes (``a.b=value``) it applies after; None when one
    cannot be parsed here."""
    try:
        parsed = OverridesParser.create().parse_overrides(overrides=overrides)
    except Exception:
        return None
    groups: list[str] = []
    values: list[tuple[str, Any]] = []
    for line, override in zip(overrides, parsed, strict=True):
        key = override.key_or_group
        plain = (
            override.type == OverrideType.CHANGE
            and override.package is None
            and not override.is_sweep_override()
            and "." in key
            and not key.startswith("hydra")
        )
        if plain:
            values.append((key, override.value()))
        else:
            groups.append(line)
    return groups, values


#: The config groups whose every shipped option the config tests compose.
OPTION_GROUPS = ("model", "modality", "dataset", "prompt", "pricing", "runner", "perturb")


def shipped_options() -> list[tuple[str, str]]:
    """Every shipped option of :data:`OPTION_GROUPS`, as ``(group, option)`` pairs."""
    return [
        (group, path.stem)
        for group in OPTION_GROUPS
        for path in sorted((CONFIG_DIR / group).glob("*.yaml"))
    ]


def compose_option(group: str, option: str, *, hydra: bool = False) -> DictConfig:
    """The config composed with ``group=option`` (with Hydra's own settings when ``hydra``),
    read-only and composed once per test process: several test modules check every shipped
    option, and composing one takes a tenth of a second. Without ``hydra`` it is the composed
    config less its ``hydra`` node, which is how Hydra's ``compose`` makes it."""
    return _composed(group, option, hydra)


@functools.cache
def _composed(group: str, option: str, hydra: bool) -> DictConfig:
    if not hydra:
        cfg = copy.deepcopy(_composed(group, option, True))
        with read_write(cfg), open_dict(cfg):
            del cfg["hydra"]
    else:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            overrides = [f"{group}={option}"]
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
    OmegaConf.set_readonly(cfg, True)
    return cfg


# --- sweep subprocesses ------------------------------------------------------------------------


def isolated_overrides(root: Path) -> dict[str, str]:
    """Settings that keep everything a sweep writes under ``root``: results, reports and the
    caches (the project's own folders are never touched)."""
    return {
        "paths.results": str(root / "results"),
        "paths.reports": str(root / "reports"),
        "paths.response_cache": str(root / "cache.sqlite"),
        "paths.image_cache": str(root / "images"),
        "paths.prepared_cache": str(root / "prepared"),
    }


def sweep_command(root: Path, *overrides: str) -> list[str]:
    """``python -m mmjudge.sweep`` with ``overrides``, writing only under ``root``.

    The isolating settings of :func:`isolated_overrides` are added for every key that
    ``overrides`` does not set itself (a test may give its own ``paths.results``, for instance).
    """
    given = {item.split("=", 1)[0].lstrip("+~") for item in overrides if "=" in item}
    isolation = [f"{k}={v}" for k, v in isolated_overrides(root).items() if k not in given]
    return [sys.executable, "-m", "mmjudge.sweep", *overrides, *isolation]


def sweep_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without any ``*_API_KEY`` (a developer's real keys never reach a test
    sweep), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(extra or {})
    return env


def run_sweep(
    root: Path, *overrides: str, env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a sweep to its end from ``root`` as working directory (nothing may depend on it);
    returns the finished process with its output as text."""
    _require_slow_mark()
    return subprocess.run(
        sweep_command(root, *overrides),
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=sweep_env(env),
        check=False,
    )


def start_sweep(
    root: Path, *overrides: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a sweep without waiting (to kill it midway); its output is discarded."""
    _require_slow_mark()
    return subprocess.Popen(
        sweep_command(root, *overrides),
        cwd=root,
        env=sweep_env(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _require_slow_mark() -> None:
    item = RUNNING_TEST.get()
    if item is not None and item.get_closest_marker("slow") is None:
        raise AssertionError(
            f"{item.nodeid} starts a sweep subprocess: mark it @pytest.mark.slow so that "
            "pytest -m 'not slow' stays fast"
        )
