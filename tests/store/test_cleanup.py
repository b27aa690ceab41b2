"""A run folder is removed when its run fails before judging anything, and only then."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mmjudge.store.cleanup import note_existing, remove, removed_unless_judged
from tests.helpers import REPO_ROOT, run_sweep


def hydra_folder(path: Path) -> Path:
    """A run folder as Hydra leaves it before mmjudge starts: config copies and a job log."""
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "config.yaml").write_text("model: {}\n")
    (path / "sweep.log").write_text("")
    return path


def fail(run_dir: Path, write: dict[str, str] | None = None) -> None:
    with pytest.raises(SystemExit), removed_unless_judged(run_dir):
        for name, text in (write or {}).items():
            (run_dir / name).write_text(text)
        raise SystemExit(2)


def test_a_failure_before_any_row_removes_the_folder_and_its_log_handler(tmp_path: Path) -> None:
    run_dir = hydra_folder(tmp_path / "run")
    handler = logging.FileHandler(run_dir / "sweep.log")
    logging.getLogger().addHandler(handler)
    try:
        fail(run_dir, {"judgments.jsonl": "", "summary.json": "{}"})
        assert not run_dir.exists()
        assert handler not in logging.getLogger().handlers
        logging.getLogger().warning("after the folder went")  # must not recreate it
        assert not run_dir.exists()
    finally:
        logging.getLogger().removeHandler(handler)


@pytest.mark.parametrize(
    "written",
    [
        {"judgments.jsonl": '{"label": 1}\n'},
        {"batches.json": "{}"},
        # stopped by a signal with calls in flight: the summary counts what may be billed
        {"summary.json": '{"calls": {"api_calls": 0, "abandoned_in_flight": 3}}'},
    ],
)
def test_a_failure_after_a_row_or_a_batch_keeps_the_folder(
    tmp_path: Path, written: dict[str, str]
) -> None:
    run_dir = hydra_folder(tmp_path / "run")
    fail(run_dir, written)
    assert run_dir.is_dir()


def test_a_summary_that_sent_nothing_does_not_keep_the_folder(tmp_path: Path) -> None:
    run_dir = hydra_folder(tmp_path / "run")
    fail(run_dir, {"summary.json": '{"calls": {"api_calls": 0, "abandoned_in_flight": 0}}'})
    assert not run_dir.exists()


def test_a_folder_that_held_a_run_before_is_kept(tmp_path: Path) -> None:
    run_dir = hydra_folder(tmp_path / "run")
    (run_dir / "summary.json").write_text("{}")  # a finished run being resumed
    fail(run_dir)
    assert (run_dir / "summary.json").is_file()


def test_success_keeps_the_folder(tmp_path: Path) -> None:
    run_dir = hydra_folder(tmp_path / "run")
    with removed_unless_judged(run_dir):
        pass
    assert run_dir.is_dir()


def test_never_the_working_directory_or_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    remove(tmp_path)
    remove(tmp_path.parent)
    remove(REPO_ROOT)
    assert tmp_path.is_dir() and REPO_ROOT.joinpath("pyproject.toml").is_file()


def test_folders_left_empty_above_the_run_go_too_below_the_working_directory_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    fail(hydra_folder(tmp_path / "results" / "runs" / "first"))
    assert list(tmp_path.iterdir()) == []  # a first run that failed leaves no results/runs
    (tmp_path / "results" / "runs" / "kept").mkdir(parents=True)
    fail(hydra_folder(tmp_path / "results" / "runs" / "second"))
    assert [p.name for p in (tmp_path / "results" / "runs").iterdir()] == ["kept"]
    elsewhere = tmp_path / "elsewhere"
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    fail(hydra_folder(elsewhere / "results" / "runs" / "third"))
    assert (elsewhere / "results" / "runs").is_dir()  # outside the working directory: kept


def test_folders_that_existed_before_the_run_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x" / "c").mkdir(parents=True)  # the user's, made before the run
    note_existing(tmp_path / "x" / "c" / "run")  # as the command's Hydra callback does
    fail(hydra_folder(tmp_path / "x" / "c" / "run"))
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["c"]
    assert list((tmp_path / "x" / "c").iterdir()) == []
    # The library's run notes them itself: the run folder does not exist yet.
    (tmp_path / "y" / "d").mkdir(parents=True)
    run_dir = tmp_path / "y" / "d" / "made" / "run"
    with pytest.raises(SystemExit), removed_unless_judged(run_dir):
        hydra_folder(run_dir)
        raise SystemExit(2)
    assert [p.name for p in (tmp_path / "y").iterdir()] == ["d"]
    assert list((tmp_path / "y" / "d").iterdir()) == []  # "made" was the run's: gone


def test_an_empty_run_folder_made_before_the_run_is_emptied_not_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run_dir = tmp_path / "mine"
    run_dir.mkdir()
    note_existing(run_dir)
    fail(hydra_folder_in(run_dir))
    assert run_dir.is_dir() and list(run_dir.iterdir()) == []


def hydra_folder_in(path: Path) -> Path:
    """Hydra's files in a folder that exists already."""
    (path / ".hydra").mkdir()
    (path / "sweep.log").write_text("")
    return path


@pytest.mark.slow
def test_a_failed_run_into_a_users_folder_keeps_that_folder(tmp_path: Path) -> None:
    (tmp_path / "x" / "c").mkdir(parents=True)
    result = run_sweep(
        tmp_path, "model=lexical", "hydra.run.dir=x/c/run", f"dataset.path={tmp_path / 'none'}"
    )
    assert result.returncode == 2, result.stderr
    assert (tmp_path / "x" / "c").is_dir() and not (tmp_path / "x" / "c" / "run").exists()
    result = run_sweep(
        tmp_path, "model=lexical", "hydra.run.dir=x/new/run", f"dataset.path={tmp_path / 'none'}"
    )
    assert result.returncode == 2, result.stderr
    assert [p.name for p in (tmp_path / "x").iterdir()] == ["c"]  # x/new was the run's
