"""Shared test helpers: paths to the shared real data, config composition."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

import mmjudge.sweep  # noqa: F401  (registers the schema and the path resolver)
from mmjudge import PROJECT_ROOT

SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
CONF_DIR = str(PROJECT_ROOT / "conf")


def shared_data(name: str) -> Path:
    """A folder of the shared real datasets, or skip the test with the reason."""
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"shared dataset {path} is not present (only in the development checkout)")
    return path


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides or [], return_hydra_config=False)
