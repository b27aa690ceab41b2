"""Every cell of a sweep is checked before the first call: a missing key, a bad dataset or a
model missing from the price sheet stops the grid at once, having judged nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

import mmjudge
from mmjudge.errors import ConfigError, CredentialError
from tests.helpers import isolated_overrides


def where(root: Path) -> list[str]:
    return [f"{key}={value}" for key, value in isolated_overrides(root).items()]


@pytest.mark.slow  # over half a second
def test_a_missing_key_stops_the_library_sweep_before_any_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    overrides = ["model=lexical,gpt4o,claude_haiku45", "dataset.limit=6", *where(tmp_path)]
    with pytest.raises(CredentialError) as caught:
        mmjudge.run_sweep(overrides, sweep_dir=tmp_path / "sweep")
    message = str(caught.value)
    assert "\n" not in message
    assert "OPENAI_API_KEY (needed by gpt4o)" in message
    assert "ANTHROPIC_API_KEY (needed by claude_haiku45)" in message
    assert not (tmp_path / "sweep").exists()  # the free lexical cell was not run first


def test_a_bad_dataset_in_a_later_cell_stops_the_sweep_first(tmp_path: Path) -> None:
    overrides = [
        "model=lexical",
        f"dataset.path={tmp_path}/nowhere,pkg://mmjudge/datasets/demo_fashion",
        *where(tmp_path),
    ]
    with pytest.raises(ConfigError, match="has no items file"):
        mmjudge.run_sweep(overrides, sweep_dir=tmp_path / "sweep")
    assert not (tmp_path / "sweep").exists()


def test_a_dry_run_needs_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    overrides = ["model=gpt4o", "runner.dry_run=true", "dataset.limit=4", *where(tmp_path)]
    sweep = mmjudge.run_sweep(overrides, sweep_dir=tmp_path / "sweep")
    assert sweep.cells[0].forecast is not None
