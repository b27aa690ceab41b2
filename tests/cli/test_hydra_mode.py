"""The sweep composes its config once: Hydra's compose to learn ``hydra.mode`` is skipped when
nothing can set it, and ``-m`` (or ``hydra.mode`` on the command line) still runs a sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra._internal.hydra import Hydra

from mmjudge.cli.sweep import CONFIG_DIR, _mode_from_the_command_line
from tests.helpers import run_sweep


def _sets_hydra_mode(data: Any) -> bool:
    hydra = data.get("hydra") if isinstance(data, dict) else None
    return isinstance(hydra, dict) and "mode" in hydra


def test_no_config_file_sets_hydra_mode() -> None:
    """What the shortcut relies on: a config of conf/ that set it would need the compose."""
    files = sorted(Path(CONFIG_DIR).rglob("*.yaml"))
    assert files
    offending = [str(f) for f in files if _sets_hydra_mode(yaml.safe_load(f.read_text()))]
    assert offending == []


def test_the_mode_compose_is_skipped_only_when_nothing_can_set_the_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    composed: list[list[str]] = []

    def compose_for_mode(_self: Any, config_name: str | None, overrides: list[str]) -> Any:
        composed.append(list(overrides))
        return "composed"

    monkeypatch.setattr(Hydra, "get_mode", compose_for_mode)
    hydra = object.__new__(Hydra)
    for argv in (["model=lexical"], ["-m", "model=lexical,gpt4o", "experiment=reference_study"]):
        with _mode_from_the_command_line(argv):
            assert hydra.get_mode("config", argv) is None
        assert hydra.get_mode("config", argv) == "composed"  # put back afterwards
    for argv in (
        ["model=lexical", "hydra.mode=MULTIRUN"],
        ["++hydra.mode=RUN"],
        ["--config-dir", "/elsewhere", "model=lexical"],
        ["-cn", "other"],
        ["--config-path=/elsewhere"],
        ["hydra.searchpath=[file:///elsewhere]", "model=mine"],
    ):
        composed.clear()
        with _mode_from_the_command_line(argv):
            assert hydra.get_mode("config", argv) == "composed"
        assert composed == [argv]


@pytest.mark.slow
@pytest.mark.parametrize("how", [["-m"], ["hydra.mode=MULTIRUN"]])
def test_a_multirun_still_runs_every_job(tmp_path: Path, how: list[str]) -> None:
    result = run_sweep(
        tmp_path,
        *how,
        "model=lexical",
        "modality=text",
        "dataset=demo_fashion",
        "dataset.limit=4",
        "prompt=default,terse",
        "runner.progress=false",
        "report.build=false",
    )
    assert result.returncode == 0, result.stderr
    [sweep_dir] = (tmp_path / "results" / "sweeps").iterdir()
    jobs = [p for p in sweep_dir.iterdir() if (p / "summary.json").is_file()]
    assert len(jobs) == 2
