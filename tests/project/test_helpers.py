"""The shared sweep helpers: isolation of what a test sweep writes, and the slow-mark rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_sweep, start_sweep, sweep_command, sweep_env


def test_sweep_command_writes_under_the_test_folder_unless_told_otherwise(tmp_path: Path) -> None:
    command = sweep_command(tmp_path, "-m", "model=lexical", f"paths.results={tmp_path / 'x'}")
    assert command[1:3] == ["-m", "mmjudge.sweep"]
    assert f"paths.results={tmp_path / 'x'}" in command
    assert f"paths.results={tmp_path / 'results'}" not in command  # the test's own value wins
    for setting in ("paths.reports", "paths.response_cache", "paths.image_cache"):
        (value,) = [item for item in command if item.startswith(f"{setting}=")]
        assert value.split("=", 1)[1].startswith(str(tmp_path))


def test_sweep_env_drops_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    env = sweep_env({"ANTHROPIC_API_KEY": "sk-test"})
    assert "OPENAI_API_KEY" not in env and env["ANTHROPIC_API_KEY"] == "sk-test"


@pytest.mark.parametrize("helper", [run_sweep, start_sweep])
def test_a_sweep_in_a_test_not_marked_slow_is_refused(helper, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"mark it @pytest.mark.slow"):
        helper(tmp_path, "runner.dry_run=true")
    assert not (tmp_path / "results").exists()
