"""One cell's job in a process of its own (:class:`mmjudge.grid.launch.ProcessLauncher`):
``python -m mmjudge.grid.worker --parent PID --run-dir DIR [--config-dir DIR] -- OVERRIDES…``.

It composes the cell from its overrides, judges it into its run folder and exits; the launcher
reads how it ended from the folder's summary. SIGINT and SIGTERM stop it between calls (the
answers of calls in flight that arrive within ``runner.grace_s`` are kept). It watches the
process that started it: when that one is gone, the cell stops as if it had been sent SIGTERM,
so a launcher killed outright leaves no cell sending requests.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

#: How often the worker looks whether the process that started it is still there.
PARENT_POLL_S = 0.2


#: Linux's ``prctl`` option that has the kernel signal a process when its parent ends.
PR_SET_PDEATHSIG = 1
#: The signal the kernel sends when the parent ends. Not SIGTERM itself: a parent with several
#: threads ends one thread at a time and the kernel signals the child at each, where a second
#: SIGTERM would stop the cell at once and lose the answers of its calls in flight. It is
#: blocked in every thread and taken by one thread that waits for it, so no handler and no
#: event loop is involved and its repeats are swallowed.
PARENT_GONE = signal.SIGUSR2


def watch_parent(parent: int) -> None:
    """Have this process sent SIGTERM, once, when its parent ``parent`` is gone: on Linux when
    the kernel says so (``prctl(PR_SET_PDEATHSIG)``), elsewhere by a daemon thread that looks
    every :data:`PARENT_POLL_S` seconds. Call it before any other thread starts."""
    stopped = threading.Event()

    def stop() -> None:
        if not stopped.is_set():
            stopped.set()
            os.kill(os.getpid(), signal.SIGTERM)

    if _told_by_the_kernel():

        def wait() -> None:
            while True:
                signal.sigwait({PARENT_GONE})
                stop()

        threading.Thread(target=wait, name="mmjudge-parent-gone", daemon=True).start()
        if os.getppid() != parent:  # gone before the kernel was asked
            stop()
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        stop()

    threading.Thread(target=watch, name="mmjudge-parent-watch", daemon=True).start()


def _told_by_the_kernel() -> bool:
    """On Linux: block :data:`PARENT_GONE` in this thread (and so in every thread started from
    it) and ask the kernel to send it when the parent ends; whether that was done."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    signal.pthread_sigmask(signal.SIG_BLOCK, {PARENT_GONE})
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if int(libc.prctl(PR_SET_PDEATHSIG, int(PARENT_GONE), 0, 0, 0)) == 0:
            return True
    except (OSError, AttributeError):
        pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {PARENT_GONE})
    return False


def main(argv: Sequence[str]) -> int:
    from mmjudge.engine.interrupt import (
        raise_on_sigterm,
        redeliver_interrupts_lost_in_finalizers,
        signal_number_of,
    )

    parser = argparse.ArgumentParser(prog="python -m mmjudge.grid.worker")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--config-dir", default=None)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    try:
        raise_on_sigterm()
        redeliver_interrupts_lost_in_finalizers()
        watch_parent(args.parent)
        from mmjudge.config.compose import compose_raw
        from mmjudge.errors import MMJudgeError
        from mmjudge.grid.jobs import judge

        try:
            judge(compose_raw(args.overrides, args.config_dir), Path(args.run_dir))
        except MMJudgeError as error:
            print(f"mmjudge: {Path(args.run_dir).name}: {error}", file=sys.stderr)
            return 2
    except KeyboardInterrupt as error:  # a stop before the cell's calls began
        return 128 + signal_number_of(error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
