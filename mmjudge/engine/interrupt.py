"""Ctrl-C and SIGTERM: stop scheduling, keep what arrives within the grace period, resume later.

While a cell is judging, both signals go to the runner (:func:`stop_signals`): it schedules
nothing new, writes the answers of calls in flight that arrive within ``runner.grace_s``
seconds, and the cell's summary says ``interrupted``. A second signal stops at once. Outside
the judging loop (reading the dataset, writing the report) Ctrl-C raises
``KeyboardInterrupt`` as usual, and :func:`raise_on_sigterm` makes SIGTERM — what job
schedulers such as SLURM send before they kill a job — do the same instead of ending the
process silently, so the command line can write a summary and print how to resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal(KeyboardInterrupt):
    """SIGTERM (or another stop signal) raised like Ctrl-C's ``KeyboardInterrupt``."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_name(signal_number))
        self.signal_number = signal_number


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def signal_number_of(error: BaseException) -> int:
    """The signal behind an interruption (Ctrl-C's ``KeyboardInterrupt`` is SIGINT)."""
    number = getattr(error, "signal_number", None)
    return int(number) if isinstance(number, int) else int(signal.SIGINT)


def _raise_stop(number: int, _frame: FrameType | None) -> None:
    raise StopSignal(number)


def redeliver_interrupts_lost_in_finalizers() -> None:
    """From now on, a Ctrl-C (or :class:`StopSignal`) raised while Python runs a finalizer is
    sent again rather than lost.

    A signal handler raises in whatever the main thread runs at that moment; where that is a
    finalizer (a ``__del__``, a weakref callback during garbage collection), the exception
    cannot propagate: Python prints "Exception ignored in ..." with a traceback and drops it,
    and the stop never reaches the code that would act on it. Here such an interruption is
    raised again as its signal a moment later, from another thread, so that its handler
    runs in ordinary code. Every other unraisable exception goes to the hook in place before.
    Idempotent."""
    global _hook_before
    if _hook_before is not None:
        return
    _hook_before = sys.unraisablehook
    sys.unraisablehook = _redeliver


_hook_before: Callable[[Any], object] | None = None


def _redeliver(unraisable: Any) -> None:
    error = unraisable.exc_value
    if (
        isinstance(error, KeyboardInterrupt)
        and threading.current_thread() is threading.main_thread()
    ):
        _send_soon(signal_number_of(error))
        return
    assert _hook_before is not None
    _hook_before(unraisable)


#: How long after a lost interruption it is sent again: time for the main thread to leave the
#: finalizer (its handler would run in it, were the signal sent from here at once).
REDELIVERY_DELAY_S = 0.05


def _send_soon(number: int) -> None:
    """Signal ``number`` to this process from another thread in a moment. Should it land in
    a finalizer again, it comes back to :func:`_redeliver`."""
    timer = threading.Timer(REDELIVERY_DELAY_S, signal.raise_signal, args=(number,))
    timer.daemon = True
    try:
        timer.start()
    except KeyboardInterrupt:  # another stop, while the timer was starting: keep it too
        _send_soon(number)


def raise_on_sigterm() -> None:
    """Make SIGTERM raise :class:`StopSignal` in the main thread rather than end the process."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_stop)


@contextlib.contextmanager
def stop_signals(loop: asyncio.AbstractEventLoop, on_stop: Callable[[int], None]) -> Iterator[bool]:
    """Send SIGINT and SIGTERM to ``on_stop(signal_number)`` while the block runs.

    Yields whether the handlers could be installed (only the main thread can install them;
    elsewhere, e.g. in a launcher's worker thread, the process's own handling stays). The
    handlers in place before are restored afterwards.
    """
    installed: list[tuple[int, Any]] = []
    for sig in SIGNALS:
        previous = signal.getsignal(sig)
        try:
            loop.add_signal_handler(sig, on_stop, int(sig))
        except (ValueError, RuntimeError, NotImplementedError):
            continue
        installed.append((int(sig), previous))
    try:
        yield bool(installed)
    finally:
        for number, previous in installed:
            loop.remove_signal_handler(number)
            if previous is not None:
                with contextlib.suppress(ValueError, TypeError):
                    signal.signal(number, previous)
