"""The cell's event loop: uvloop's where it is installed, asyncio's own otherwise."""

from __future__ import annotations

import asyncio
import signal
import sys

import pytest

from mmjudge.speed import FAST
from mmjudge.speed.event_loop import loop_factory, run_on_fast_loop


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_the_loop_is_uvloops_when_installed() -> None:
    pytest.importorskip("uvloop")
    assert run_on_fast_loop(_loop_module(), FAST).startswith("uvloop")


def test_the_standard_loop_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # ``import uvloop`` raises ImportError
    assert loop_factory(FAST) is asyncio.new_event_loop
    assert run_on_fast_loop(_loop_module(), FAST).startswith("asyncio")


def test_the_result_comes_back_and_the_loop_is_closed_after() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def main() -> int:
        loops.append(asyncio.get_running_loop())
        return 7

    assert run_on_fast_loop(main(), FAST) == 7
    assert loops[0].is_closed()


def test_ctrl_c_cancels_the_main_task_and_reaches_the_caller() -> None:
    """As ``asyncio.run``: SIGINT cancels the coroutine (its clean-up runs) and the caller gets
    KeyboardInterrupt."""
    cleaned: list[bool] = []

    async def main() -> None:
        try:
            signal.raise_signal(signal.SIGINT)
            await asyncio.sleep(5)
        finally:
            cleaned.append(True)

    # Python's own Ctrl-C handler, as an interactive start installs it: a process started in
    # the background (``cmd &`` in a script) inherits SIGINT ignored, and then no loop reacts.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_on_fast_loop(main(), FAST)
    finally:
        signal.signal(signal.SIGINT, before)
    assert cleaned == [True]
