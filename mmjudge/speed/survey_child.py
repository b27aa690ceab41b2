"""The dataset check and a catalogue's preparation in a forked child, on the other core, while
this process loads the judge's SDK.

Before a cell's first call, two steps take most of the time: the dataset check (every line read
and validated: ~0.2 s for 10,000 short items, ~0.7 s for 10,000 scraped product pages of 1–20
KB, read before their HTML is converted:
:meth:`~mmjudge.engine.examples.ExampleStream.survey`) and importing the judge's SDK (~0.6–1 s
for ``openai``, ~1.7 s for ``anthropic``). Both are CPU-bound Python, so a thread would not
overlap them; a forked child does. Where the check reads a catalogue whose HTML is still to be
converted, a child checks it and sends back its counts while this process runs ``warm`` (the
SDK's import: see :mod:`mmjudge.speed.sdk_warmup`), then prepares the items for the calls
(:mod:`mmjudge.speed.feed`): seconds of HTML conversion off the calls' core.

Only there: a child that only checks plain text saved nothing at 64 calls in flight and cost 1.4
points of the ideal rate at 1,024 (``benchmarks/ablate.py``, ``docs/figures.md``), so elsewhere
the check runs here before the SDK is loaded. The child is also used only where it is safe: on
Linux, with no other thread running, for an items file of at least :data:`MIN_BYTES`, with the
speed machinery on (:class:`mmjudge.speed.Speed`), and when there is something to warm.
Whatever else happens to the child (a bad line, an error, a signal), the check runs here as it
always does, so a bad dataset fails with exactly the message it always had.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, NoReturn

from mmjudge.data.schema import Example
from mmjudge.data.survey import DatasetSurvey
from mmjudge.speed import Speed
from mmjudge.speed.feed import PreparedFeed, send_prepared
from mmjudge.speed.pipes import die_with_parent, read_message, write_message

#: Items files smaller than this are checked here, the check being quicker than a fork.
MIN_BYTES = 1 << 20


def survey_while(
    check: Callable[[], DatasetSurvey],
    examples: Iterable[Example],
    items_path: Path,
    warm: Callable[[], None] | None,
    feed: Callable[[PreparedFeed], None] | None,
    speed: Speed,
) -> DatasetSurvey:
    """The dataset's counts (``check()``: :meth:`~mmjudge.engine.examples.ExampleStream.survey`),
    with ``warm`` run too. With ``feed``, where that applies (see the module's docstring),
    they are taken in a forked child while ``warm`` runs here, and the child then sends
    ``examples`` prepared to the :class:`~mmjudge.speed.feed.PreparedFeed` that ``feed`` is
    given; otherwise the check runs here, then ``warm``. ``items_path`` is the dataset's items
    file, whose size says whether a child is worth its fork; ``speed`` off, none is."""
    if warm is None or feed is None or not _can_fork(items_path, speed):
        checked = check()
        if warm is not None:
            warm()
        return checked
    counts = _survey_in_child(check, examples, warm, feed)
    return counts if counts is not None else check()


def _can_fork(path: Path, speed: Speed) -> bool:
    """Whether the check runs in a child: on Linux, with the speed machinery on, with no other
    thread, for an items file (``path``) of :data:`MIN_BYTES` or more."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork") or not speed.on:
        return False
    if _other_threads():
        return False  # a child forked beside running threads can inherit their locks
    try:
        return path.is_file() and path.stat().st_size >= MIN_BYTES
    except OSError:
        return False


def _other_threads() -> bool:
    return threading.active_count() > 1


def _survey_in_child(
    check: Callable[[], DatasetSurvey],
    examples: Iterable[Example],
    warm: Callable[[], None],
    feed: Callable[[PreparedFeed], None],
) -> DatasetSurvey | None:
    """The counts from a forked child, ``warm`` run meanwhile; None when the child did not
    deliver them. The child then goes on to send the items prepared."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        die_with_parent(parent)
        _child(check, examples, read_end, write_end)
    os.close(write_end)
    pipe = os.fdopen(read_end, "rb")
    handed_on = False
    try:
        warm()
        try:
            counts = read_message(pipe)
        except Exception:
            counts = None
        if not isinstance(counts, DatasetSurvey):
            return None
        feed(PreparedFeed(pid, pipe))
        handed_on = True
        return counts
    finally:
        if not handed_on:  # done with the child (or interrupted): stop and reap it
            _stop(pid, pipe)


def _stop(pid: int, pipe: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        pipe.close()


def _child(
    check: Callable[[], DatasetSurvey],
    examples: Iterable[Example],
    read_end: int,
    write_end: int,
) -> NoReturn:
    """The forked child: check, send the counts, then the items prepared, and leave without
    running any exit handler or flushing anything inherited (the parent owns the run's files
    and output)."""
    code = 1
    try:
        os.close(read_end)
        logging.disable(logging.CRITICAL)
        warnings.simplefilter("ignore")  # the parent's own pass over the items warns
        with os.fdopen(write_end, "wb") as pipe:
            write_message(pipe, check())
            send_prepared(pipe, examples)
        code = 0
    except BaseException:  # any failure: the parent checks the dataset (and prepares) itself
        pass
    finally:
        os._exit(code)
