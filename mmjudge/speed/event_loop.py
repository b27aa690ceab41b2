"""The event loop a cell's calls run on: uvloop's where it is installed, the standard one otherwise.

uvloop (libuv under asyncio's interface) spends less CPU per socket read and write and per
callback than the standard loop; with hundreds of connections in flight that is a visible part of
the harness's CPU per judgment. It is a dependency on Linux and macOS only (it does not build on
Windows), so the standard loop stays the fallback.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from mmjudge.speed import Speed

T = TypeVar("T")


def loop_factory(speed: Speed) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the cell's loop: ``uvloop.new_event_loop`` when importable and ``speed`` is
    on, else the stdlib's."""
    if not speed.on:
        return asyncio.new_event_loop
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def run_on_fast_loop(main: Coroutine[Any, Any, T], speed: Speed) -> T:
    """``asyncio.run(main)`` on the loop :func:`loop_factory` picks (same clean-up and Ctrl-C)."""
    with asyncio.Runner(loop_factory=loop_factory(speed)) as runner:
        return runner.run(main)


#: The longest a stretch of work may keep the loop to itself before :class:`TurnPacer` lets it
#: turn (seconds).
TURN_EVERY_S = 0.002


class TurnPacer:
    """Lets the loop turn now and then during a long run of work that never waits.

    The runner takes items without waiting when they are ready: filling a thousand free slots
    in one turn of the loop, the first call left only after the last slot's item was built
    (~0.3 s of text items, ~1 s of image items), and a long run of answers found in the cache
    held up the calls in flight, their answers and a stop meanwhile. Turning after every item
    instead pays a pass of the loop (its timers and its poll for I/O) per item. A turn every
    :data:`TURN_EVERY_S` keeps both small.
    """

    def __init__(self, speed: Speed, every_s: float = TURN_EVERY_S) -> None:
        self.every_s = every_s if speed.on else math.inf  # off: the loop turns only to wait
        self._since = time.monotonic()

    async def turn_if_due(self) -> None:
        """Give the loop a turn when :attr:`every_s` has passed since the last one."""
        if time.monotonic() - self._since >= self.every_s:
            await asyncio.sleep(0)
            self._since = time.monotonic()
