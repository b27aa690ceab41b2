"""The event loop a cell's calls run on: uvloop's where it is installed, the standard one otherwise.

uvloop (libuv under asyncio's interface) spends less CPU per socket read and write and per
callback than the standard loop; with hundreds of connections in flight that is a visible part of
the harness's CPU per judgment. It is a dependency on Linux and macOS only (it does not build on
Windows), so the standard loop stays the fallback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the cell's loop: ``uvloop.new_event_loop`` when importable, else the stdlib's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def run_on_fast_loop(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop :func:`loop_factory` picks (same clean-up and Ctrl-C)."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
