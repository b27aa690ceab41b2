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


def watch_parent(parent: int) -> None:
    """Send this process SIGTERM once its parent ``parent`` is gone (a daemon thread)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="mmjudge-parent-watch", daemon=True).start()


def main(argv: Sequence[str]) -> int:
    from mmjudge.engine.interrupt import raise_on_sigterm, signal_number_of

    parser = argparse.ArgumentParser(prog="python -m mmjudge.grid.worker")
    parser.add_argument("--parent", type=int, required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--config-dir", default=None)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    try:
        raise_on_sigterm()
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
