"""A run that stops before it has judged anything leaves no run folder behind.

Hydra creates the run folder, with its config copies (``.hydra/``) and the job's log file,
before mmjudge sees the config, so a bad setting, a missing price or a dataset error would
otherwise leave a folder with nothing in it worth keeping; the one-line error on the console
says why the run stopped. A folder that held anything else when the run started (a run being
resumed with ``hydra.run.dir=…``) is never removed, nor one in which the run wrote a judged
row, submitted a provider batch, or sent a request that was never answered (a run stopped by
a signal while calls were in flight keeps its summary, which counts them). Folders left empty
above a removed run, below the working directory (``results/runs`` and ``results`` on a first
run), go too, unless they were there before the run: only what the run made is removed.
Hydra makes the run folder (and any missing folder above it) before mmjudge sees the config,
so the command notes which folders already exist when Hydra starts the run
(:func:`note_existing`, from a Hydra callback); the library notes them itself as the run
starts.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

from mmjudge.locations import PACKAGE_DIR
from mmjudge.store.batches import STATE_FILE
from mmjudge.store.lock import LOCK_FILE
from mmjudge.store.rows import JUDGMENTS
from mmjudge.store.summary import read_summary

#: Written by mmjudge once something was judged or paid for: a folder with either is kept.
_KEEP_IF_PRESENT = (STATE_FILE,)
_RECORDS = JUDGMENTS

#: Folders that existed before the run began: never removed, nor anything above them.
_EXISTED: set[Path] = set()


def note_existing(path: Path) -> None:
    """Remember ``path`` and every folder above it that exists now, before a run makes any."""
    target = path.resolve()
    for folder in (target, *target.parents):
        if folder.is_dir():
            _EXISTED.add(folder)


def _beyond_hydra(run_dir: Path) -> list[Path]:
    """Entries of ``run_dir`` other than Hydra's own (``.hydra/`` and the job's ``*.log``)
    and the run's lock file."""
    if not run_dir.is_dir():
        return []
    return [
        entry
        for entry in run_dir.iterdir()
        if entry.name not in (".hydra", LOCK_FILE)
        and not (entry.is_file() and entry.suffix == ".log")
    ]


def _judged_anything(run_dir: Path) -> bool:
    records = run_dir / _RECORDS
    if records.is_file() and records.stat().st_size > 0:
        return True
    if any((run_dir / name).exists() for name in _KEEP_IF_PRESENT):
        return True
    return _sent_anything(run_dir)


def _sent_anything(run_dir: Path) -> bool:
    """Whether the run's summary records a request that left the machine (answered, failed or
    abandoned in flight by a stop): the provider may bill it, so the folder is evidence."""
    try:
        calls = read_summary(run_dir).calls
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False
    if calls is None:
        return False
    return any(n > 0 for n in (calls.api_calls, calls.failures, calls.abandoned_in_flight))


@contextlib.contextmanager
def removed_unless_judged(run_dir: Path) -> Iterator[None]:
    """Remove ``run_dir`` if the block fails (any exception, ``SystemExit`` included) before a
    row was judged, provided the folder held nothing but Hydra's files when it started."""
    fresh = not _beyond_hydra(run_dir)
    if not run_dir.exists():
        note_existing(run_dir)  # the run makes it: the folders above it are the user's
    try:
        yield
    except BaseException:
        if fresh and not _judged_anything(run_dir):
            remove(run_dir)
        raise


def remove(run_dir: Path) -> None:
    """Close log handlers writing into ``run_dir`` and delete it (never the working directory
    or mmjudge's own folder, which a ``hydra.run.dir`` could name)."""
    target = run_dir.resolve()
    for protected in (Path.cwd().resolve(), PACKAGE_DIR):
        if target == protected or target in protected.parents:
            return
    root = logging.getLogger()
    for handler in list(root.handlers):
        filename = getattr(handler, "baseFilename", None)
        if filename and Path(filename).resolve().is_relative_to(target):
            root.removeHandler(handler)
            handler.close()
    if target in _EXISTED:
        # The folder was there before the run (empty, or it would not be removed): only what
        # the run wrote in it goes.
        for entry in list(target.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        return
    shutil.rmtree(target, ignore_errors=True)
    _remove_empty_parents(target)


def _remove_empty_parents(removed: Path) -> None:
    """The folders above ``removed`` that it leaves empty, up to (not including) the working
    directory or a folder that existed before the run; none when it lies outside the working
    directory."""
    cwd = Path.cwd().resolve()
    for parent in removed.parents:
        if parent == cwd or cwd not in parent.parents or parent in _EXISTED:
            return
        try:
            parent.rmdir()  # only an empty folder
        except OSError:
            return
