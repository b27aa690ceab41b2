"""A run's console lines are kept in its own log file (``sweep.log``), once, redacted, and
never in a log file outside the run folder; warnings shown during a run are kept too."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from mmjudge.store.log import keeping_warnings, say

KEY = "sk-planted-0123456789abcdefghij"


@pytest.fixture
def log_files(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A run folder's ``sweep.log`` and a log file elsewhere, both on the root logger (as
    Hydra's job logging and a user's own logging would put them)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    handlers = [
        logging.FileHandler(run_dir / "sweep.log"),
        logging.FileHandler(tmp_path / "elsewhere.log"),
    ]
    root = logging.getLogger()
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield run_dir / "sweep.log", tmp_path / "elsewhere.log"
    finally:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()


def test_a_line_said_is_printed_once_and_kept_in_the_run_log_only(
    log_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run_log, elsewhere = log_files
    say("mmjudge: stopped after 10 calls in a row", run_log.parent)
    out, err = capsys.readouterr()
    assert out == "" and err == "mmjudge: stopped after 10 calls in a row\n"
    assert run_log.read_text().count("mmjudge: stopped after 10 calls in a row") == 1
    assert elsewhere.read_text() == ""


def test_keys_are_redacted_in_the_log_and_on_the_console(
    log_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run_log, _ = log_files
    say(f"mmjudge: the server said: bad key {KEY}", run_log.parent)
    kept = run_log.read_text()
    assert KEY not in kept and "bad key <redacted>" in kept
    assert KEY not in capsys.readouterr().err


def test_warnings_shown_during_a_run_are_kept(log_files: tuple[Path, Path]) -> None:
    run_log, elsewhere = log_files
    shown: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *_args, **_kw: shown.append(str(message))
        with keeping_warnings(run_log.parent):
            warnings.warn("tiktoken is unavailable offline", UserWarning, stacklevel=1)
    assert shown == ["tiktoken is unavailable offline"]  # still shown as before, once
    assert "tiktoken" not in elsewhere.read_text()
    assert "UserWarning: tiktoken is unavailable offline" in run_log.read_text()
