"""Values a loader accepted only by reading them leniently, said in one warning per file and
cell (each pass over a dataset would otherwise say it again)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

log = logging.getLogger("mmjudge.data.validation")

#: What each kind of lenient reading accepted, as the warning says it.
LENIENT_READINGS = {
    "numeric_id": "query_id or result_id given as a number (read as its text)",
    "images_path": "'images' given as one path rather than a list (read as a list of one)",
    "control": "control characters in a text field (kept as written)",
}

#: Warnings already given for the cell being run: it reads its dataset more than once.
_SAID: set[str] = set()


#: Inside :func:`unsaid`: lenient readings are not said (nor remembered as said).
_QUIET: list[bool] = []


@contextlib.contextmanager
def unsaid() -> Iterator[None]:
    """Lenient readings found inside are not said: for a check that reads a file's first
    item before the run reads it all and says them (mmjudge.api.preflight)."""
    _QUIET.append(True)
    try:
        yield
    finally:
        _QUIET.pop()


def new_cell_warnings() -> None:
    """Let each lenient reading be said again: called as a cell starts, so every run's
    messages (and its log) have the warnings about its own data."""
    _SAID.clear()


class Leniency:
    """What a loader accepted from one file only by reading it leniently, counted by kind
    (see :data:`LENIENT_READINGS`), and said in one warning line when the file has been read,
    or reading stopped early: use it as a context manager around the loop over the lines."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lines: dict[str, list[int]] = {}
        """kind -> [lines counted, first line, last line counted]."""

    def note(self, kind: str, line: int) -> None:
        """Count ``line`` once for ``kind``."""
        entry = self._lines.get(kind)
        if entry is None:
            self._lines[kind] = [1, line, line]
        elif entry[2] != line:
            entry[0] += 1
            entry[2] = line

    def message(self) -> str | None:
        """The warning line, or None when everything was read as written."""
        parts = [
            f"{count:,} line{'s' if count != 1 else ''} with {LENIENT_READINGS[kind]}, first "
            f"on line {first}"
            for kind, (count, first, _last) in self._lines.items()
        ]
        return f"{self.path}: " + "; ".join(parts) if parts else None

    def __enter__(self) -> Leniency:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if kind is not None and not issubclass(kind, GeneratorExit):
            return  # the file was refused: its error says what matters
        message = self.message()
        if message is not None:
            say_once(message)


def say_once(message: str) -> None:
    """Log a loader's warning, unless this process has given the same one already."""
    if _QUIET:
        return
    if message not in _SAID:
        _SAID.add(message)
        log.warning(message)
