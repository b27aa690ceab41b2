"""A single run's report, built by a child forked when the run starts.

The report's libraries (matplotlib, altair, pandas and the report's own modules) take about
0.6 s to import, after the run's last row and its summary. A rerun from the response cache is
busy on one core from start to end, so no thread can hide that import; a child forked as the
run starts imports them on the other core instead, at a low priority so it never slows the
calls, and then waits until the run asks for its report. What it builds is exactly what the
report's builder builds here: the same function (handed over by the command, which loads it
with ``load``), given the same arguments, its error (an :class:`~mmjudge.errors.MMJudgeError`)
raised here as it would be.

Where the child cannot be used (not Linux, other threads running, the speed machinery switched
off, the child gone or failed) the report is built here, as without it. Importing this module
imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, NoReturn

from mmjudge.errors import MMJudgeError
from mmjudge.speed import Speed
from mmjudge.speed.pipes import die_with_parent, read_message, write_message

#: How much lower the child's scheduling priority is than the run's (``os.nice``): on two
#: busy cores it takes about a tenth of one, so it imports only in the time the run leaves.
NICENESS = 10


#: What the child is given: a function that imports the report's builder and returns it.
BuilderLoader = Callable[[], Callable[..., Path]]


class ReportChild:
    """A forked child that has imported the report and builds it when asked."""

    def __init__(
        self, pid: int, load: BuilderLoader, requests: IO[bytes], answers: IO[bytes]
    ) -> None:
        self.pid = pid
        self._load = load
        self._requests = requests
        self._answers = answers
        self._done = False

    @classmethod
    def start(cls, load: BuilderLoader, speed: Speed) -> ReportChild | None:
        """Fork the child, which imports the builder with ``load``; None where it cannot be
        used (see the module's docstring) or ``speed`` is off."""
        if not sys.platform.startswith("linux") or not speed.on:
            return None
        if threading.active_count() > 1:
            return None  # a child forked beside running threads can inherit their locks
        sys.stdout.flush()  # nothing written so far is written again by the child
        sys.stderr.flush()
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(request_write)
            os.close(answer_read)
            _child(parent, load, os.fdopen(request_read, "rb"), os.fdopen(answer_write, "wb"))
        os.close(request_read)
        os.close(answer_write)
        return cls(pid, load, os.fdopen(request_write, "wb"), os.fdopen(answer_read, "rb"))

    def build(self, *args: Any, **kwargs: Any) -> Path:
        """The report's builder with these arguments, in the child where it can, else here."""
        try:
            write_message(self._requests, (args, kwargs))
            outcome, value = read_message(self._answers)
        except (OSError, EOFError):  # the child is gone: build it here
            outcome, value = "gone", None
        self.close()
        if outcome == "built":
            return Path(value)
        if outcome == "raised":
            raise value
        return self._load()(*args, **kwargs)

    def close(self) -> None:
        """Stop the child (if it still runs) and reap it."""
        if self._done:
            return
        self._done = True
        with contextlib.suppress(OSError):
            self._requests.close()
        with contextlib.suppress(OSError):
            self._answers.close()
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def _child(parent: int, load: BuilderLoader, requests: IO[bytes], answers: IO[bytes]) -> NoReturn:
    """Import the report, build it when asked, send back its folder or its error, and leave
    without running any exit handler (the parent owns the run's files and output)."""
    code = 1
    try:
        die_with_parent(parent)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle
        os.nice(NICENESS)
        build_report = load()
        args, kwargs = read_message(requests)
        try:
            answer: tuple[str, Any] = ("built", str(build_report(*args, **kwargs)))
        except MMJudgeError as error:
            answer = ("raised", error)
        write_message(answers, answer)
        code = 0
    except BaseException:  # anything else: the parent builds the report itself
        pass
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
