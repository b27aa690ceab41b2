"""The grid's launcher over a Hydra launcher (``hydra/launcher=basic``, ``joblib``, ``ray``…):
a round's cells as one batch of the launcher's jobs, their statuses read from the summaries the
jobs wrote (mmjudge's Hydra sweeper, :mod:`hydra_plugins.mmjudge_grid.grid_sweeper`, runs the
grid's loop with it).

A stop while a batch runs: when the jobs run in this process (the basic launcher), it is
raised as usual and the job stops between calls; when they run in worker processes (joblib,
Ray), it is noted rather than raised, so the launcher does not tear its workers down while
their calls are in flight — a terminal's Ctrl-C reaches the workers too, and each stops
between calls and returns — and the loop stops after the batch. A SIGTERM sent to the sweeping
process alone reaches no worker: their batch ends as it would, and nothing more starts.

A worker must never let a Ctrl-C escape into the launcher's own code: joblib's workers exit on
a ``KeyboardInterrupt`` taken while they wait for a job, and the launcher then kills every
other worker at once, with their calls in flight (paid for, answers lost, sent again on
resume). So, from its first job on, a worker takes SIGINT between jobs without acting on it
(:func:`hold_stops_between_jobs`), a job stopped before its calls begin returns as stopped
instead of raising, and a job that starts after the sweeping process noted a stop does not
start its cell: the sweeping process marks the sweep folder (:data:`STOPPING_MARK`) for the
rest of the batch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from hydra.plugins.launcher import Launcher

from mmjudge.grid.cells import Grid
from mmjudge.grid.launch import CellJob, RoundEnd, interrupting_signal, status_of

#: Set for the jobs of a multirun to the sweeping process's id: a job that sees another id
#: runs in a launcher's worker process.
SWEEPER_PID = "MMJUDGE_SWEEPER_PID"

#: A file in the sweep folder that exists while a batch runs after the sweeping process noted
#: a stop signal: a job that starts in a worker from then on does not start its cell.
STOPPING_MARK = ".mmjudge-stopping"


class HydraJobs:
    """A round's jobs as one batch of a Hydra launcher's jobs (see the module docstring)."""

    def __init__(self, grid: Grid, launcher: Launcher) -> None:
        self.grid = grid
        self.launcher = launcher
        self.job_index = 0
        os.environ[SWEEPER_PID] = str(os.getpid())

    def launch(self, jobs: Sequence[CellJob]) -> RoundEnd:
        cells = [self.grid.cells[job.cell] for job in jobs]
        batch = [
            list(cell.job_overrides(job.items, job.ungraded_too))
            for cell, job in zip(cells, jobs, strict=True)
        ]
        mark = self.grid.folder / STOPPING_MARK
        mark.unlink(missing_ok=True)  # left by a sweeping process that was killed outright
        try:
            with _noted_stops(mark) as noted:
                self.launcher.launch(batch, initial_job_idx=self.job_index)
        finally:
            mark.unlink(missing_ok=True)
        self.job_index += len(batch)
        run_dirs = [cell.run_dir for cell in cells]
        statuses = [status_of(run_dir) for run_dir in run_dirs]
        stop = noted[0] if noted else interrupting_signal(run_dirs, statuses)
        return RoundEnd(statuses, stop)


#: Whether a job of the multirun is running in this process now (set by the command's task).
_JOB_HERE = threading.Event()


@contextlib.contextmanager
def job_running_here() -> Iterator[None]:
    """Marks the block as a job of the multirun running in this process (the command's task
    function wraps each job in it)."""
    _JOB_HERE.set()
    try:
        yield
    finally:
        _JOB_HERE.clear()


def in_worker() -> bool:
    """Whether this process is a launcher's worker, not the sweeping process."""
    sweeper = os.environ.get(SWEEPER_PID)
    return sweeper is not None and sweeper != str(os.getpid())


def stop_marked(sweep_dir: Path) -> bool:
    """Whether the sweeping process has noted a stop during the batch now running (a job in a
    worker that sees it does not start its cell)."""
    return (sweep_dir / STOPPING_MARK).exists()


def hold_stops_between_jobs() -> None:
    """In a launcher's worker, from now on: SIGINT while a job of the multirun runs here is
    Ctrl-C as usual; between jobs it is taken and left alone (the sweeping process has it
    too and stops after the batch), never raised into the launcher's code. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return

    def handle(_number: int, _frame: FrameType | None) -> None:
        if _JOB_HERE.is_set():
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handle)


@contextlib.contextmanager
def _noted_stops(mark: Path) -> Iterator[list[int]]:
    """SIGINT and SIGTERM while a batch runs: raised when a job runs in this process, else
    noted, and ``mark`` made for the jobs still to start (see :class:`HydraJobs`)."""
    from mmjudge.engine.interrupt import StopSignal

    noted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return

    def handle(number: int, _frame: FrameType | None) -> None:
        if _JOB_HERE.is_set():
            if number == signal.SIGINT:
                raise KeyboardInterrupt
            raise StopSignal(number)
        if not noted:
            with contextlib.suppress(OSError):  # without it, a job yet to start still runs
                mark.touch()
        noted.append(number)

    previous = {int(n): signal.signal(n, handle) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield noted
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
