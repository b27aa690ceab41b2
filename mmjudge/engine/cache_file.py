"""Whether a file can serve as the response cache, checked as it is opened, and what to say
when it cannot.

Refused in one line saying what is wrong and what to do, before any call: a folder at the path,
a folder that cannot be made, a file SQLite cannot open or write (a read-only or immutable file
or folder), a file that is not SQLite (random bytes, a bad header), a damaged one (truncated,
flipped bits: SQLite's quick check, once per process for an unchanged file) and a SQLite file
whose tables are not the cache's.

A file that another connection holds locked is not damaged. Every statement waits for a lock
through SQLite's busy handler (``sqlite3.connect(timeout=...)``, :data:`LOCK_WAIT_S`); the one
step that SQLite does not let wait — switching a new file into WAL mode while another process
reads it — is tried again until the same bound has passed. A lock still held after that is
reported as *busy*, naming the process that holds it where the system tells (Linux's
``/proc/locks``), with no advice to move the file aside.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from mmjudge.errors import CacheError

#: How long any step on the response cache waits for another connection's lock before the
#: cache is reported busy, in seconds. Several processes writing one cache hold its write lock
#: for milliseconds at a time; a lock held this long is some other program's transaction.
LOCK_WAIT_S = 30.0

#: The tables of a response cache file and the columns mmjudge reads from each.
_RESPONSES = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, response TEXT NOT NULL, created REAL NOT NULL)"
)
_COLUMNS = {
    "responses": {"key", "response", "created"},
    "claims": {"key", "host", "pid", "started", "claimed", "expires", "in_flight", "lost"},
}
#: Files (path, size, modification time) that passed SQLite's quick check in this process: a
#: sweep opens its cache several times per cell, and the check reads the whole file.
_CHECKED: set[tuple[str, int, int]] = set()

#: SQLite's primary result codes for a file another connection holds.
_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
#: SQLite's primary result codes for a file this process cannot open or write.
_UNWRITABLE = frozenset(
    {
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_IOERR,
    }
)
#: The byte of a WAL file's shared-memory index that its writer locks (SQLite's file format:
#: the index's locks start at byte 120, the write lock first).
_WAL_WRITE_LOCK = 120


def _aside(path: Path) -> str:
    """What to do with a cache file that cannot be used."""
    return (
        f"move it aside (mv {path} {path}.damaged) and run again: a new cache is started, "
        "answers it held are asked again, and judgments already in run folders are kept"
    )


def checked_connection(path: Path, lock_wait_s: float | None = None) -> sqlite3.Connection:
    """A connection to the response cache at ``path``, made if absent; a :class:`CacheError`
    in one line when the file cannot serve as one (see the module's notes). Each statement
    waits up to ``lock_wait_s`` (:data:`LOCK_WAIT_S` by default) for another connection's
    lock."""
    wait_s = LOCK_WAIT_S if lock_wait_s is None else lock_wait_s
    if path.is_dir():
        raise CacheError(
            f"paths.response_cache={path} is a folder; give the path of a file (e.g. "
            f"{path / 'responses.sqlite'})"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CacheError(
            f"paths.response_cache={path}: its folder cannot be made ({error.strerror or error}); "
            "set paths.response_cache to a file in a folder you can write to"
        ) from None
    db: sqlite3.Connection | None = None
    try:
        db = sqlite3.connect(str(path), timeout=wait_s, isolation_level=None)
        _write_ahead_log(db, wait_s)
        db.execute("PRAGMA synchronous=NORMAL")
        _check_file(db, path)
        db.execute(_RESPONSES)
        _check_tables(db, path)
    except sqlite3.DatabaseError as error:
        if db is not None:
            db.close()
        raise storage_error(path, error, wait_s) from None
    except CacheError:
        if db is not None:
            db.close()
        raise
    return db


def _write_ahead_log(db: sqlite3.Connection, wait_s: float) -> None:
    """Put the file in WAL mode (a no-op once it is). Switching a file into WAL mode needs it
    to itself for a moment, and SQLite answers busy at once instead of waiting while another
    process reads it (as several processes opening one new file do): tried again, with short
    pauses, until ``wait_s`` has passed."""
    deadline = time.monotonic() + wait_s
    pause = 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            return
        except sqlite3.OperationalError as error:
            if not is_busy(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def probe_writable(db: sqlite3.Connection) -> None:
    """Write the file and take the write back, in a transaction of its own: SQLite opens a
    file it may only read (read-only, immutable) without a word and refuses only its first
    write, so this finds such a file before anything depends on writing it. The write is the
    header's user version set to the value it holds, one page whatever the tables hold; the
    transaction is rolled back, so nothing reaches the file."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        db.execute(f"PRAGMA user_version = {version}")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")


def is_busy(error: sqlite3.Error) -> bool:
    """Whether SQLite's error says another connection holds the file (not that it is
    damaged or cannot be written)."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY
    return "locked" in str(error) or "busy" in str(error)


def storage_error(path: Path, error: sqlite3.Error, wait_s: float | None = None) -> CacheError:
    """The one line for an error SQLite gave on the cache at ``path``: busy (another
    connection held its lock longer than ``wait_s``), not writable, or damaged."""
    text = str(error)
    if is_busy(error):
        waited = LOCK_WAIT_S if wait_s is None else wait_s
        return CacheError(
            f"the response cache {path} is busy: {lock_holder(path)} still held its write lock "
            f"after {waited:g} s of waiting (the file is not damaged); let that finish and run "
            "again, or give this run a cache file of its own with paths.response_cache"
        )
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_FULL:
        return CacheError(
            f"the response cache {path} cannot grow ({text}); free space on its disk, or set "
            "paths.response_cache to a file on another disk, or runner.cache=false"
        )
    unwritable = code & 0xFF in _UNWRITABLE if isinstance(code, int) else None
    if unwritable is None:
        unwritable = "unable to open" in text or "readonly" in text or "disk I/O" in text
    if unwritable:
        return CacheError(
            f"the response cache {path} cannot be written ({text}); make the file and its "
            "folder writable, or set paths.response_cache to a file you can write to (a copy "
            "of this one keeps its answers), or runner.cache=false"
        )
    return CacheError(f"the response cache {path} is damaged ({text}); {_aside(path)}")


def lock_holder(path: Path) -> str:
    """Who holds the write lock of the SQLite file at ``path``, in words: the process named
    by Linux's ``/proc/locks`` (the writer's lock on the WAL index, or a write lock on the
    file itself), or a phrase saying it cannot be told."""
    unknown = "another connection (which one cannot be told from here)"
    try:
        locks = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return unknown
    wal_index = Path(f"{path}-shm")
    pids = _writers(locks, wal_index, _WAL_WRITE_LOCK) or _writers(locks, path, None)
    if not pids:
        return unknown
    pid = pids[0]
    if pid == os.getpid():
        return f"another connection in this process (pid {pid})"
    try:
        name = Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        name = ""
    return f"process {pid} ({name})" if name else f"process {pid}"


def _writers(locks: str, path: Path, byte: int | None) -> list[int]:
    """The pids holding a POSIX write lock on ``path`` (on ``byte`` of it, when given), read
    from the text of ``/proc/locks``: ``N: POSIX ADVISORY WRITE pid major:minor:inode start
    end``, where a waiting lock has ``->`` after its number and ``end`` may be ``EOF``."""
    try:
        stat = path.stat()
    except OSError:
        return []
    device = (os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino)
    pids: list[int] = []
    for line in locks.splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[1] != "POSIX" or fields[3] != "WRITE":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            where = (int(major, 16), int(minor, 16), int(inode))
            start, end = int(fields[6]), fields[7]
            pid = int(fields[4])
        except ValueError:
            continue
        last = None if end == "EOF" else int(end)
        if where != device or pid <= 0:
            continue
        if byte is None or (start <= byte and (last is None or byte <= last)):
            pids.append(pid)
    return pids


class OnFile(Protocol):
    """What :func:`reported` names in its line: the cache's file and how long a lock is
    waited for."""

    path: Path
    lock_wait_s: float | None


_Self = TypeVar("_Self", bound=OnFile)
_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")

#: SQLite errors that say something about mmjudge's own statements, not about the file.
_NOT_THE_FILE = (
    sqlite3.IntegrityError,
    sqlite3.ProgrammingError,
    sqlite3.DataError,
    sqlite3.NotSupportedError,
)


def reported(
    method: Callable[Concatenate[_Self, _Args], _Result],
) -> Callable[Concatenate[_Self, _Args], _Result]:
    """``method``, with an error SQLite gives on the file (busy past the wait, not writable,
    damaged) raised as the one-line :class:`CacheError` (:func:`storage_error`) that names the file
    and the fix, instead of a traceback."""

    @functools.wraps(method)
    def reporting(self: _Self, *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        try:
            return method(self, *args, **kwargs)
        except _NOT_THE_FILE:
            raise
        except sqlite3.DatabaseError as error:
            raise storage_error(self.path, error, self.lock_wait_s) from None

    return reporting


def _check_file(db: sqlite3.Connection, path: Path) -> None:
    """SQLite's quick check of every page (once per process for an unchanged file)."""
    try:
        stat = path.stat()
    except OSError:
        return
    seen = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if seen in _CHECKED:
        return
    found = db.execute("PRAGMA quick_check(1)").fetchone()
    if found is None or found[0] != "ok":
        problem = "no answer" if found is None else " ".join(str(found[0]).split())
        raise CacheError(f"the response cache {path} is damaged ({problem}); {_aside(path)}")
    _CHECKED.add(seen)


def _check_tables(db: sqlite3.Connection, path: Path) -> None:
    """Each of the cache's tables that the file has holds the columns mmjudge reads."""
    for table, wanted in _COLUMNS.items():
        columns = {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}
        missing = wanted - columns if columns else set()
        if missing:
            raise CacheError(
                f"{path} is not an mmjudge response cache (its table {table} has no column "
                f"{', '.join(sorted(missing))}); {_aside(path)}"
            )
