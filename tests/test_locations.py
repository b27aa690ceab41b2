"""Where paths resolve: the working folder for the user's, the package for what ships."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from mmjudge.errors import ConfigError
from mmjudge.locations import CONFIG_DIR, PACKAGE_DIR, package_path, resolve_path
from tests.helpers import REPO_ROOT


def test_relative_paths_resolve_against_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_path("results") == tmp_path / "results"
    assert resolve_path(Path("a") / "b") == tmp_path / "a" / "b"
    assert resolve_path("x", base=tmp_path / "elsewhere") == tmp_path / "elsewhere" / "x"


def test_absolute_and_home_paths_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_path("/data/runs") == Path("/data/runs")
    assert resolve_path("~/runs") == tmp_path / "runs"


def test_package_paths_name_files_inside_an_installed_package() -> None:
    demo = resolve_path("pkg://mmjudge/datasets/demo_fashion")
    assert demo == Path(str(resources.files("mmjudge.datasets"))) / "demo_fashion"
    assert (demo / "items.jsonl").is_file()
    assert package_path("pkg://mmjudge") == PACKAGE_DIR
    assert package_path("pkg://mmjudge/report/templates") == PACKAGE_DIR / "report" / "templates"
    assert (CONFIG_DIR / "config.yaml").is_file()


def test_the_shipped_configs_and_demos_are_the_checkouts_top_level_folders() -> None:
    """conf/ and datasets/ sit at the top of the repository and are the packages mmjudge.conf
    and mmjudge.datasets (pyproject.toml's package-dir), though the tests import mmjudge from
    the checkout's folder: every config group and demo is found there, as Hydra finds it."""
    assert CONFIG_DIR == REPO_ROOT / "conf"
    assert not (PACKAGE_DIR / "conf").exists() and not (PACKAGE_DIR / "datasets").exists()
    for group in sorted(p for p in CONFIG_DIR.iterdir() if p.is_dir() and p.name[0] != "_"):
        found = {entry.name for entry in resources.files(f"mmjudge.conf.{group.name}").iterdir()}
        assert found == {entry.name for entry in group.iterdir()}, group
    named = set()
    for path in (CONFIG_DIR / "dataset").glob("*.yaml"):
        named |= set(re.findall(r"pkg://mmjudge/datasets/(\w+)", path.read_text("utf-8")))
    assert named, "the shipped dataset configs name no demo"
    for name in sorted(named):
        assert package_path(f"pkg://mmjudge/datasets/{name}") == REPO_ROOT / "datasets" / name
        assert (REPO_ROOT / "datasets" / name / "items.jsonl").is_file(), name


def test_a_package_path_without_an_installed_package_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="names no package"):
        package_path("pkg://")
    with pytest.raises(ConfigError, match="no installed package 'no_such_pkg'") as caught:
        resolve_path("pkg://no_such_pkg/data")
    assert "\n" not in str(caught.value)


def test_the_shipped_configs_name_no_path_inside_a_source_checkout() -> None:
    """Every shipped config that names a dataset folder names one that ships (pkg://) or one
    the user brings (relative to their working folder) — never the repository's layout."""
    for path in (CONFIG_DIR / "dataset").glob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        assert "demo_fashion" not in text or "pkg://mmjudge/datasets/demo_fashion" in text, path
