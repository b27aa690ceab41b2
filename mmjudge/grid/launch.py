"""Launchers: what brings a round's cells to their prefix of the items. Each takes the round's
jobs and returns how each ended, and whether a stop signal ended the round:

- :class:`InProcessLauncher`: one cell after the other in this process (the library's sweeps);
- :class:`ProcessLauncher`: each cell in a Python process of its own, at once (a race's rounds:
  the provider limits are per model, so cells of different judges never wait for each other);
- Hydra's launchers (``hydra/launcher=joblib``, ``ray``…), through mmjudge's Hydra sweeper
  (:mod:`mmjudge.grid.hydra_sweeper`);
- a replay of known grades, for the race's simulation (:mod:`mmjudge.grid.simulation`).

**Stopping.** A stop (Ctrl-C, SIGTERM) is handled here once for every way of running. Cells in
this process stop between calls as a single run does (the runner keeps the answers that arrive
within ``runner.grace_s``). Processes of their own are started in sessions of their own, so a
terminal's Ctrl-C reaches the launcher alone, which hands each cell SIGTERM once (a second
signal, once more: the cells then stop at once), waits for them, and kills any still running
``runner.grace_s`` + :data:`KILL_AFTER_S` seconds later. Each such process watches its parent
and stops as if signalled when the parent is gone (killed with SIGKILL, say), so no cell goes
on sending requests for a race that no longer exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple, Protocol

from mmjudge.grid.cells import Grid
from mmjudge.store.status import INTERRUPTED

#: Seconds past a cell's own grace period after which a cell that has not stopped is killed.
KILL_AFTER_S = 10.0
#: How often a launcher looks at its cells' processes.
POLL_S = 0.05


class CellJob(NamedTuple):
    """One cell brought to its first ``items`` items in the race's order (every item: None)."""

    cell: int
    """The cell's index in the grid."""
    items: int | None
    """How many items of the race's order it judges by the end of the job; None: all."""
    ungraded_too: bool = False
    """Whether the race's order runs over every item, not only those a person graded (a race
    that asks for people's grades as it goes)."""


class RoundEnd(NamedTuple):
    """How a round's jobs ended."""

    statuses: list[str]
    """Each job's status (:mod:`mmjudge.store.status`), in the jobs' order; ``""`` for a job
    that left no summary (not started because of a stop, or one whose process failed)."""
    stop_signal: int | None
    """The stop signal that ended the round early; None when nothing stopped it."""


class Launcher(Protocol):
    """Brings each job's cell to its prefix; says how each ended."""

    def launch(self, jobs: Sequence[CellJob]) -> RoundEnd:
        """Run the jobs; how each ended, and the stop signal that ended the round, if any."""
        ...


def status_of(run_dir: Path) -> str:
    """The status a cell's folder records (``""`` when it holds no summary)."""
    from mmjudge.store.summary import read_summary

    if not (run_dir / "summary.json").is_file():
        return ""
    return read_summary(run_dir).status.status


def interrupting_signal(run_dirs: Sequence[Path], statuses: Sequence[str]) -> int | None:
    """The signal that interrupted a cell of the round, from its summary's exit code (SIGINT
    when it does not say); None when no cell was interrupted."""
    from mmjudge.store.summary import read_summary

    for run_dir, status in zip(run_dirs, statuses, strict=True):
        if status == INTERRUPTED:
            code = read_summary(run_dir).status.exit_code
            return code - 128 if code > 128 else int(signal.SIGINT)
    return None


# --------------------------------------------------------------------------- in this process


class InProcessLauncher:
    """Runs the grid's jobs one after the other in this process; a stop ends the round there."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid

    def launch(self, jobs: Sequence[CellJob]) -> RoundEnd:
        from mmjudge.engine.interrupt import signal_number_of
        from mmjudge.grid.jobs import judge, with_items

        statuses = [""] * len(jobs)
        for position, job in enumerate(jobs):
            cell = self.grid.cells[job.cell]
            try:
                summary = judge(with_items(cell.config, job.items, job.ungraded_too), cell.run_dir)
            except KeyboardInterrupt as error:  # outside the judging loop (reading the data)
                return RoundEnd(statuses, signal_number_of(error))
            statuses[position] = summary.status.status
            if summary.status.status == INTERRUPTED:
                code = summary.status.exit_code
                return RoundEnd(statuses, code - 128 if code > 128 else int(signal.SIGINT))
        return RoundEnd(statuses, None)


# --------------------------------------------------------------------------- processes


class _Stops:
    """The stop signals this process receives while a round's processes run: noted and handed
    to every running cell, instead of raised here. Installed only in the main thread (the only
    one that can receive them); elsewhere the process's own handling stays."""

    def __init__(self) -> None:
        self.signals: list[int] = []
        self.previous: dict[int, Any] = {}

    def handle(self, number: int, _frame: FrameType | None) -> None:
        self.signals.append(number)

    @property
    def first(self) -> int | None:
        return self.signals[0] if self.signals else None

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Stops]:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self.previous[int(number)] = signal.signal(number, self.handle)
        try:
            yield self
        finally:
            for code, handler in self.previous.items():
                signal.signal(code, handler)


class _Running(NamedTuple):
    position: int
    process: subprocess.Popen[bytes]


class ProcessLauncher:
    """Runs each of the grid's jobs in a Python process of its own (:mod:`mmjudge.grid.worker`),
    at most ``workers`` at once (default: every job), each started in a session of its own."""

    def __init__(
        self,
        grid: Grid,
        config_dir: str | Path | None = None,
        workers: int | None = None,
        grace_s: float = 5.0,
    ) -> None:
        self.grid = grid
        self.config_dir = None if config_dir is None else str(config_dir)
        self.workers = workers
        self.grace_s = grace_s

    def command(self, job: CellJob) -> list[str]:
        """The worker's command line for ``job``."""
        cell = self.grid.cells[job.cell]
        head = [sys.executable, "-m", "mmjudge.grid.worker", "--parent", str(os.getpid())]
        head += ["--run-dir", str(cell.run_dir)]
        if self.config_dir is not None:
            head += ["--config-dir", self.config_dir]
        return [*head, "--", *cell.job_overrides(job.items, job.ungraded_too)]

    def launch(self, jobs: Sequence[CellJob]) -> RoundEnd:
        size = max(1, min(len(jobs), self.workers or len(jobs)))
        waiting = list(range(len(jobs)))
        running: list[_Running] = []
        handed = 0  # stop signals handed to the cells so far
        kill_at: float | None = None
        with _Stops().installed() as stops:
            while waiting or running:
                while waiting and len(running) < size and stops.first is None:
                    position = waiting.pop(0)
                    running.append(_Running(position, self._start(jobs[position])))
                if stops.first is not None:
                    waiting.clear()  # nothing new starts after a stop
                while handed < len(stops.signals):
                    # SIGTERM whatever the signal: a cell still starting up ends quietly on it
                    # (a SIGINT there would print a traceback), a judging one stops between
                    # calls as on a Ctrl-C.
                    for cell in running:
                        _signal(cell.process, signal.SIGTERM)
                    handed += 1
                    kill_at = kill_at or time.monotonic() + self.grace_s + KILL_AFTER_S
                if kill_at is not None and time.monotonic() > kill_at:
                    for cell in running:
                        _signal(cell.process, signal.SIGKILL)
                running = [cell for cell in running if cell.process.poll() is None]
                if running:
                    time.sleep(POLL_S)
        run_dirs = [self.grid.cells[job.cell].run_dir for job in jobs]
        statuses = [status_of(run_dir) for run_dir in run_dirs]
        stop = stops.first
        if stop is None:
            stop = interrupting_signal(run_dirs, statuses)
        return RoundEnd(statuses, stop)

    def _start(self, job: CellJob) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.command(job),
            stdin=subprocess.DEVNULL,
            # Out of the terminal's process group: a Ctrl-C reaches the launcher alone, which
            # hands it on once (two signals would stop a cell at once, losing its calls in
            # flight).
            start_new_session=True,
        )


def _signal(process: subprocess.Popen[bytes], number: int) -> None:
    with contextlib.suppress(ProcessLookupError, OSError):
        if process.poll() is None:
            process.send_signal(number)
