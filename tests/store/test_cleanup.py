"""A run that fails before judging anything removes what it made, and only that: never a file
or folder it did not make, never through a symbolic link."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mmjudge.store.cleanup import note_existing, remove, removed_unless_judged
from tests.helpers import REPO_ROOT, run_sweep


def hydra_folder(path: Path) -> Path:
    """A run folder as Hydra leaves it before mmjudge starts: config copies and a job log,
    made after the command noted what was there (its Hydra callback)."""
    note_existing(path)
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
    note_existing(run_dir)
    fail(run_dir, {"forecast.json": "{}"})
    assert sorted(p.name for p in run_dir.iterdir()) == [".hydra", "summary.json", "sweep.log"]


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


# --- a user's files are never the run's -------------------------------------------------------


def users_folder(path: Path) -> dict[str, bytes]:
    """A folder of someone else's: logs, another Hydra application's config copies and log,
    and a link to a folder of theirs; returns its files' contents by relative path."""
    files = {
        "important.log": b"keep\n",
        "train.log": b"epoch 1\n",
        ".hydra/config.yaml": b"lr: 0.1\n",
        ".hydra/overrides.yaml": b"- lr=0.1\n",
    }
    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    return files


def contents(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes()
        for p in sorted(path.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def start_and_fail(run_dir: Path) -> None:
    """A failed start as the command makes one: noted, Hydra's log, the config copies written
    over whatever was there, the lock file, then an error."""
    note_existing(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "sweep.log").write_text("mmjudge: model 'gpt4o_mini' needs an API key\n")
    with pytest.raises(SystemExit), removed_unless_judged(run_dir):
        (run_dir / ".hydra").mkdir(exist_ok=True)
        for name in ("config.yaml", "hydra.yaml", "overrides.yaml"):
            (run_dir / ".hydra" / name).write_text("model: {name: gpt4o_mini}\n")
        (run_dir / ".mmjudge.lock").write_text("pid 1\n")
        raise SystemExit(2)


def test_a_failed_start_in_a_folder_of_logs_keeps_every_file_and_removes_its_own(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "withlog"
    run_dir.mkdir()
    (run_dir / "important.log").write_text("keep\n")
    start_and_fail(run_dir)
    assert contents(run_dir) == {"important.log": b"keep\n"}


def test_another_applications_config_copies_and_log_are_left_as_they_were(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "outputs"
    run_dir.mkdir()
    files = users_folder(run_dir)
    start_and_fail(run_dir)
    assert contents(run_dir) == files  # config.yaml put back, hydra.yaml (the run's) gone


def test_a_run_folder_reached_through_a_link_keeps_the_link_and_what_it_points_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "theirs"
    target.mkdir()
    files = users_folder(target)
    (tmp_path / "link").symlink_to(target)
    start_and_fail(Path("link"))
    assert (tmp_path / "link").is_symlink() and (tmp_path / "link").resolve() == target
    assert contents(target) == files


def test_a_link_inside_the_folder_is_never_followed_or_removed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "data.csv").write_text("1,2\n")
    run_dir = tmp_path / "run"
    note_existing(run_dir)
    run_dir.mkdir()
    with pytest.raises(SystemExit), removed_unless_judged(run_dir):
        (run_dir / "data").symlink_to(elsewhere)  # not the run's doing, but not followed
        (run_dir / "sweep.log").write_text("")
        raise SystemExit(2)
    assert (run_dir / "data").is_symlink()  # the folder stays: it is not empty
    assert not (run_dir / "sweep.log").exists()
    assert (elsewhere / "data.csv").read_text() == "1,2\n"


def test_a_folder_too_large_to_list_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmjudge.store.cleanup as cleanup

    monkeypatch.setattr(cleanup, "LISTED_AT_MOST", 3)
    run_dir = tmp_path / "big"
    run_dir.mkdir()
    for n in range(5):
        (run_dir / f"{n}.txt").write_text("")
    start_and_fail(run_dir)
    assert (run_dir / "sweep.log").is_file() and len(list(run_dir.iterdir())) == 8


def test_a_run_that_may_have_been_billed_keeps_its_folder(tmp_path: Path) -> None:
    # Its only sends timed out: the ledger (or a summary counting them) is evidence.
    run_dir = hydra_folder(tmp_path / "ledger")
    fail(run_dir, {"possibly_billed.jsonl": '{"sends": 2, "usd": 0.001, "why": "timed out"}\n'})
    assert run_dir.is_dir()
    run_dir = hydra_folder(tmp_path / "summary")
    fail(run_dir, {"summary.json": '{"calls": {"possibly_billed": 2, "retries": 1}}'})
    assert run_dir.is_dir()


def test_in_a_launchers_worker_a_new_sweep_folder_is_the_sweeps_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mmjudge.store.cleanup as cleanup

    sweep = tmp_path / "sweep"
    monkeypatch.setattr(cleanup, "_BEFORE", {})  # a worker process: no note of the command's
    monkeypatch.setattr(cleanup, "_EXISTED", set())
    monkeypatch.setenv(cleanup.NEW_SWEEP_VARIABLE, str(sweep.resolve()))
    run_dir = sweep / "demo.lexical.text.default"
    run_dir.mkdir(parents=True)
    (run_dir / "sweep.log").write_text("")  # Hydra's, made before the job's code began
    fail(run_dir)
    assert not run_dir.exists()
    monkeypatch.delenv(cleanup.NEW_SWEEP_VARIABLE)  # an earlier sweep's folder: left alone
    run_dir.mkdir(parents=True)
    (run_dir / "sweep.log").write_text("")
    fail(run_dir)
    assert (run_dir / "sweep.log").is_file()


@pytest.mark.slow
def test_a_failed_start_in_a_users_folder_leaves_every_one_of_their_files(
    tmp_path: Path,
) -> None:
    (tmp_path / "x" / "withlog").mkdir(parents=True)
    (tmp_path / "x" / "withlog" / "important.log").write_text("keep\n")
    app = tmp_path / "outputs" / "2026-01-01"
    app.mkdir(parents=True)
    theirs = users_folder(app)
    (tmp_path / "link").symlink_to(app)
    for folder in ("x/withlog", "outputs/2026-01-01", "link"):
        result = run_sweep(
            tmp_path, "model=gpt4o_mini", f"hydra.run.dir={folder}", env={"OPENAI_API_KEY": ""}
        )
        assert result.returncode == 2, result.stderr
        assert "OPENAI_API_KEY" in result.stderr
    assert contents(tmp_path / "x" / "withlog") == {"important.log": b"keep\n"}
    assert contents(app) == theirs
    assert (tmp_path / "link").is_symlink()
