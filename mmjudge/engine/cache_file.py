"""Whether a file can serve as the response cache, checked as it is opened.

Refused in one line saying what is wrong and what to do, before any call: a folder at the path,
a folder that cannot be made, a file SQLite cannot open or write, a file that is not SQLite
(random bytes, a bad header), a damaged one (truncated, flipped bits: SQLite's quick check,
once per process for an unchanged file) and a SQLite file whose tables are not the cache's.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mmjudge.errors import CacheError

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


def _aside(path: Path) -> str:
    """What to do with a cache file that cannot be used."""
    return (
        f"move it aside (mv {path} {path}.damaged) and run again: a new cache is started, "
        "answers it held are asked again, and judgments already in run folders are kept"
    )


def checked_connection(path: Path) -> sqlite3.Connection:
    """A connection to the response cache at ``path``, made if absent; a :class:`CacheError`
    in one line when the file cannot serve as one (see the module's notes)."""
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
        db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        _check_file(db, path)
        db.execute(_RESPONSES)
        _check_tables(db, path)
    except sqlite3.DatabaseError as error:
        if db is not None:
            db.close()
        raise CacheError(_unusable(path, error)) from None
    except CacheError:
        if db is not None:
            db.close()
        raise
    return db


def _unusable(path: Path, error: sqlite3.DatabaseError) -> str:
    """The line for a file SQLite refuses: one it cannot open or write, or a damaged one."""
    text = str(error)
    if "unable to open" in text or "readonly" in text or "disk I/O" in text:
        return (
            f"paths.response_cache={path} cannot be opened for writing ({text}); set "
            "paths.response_cache to a file you can write to, or runner.cache=false"
        )
    return f"the response cache {path} is damaged ({text}); {_aside(path)}"


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
