"""The line a run prints when a stop signal arrives while it is judging."""

from __future__ import annotations

import shlex
import signal
from pathlib import Path

from mmjudge.engine.interrupt import signal_name


def stop_line(
    number: int,
    *,
    batch: bool,
    grace_s: float,
    in_flight: int,
    run_dir: Path | None,
    resume_setting: str | None = None,
) -> str:
    """What was received, what happens now and how to stop at once; for SIGTERM (or another
    signal than Ctrl-C's) also how to resume, since whoever sent it (a job scheduler, ``kill``)
    may end the process before it prints its closing lines. ``resume_setting`` is the setting
    that finds the run's folder again (the command's ``hydra.run.dir=…`` or
    ``hydra.sweep.dir=…``); without one, the folder itself is named."""
    if number == signal.SIGINT:
        received, again = "Ctrl-C (SIGINT)", "press Ctrl-C again"
    else:
        name = signal_name(number)
        received, again = f"received {name}, a request to stop", f"send {name} again"
    if batch:
        what = "no new batches; submitted ones keep running at the provider"
    else:
        what = (
            f"no new calls; waiting up to {grace_s:g} s (runner.grace_s) for the {in_flight} "
            f"in flight, then saving; {again} to stop at once"
        )
    line = f"{received}: {what}"
    if number == signal.SIGINT or run_dir is None:
        return line
    if resume_setting is None:
        where = f"on the same run folder ({run_dir})"
    else:
        where = f"adding {shlex.quote(resume_setting)}"
    return f"{line}. To resume, run the same command again {where}; finished rows are kept"
