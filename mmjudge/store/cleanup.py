"""A run that stops before it has judged anything leaves its folder as it found it.

Hydra makes the run folder and the job's log file before mmjudge sees the config, and the run
writes its config copies (``.hydra/``) and its lock file next; a bad setting, a missing key or a
dataset error would otherwise leave those behind, and the one-line error on the console says
why the run stopped. So a run that fails before judging anything removes what it made itself,
and only that:

- what a folder held before the run began is noted then (:func:`note_existing`: from a Hydra
  callback before Hydra makes anything, or by the library as the run starts), every entry
  below it by its path, symbolic links as links (never followed);
- on a failed start, each entry the note does not list is removed: files the run wrote,
  folders it made once they are empty; an entry it lists is kept, and a config copy the run
  wrote over (another application's ``.hydra/config.yaml``, say) is put back as it was;
- nothing is removed through a symbolic link: a link is never removed or followed, and a run
  folder reached through one (``hydra.run.dir=link``) existed before the run;
- folders left empty above a removed run folder go too, up to the working directory and
  never one that existed before the run (``results/runs`` and ``results`` on a first run).

A folder is kept whole when the run judged a row in it, submitted a provider batch, or sent
any request (its summary counts the calls, or its ledger of sends that may have been billed,
:mod:`mmjudge.store.unanswered`, has an entry): the provider may bill what it was sent, and the
folder is the evidence the next run's budget counts. Never removed: the working directory,
mmjudge's own folder, a folder too large to list (:data:`LISTED_AT_MOST` entries), and in a
launcher's worker process (which sees the folder only after Hydra made it) anything that was
there when the run's own code began, unless the sweep's folder is new
(:data:`NEW_SWEEP_VARIABLE`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mmjudge.locations import PACKAGE_DIR
from mmjudge.store.batches import STATE_FILE
from mmjudge.store.rows import JUDGMENTS
from mmjudge.store.summary import read_summary
from mmjudge.store.unanswered import UNANSWERED

#: Written by mmjudge once something was judged or paid for: a folder with either is kept.
_KEEP_IF_PRESENT = (STATE_FILE,)
_KEEP_IF_NOT_EMPTY = (JUDGMENTS, UNANSWERED)

#: The most entries a note lists below one folder; a larger folder is left as it is.
LISTED_AT_MOST = 20_000
#: Config copies kept in a note, to be put back if the run wrote over them: files in a
#: ``.hydra/`` folder up to this size each, and this much in all.
COPY_AT_MOST = 1 << 20
COPIES_AT_MOST = 8 << 20
#: Where Hydra and mmjudge keep a run's config copies.
CONFIG_COPIES = ".hydra"

#: Set by the command for a multirun whose sweep folder it makes (its resolved path): a
#: launcher's worker process, which cannot see the command's notes, knows every folder in
#: it is the sweep's own.
NEW_SWEEP_VARIABLE = "MMJUDGE_NEW_SWEEP_FOLDER"


@dataclass(frozen=True)
class Before:
    """What a folder held just before a run began in or below it."""

    folder: Path
    """The folder, resolved."""
    existed: bool
    """Whether it existed (a folder that did not is the run's own making)."""
    entries: frozenset[str] | None = frozenset()
    """Every path below it then, relative to it (links as links); None when there were more
    than :data:`LISTED_AT_MOST` to list (nothing in it is removed then)."""
    copies: Mapping[str, bytes] = field(default_factory=dict)
    """The config copies in its ``.hydra/`` folders then, by relative path, as bytes."""


#: Notes by folder, and the folders that existed before a run began (never removed, nor
#: anything above them).
_BEFORE: dict[Path, Before] = {}
_EXISTED: set[Path] = set()
#: Run folders a run has started in, in this process: a later run in one takes a fresh note.
_STARTED: set[Path] = set()


def note_existing(path: Path) -> None:
    """Note what ``path`` holds now, and which folders above it exist, before a run makes
    anything there."""
    target = path.resolve()
    for folder in (target, *target.parents):
        if folder.is_dir():
            _EXISTED.add(folder)
    _BEFORE[target] = _listed(target)
    _STARTED.discard(target)


def note_sweep_folder(path: Path) -> None:
    """:func:`note_existing` for a multirun's sweep folder; when the sweep makes it, tell the
    launcher's worker processes so (:data:`NEW_SWEEP_VARIABLE`, which they inherit)."""
    note_existing(path)
    target = path.resolve()
    if target.exists():
        os.environ.pop(NEW_SWEEP_VARIABLE, None)
    else:
        os.environ[NEW_SWEEP_VARIABLE] = str(target)


def _listed(folder: Path) -> Before:
    """What ``folder`` holds now (see :class:`Before`)."""
    if not folder.is_dir():
        return Before(folder, existed=False)
    entries: set[str] = set()
    copies: dict[str, bytes] = {}
    kept = 0
    for root, dirs, files in os.walk(folder, followlinks=False):
        here = Path(root)
        for name in (*dirs, *files):
            entries.add(str((here / name).relative_to(folder)))
        if len(entries) > LISTED_AT_MOST:
            return Before(folder, existed=True, entries=None)
        if here.name != CONFIG_COPIES:
            continue
        for name in files:
            copy = here / name
            with contextlib.suppress(OSError):
                if copy.is_symlink() or not copy.is_file():
                    continue
                size = copy.stat().st_size
                if size <= COPY_AT_MOST and kept + size <= COPIES_AT_MOST:
                    copies[str(copy.relative_to(folder))] = copy.read_bytes()
                    kept += size
    return Before(folder, existed=True, entries=frozenset(entries), copies=copies)


def _covering(target: Path) -> Before | None:
    """The note that covers ``target`` (a resolved path): its own, or its nearest noted
    folder's; else, in a launcher's worker, the new sweep folder it lies in."""
    for folder in (target, *target.parents):
        note = _BEFORE.get(folder)
        if note is not None:
            return note
    sweep = os.environ.get(NEW_SWEEP_VARIABLE)
    if sweep and target.is_relative_to(sweep):
        return Before(Path(sweep), existed=False)
    return None


def _judged_anything(run_dir: Path) -> bool:
    for name in _KEEP_IF_NOT_EMPTY:
        path = run_dir / name
        if path.is_file() and path.stat().st_size > 0:
            return True
    if any((run_dir / name).exists() for name in _KEEP_IF_PRESENT):
        return True
    return _sent_anything(run_dir)


def _sent_anything(run_dir: Path) -> bool:
    """Whether the run's summary records a request that left the machine (answered, failed,
    retried, resent, given up in flight, or possibly billed without an answer): the provider
    may bill it, so the folder is evidence."""
    try:
        calls = read_summary(run_dir).calls
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False
    if calls is None:
        return False
    counts = (
        calls.api_calls,
        calls.failures,
        calls.retries,
        calls.resent,
        calls.maybe_resent,
        calls.abandoned_in_flight,
        calls.possibly_billed,
    )
    return any(n > 0 for n in counts) or calls.spent_usd > 0


@contextlib.contextmanager
def removed_unless_judged(run_dir: Path) -> Iterator[None]:
    """Remove what the run made in ``run_dir`` (the folder too, when the run made it) if the
    block fails (any exception, ``SystemExit`` included) before a row was judged or a
    request sent; see the module's notes."""
    target = run_dir.resolve()
    if target in _STARTED or _covering(target) is None:
        note_existing(target)  # the library's run, or another run in this process's folder
    _STARTED.add(target)
    try:
        yield
    except BaseException:
        if not _judged_anything(run_dir):
            remove(run_dir)
        raise


def remove(run_dir: Path) -> None:
    """Close log handlers writing into ``run_dir`` and remove what the run made there (see
    the module's notes; never the working directory or mmjudge's own folder, which a
    ``hydra.run.dir`` could name)."""
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
    note = _covering(target)
    if note is None or note.entries is None or not target.is_dir():
        return
    listed = {note.folder / entry for entry in note.entries}
    _put_back(note, target)
    _remove_made(target, listed)
    made = not (target == note.folder and note.existed) and target not in listed
    if made and target not in _EXISTED:
        with contextlib.suppress(OSError):
            target.rmdir()  # only when empty: what the run did not make stays, and it
        if not target.exists():
            _remove_empty_parents(target)


def _put_back(note: Before, target: Path) -> None:
    """Write back the config copies below ``target`` that the run wrote over."""
    for relative, data in note.copies.items():
        path = note.folder / relative
        if not path.is_relative_to(target):
            continue
        with contextlib.suppress(OSError):
            if path.is_symlink() or (path.is_file() and path.read_bytes() == data):
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def _remove_made(target: Path, listed: set[Path]) -> None:
    """Remove the entries below ``target`` that ``listed`` does not hold: files, then folders
    once empty, deepest first; never a symbolic link, never through one."""
    for root, dirs, files in os.walk(target, topdown=False, followlinks=False):
        here = Path(root)
        for name in files:
            path = here / name
            if path not in listed and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.unlink()
        for name in dirs:
            path = here / name
            if path not in listed and not path.is_symlink():
                with contextlib.suppress(OSError):
                    path.rmdir()  # only when empty


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
