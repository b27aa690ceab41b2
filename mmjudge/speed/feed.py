"""Prepared items sent from the dataset-check child to the calls' pass, in file order.

Where the check read a catalogue before preparing it (:meth:`ExampleStream.survey
<mmjudge.engine.examples.ExampleStream.survey>`), the child that ran it goes on to prepare every
item (HTML to text, the token cut), writing the prepared-items cache as it goes, and sends the
items here in chunks. The calls' pass takes them from the pipe, so this process only unpickles
them: preparing a scraped page takes about 1 ms of CPU, and done between the calls on the event
loop it held the steady rate of 64 calls × 0.2 s at about 80% of the ideal on 2 cores
(``docs/figures.md``). The child keeps ahead of the calls (it prepares over a thousand items a
second) and waits when the pipe is full.

A child that fails or is stopped ends the feed early; the pass then prepares the items it did
not receive itself (:attr:`PreparedFeed.received` says how many it did).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Iterator
from typing import IO

from mmjudge.data.schema import Example
from mmjudge.speed.pipes import read_message, write_message

#: Items sent in one message.
CHUNK = 32

#: Seconds a child is given to leave once its pipe is closed, before it is killed.
LEAVE_S = 1.0


def send_prepared(pipe: IO[bytes], examples: Iterable[Example]) -> None:
    """In the child: ``examples`` in chunks of :data:`CHUNK`, then ``None`` once the pass is
    whole (its cache entry written). A write that fails (the parent closed the pipe) closes
    the pass first, so an unfinished cache entry is removed before the child leaves."""
    items = iter(examples)
    try:
        chunk: list[Example] = []
        for example in items:
            chunk.append(example)
            if len(chunk) == CHUNK:
                write_message(pipe, chunk)
                chunk = []
        if chunk:
            write_message(pipe, chunk)
        write_message(pipe, None)
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()


class PreparedFeed:
    """The prepared items a forked child ``pid`` sends through ``pipe``."""

    def __init__(self, pid: int, pipe: IO[bytes]) -> None:
        self.pid = pid
        self.pipe = pipe
        self.received = 0
        """Items handed on so far."""
        self.complete = False
        """Whether the child sent the whole pass."""
        self._closed = False

    def items(self) -> Iterator[Example]:
        """The items as they arrive; ends early (``complete`` False) where the child failed.
        The child is stopped and reaped when this ends, however it ends."""
        try:
            while True:
                try:
                    chunk = read_message(self.pipe)
                except Exception:  # the child failed or was stopped: the pass goes on here
                    return
                if chunk is None:
                    self.complete = True
                    return
                for example in chunk:
                    self.received += 1
                    yield example
        finally:
            self.close()

    def close(self) -> None:
        """Close the pipe (a child still sending fails its next write, removes its unfinished
        cache entry and leaves) and reap the child, killing it if it has not left within
        :data:`LEAVE_S`."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            self.pipe.close()
        deadline = time.monotonic() + LEAVE_S
        with contextlib.suppress(OSError):
            while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                    return
                time.sleep(0.005)
