"""The monitoring history: one JSON object per line, one line per check, only ever appended.

Two processes may append at once and a process may be killed while it writes:

- each entry is written with one ``write`` on a file opened for appending, under an
  exclusive ``flock`` where the platform has one, so two entries never interleave;
- a kill mid-write can leave a partial last line; readers skip any line that is not a whole
  JSON object, and the next writer, holding the lock, ends that line first so its own entry
  starts on a line of its own.

Nothing in the file is ever rewritten, so a reader needs no lock.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

try:  # POSIX; elsewhere appends rely on the operating system's append mode alone
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: The history file under ``paths.results`` unless ``history=`` names another.
HISTORY = Path("monitor") / "history.jsonl"


@contextlib.contextmanager
def _locked(handle: int) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


def append_entry(path: Path, entry: dict[str, Any]) -> None:
    """Append one entry as one line (see the module's notes on writers and kills)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        with _locked(handle):
            size = os.fstat(handle).st_size
            if size and not _ends_a_line(path, size):
                line = b"\n" + line  # a killed writer's partial line: end it first
            os.write(handle, line)
            os.fsync(handle)
    finally:
        os.close(handle)


def _ends_a_line(path: Path, size: int) -> bool:
    with path.open("rb") as reader:
        reader.seek(size - 1)
        return reader.read(1) == b"\n"


def read_history(path: Path) -> list[dict[str, Any]]:
    """Every whole entry of the history, oldest first (none when the file does not exist);
    a partial or unreadable line is skipped."""
    if not path.is_file():
        return []
    entries = []
    with path.open("rb") as handle:
        for raw in handle:
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
    return entries
