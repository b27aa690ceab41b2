"""One command, ``mmjudge``, with the six entry points as subcommands."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mmjudge.cli.main import SUBCOMMANDS, main
from tests.helpers import REPO_ROOT


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert {"sweep", "report", "agree", "reprice", "frontier", "select"} <= set(SUBCOMMANDS)
    assert all(f"  {name}" in out for name in SUBCOMMANDS)


def test_no_subcommand_or_an_unknown_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 2
    assert main(["reprise"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mmjudge: unknown subcommand 'reprise'; choose one of: sweep,")
    assert err.count("\n") == 1


@pytest.mark.parametrize("name", ["report", "reprice", "frontier", "select"])
def test_subcommands_end_bad_input_with_one_line_named_after_them(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "missing")
    assert main([name, missing]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"mmjudge {name}: ") and "\n" not in err and "Traceback" not in err


@pytest.mark.slow
def test_the_console_script_and_python_dash_m_are_the_same_command() -> None:
    script = Path(sys.executable).with_name("mmjudge")
    if not script.exists():
        pytest.skip("the mmjudge console script is not installed in this environment")
    for command in ([str(script), "--help"], [sys.executable, "-m", "mmjudge", "--help"]):
        done = subprocess.run(
            command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "usage: mmjudge <subcommand>" in done.stdout
