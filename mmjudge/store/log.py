"""A run's messages: what the console shows for a run is kept in its ``sweep.log`` too.

Hydra gives each run folder a log file (``<run>/sweep.log``, its job's file handler on the
root logger), but mmjudge's console lines (how many calls go out at once, a stop on Ctrl-C,
the breaker's or a rate limit's stop line, a skipped cell's reason, the closing line, the
report's path) are printed, not logged, so the file stayed empty. :func:`say` prints a line
as before and writes the same line into the log files of that run folder only, through their
handlers directly: the console handler never sees it, so nothing is printed twice, and a log
file of the user's own elsewhere is left alone. Lines are redacted, on the console and in the
file, as every record is (:func:`mmjudge.keyguard.redact_text`). Python warnings shown while
a run works are kept the same way (:func:`keeping_warnings`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from mmjudge.keyguard import redact_text

#: The logger name the kept lines carry in the log file.
CONSOLE = "mmjudge.console"


def say(line: str, run_dir: Path | None, *, stream: TextIO | None = None, level: int = 0) -> None:
    """Print ``line`` on ``stream`` (stderr by default), and keep it in ``run_dir``'s log
    (``level``: the record's level, INFO unless given); redacted in both places. An empty
    ``line`` is nothing to say (a notice said once already)."""
    if not line:
        return
    text = redact_text(line)
    print(text, file=stream if stream is not None else sys.stderr, flush=True)
    keep(text, run_dir, level=level or logging.INFO)


def keep(line: str, run_dir: Path | None, *, level: int = logging.INFO) -> None:
    """Write ``line``, redacted, into the log files the root logger keeps in ``run_dir``."""
    handlers = _log_files_in(run_dir)
    if not handlers:
        return
    text = redact_text(line.strip("\n"))
    record = logging.getLogger(CONSOLE).makeRecord(
        CONSOLE, level, __file__, 0, text, (), None, func="say"
    )
    for handler in handlers:
        if record.levelno >= handler.level:
            handler.handle(record)


def _log_files_in(run_dir: Path | None) -> list[logging.FileHandler]:
    if run_dir is None:
        return []
    try:
        target = Path(run_dir).resolve()
    except OSError:
        return []
    found = []
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and Path(
            handler.baseFilename
        ).resolve().is_relative_to(target):
            found.append(handler)
    return found


@contextlib.contextmanager
def keeping_warnings(run_dir: Path) -> Iterator[None]:
    """While the block runs, Python warnings are shown as always and kept in ``run_dir``'s
    log too (through :func:`warnings.showwarning`, the documented hook)."""
    shown = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        shown(message, category, filename, lineno, file, line)
        keep(f"{category.__name__}: {message}", run_dir, level=logging.WARNING)

    warnings.showwarning = show
    try:
        yield
    finally:
        if warnings.showwarning is show:
            warnings.showwarning = shown
