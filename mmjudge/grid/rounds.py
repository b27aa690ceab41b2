"""The one loop that runs a grid's cells: round after round, a schedule names the jobs (which
cells, up to which prefix of the items), a launcher runs them, and the schedule takes what came
of them. A sweep is one round of every cell at every item (:class:`SweepRound`); a race
(:class:`mmjudge.grid.race.RaceRounds`) judges rounds until its rule decides; its simulation
runs the same loop over grades known in advance.

A stop signal ends the loop after the round in flight has stopped (the launcher keeps what its
cells judged); the loop says which signal, and the caller prints how to take the work up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mmjudge.grid.cells import Grid
from mmjudge.grid.launch import CellJob, Launcher, RoundEnd


class Schedule(Protocol):
    """Names each round's jobs and takes what came of them."""

    def next_round(self) -> Sequence[CellJob] | None:
        """The next round's jobs; None when there is no round left."""
        ...

    def after_round(self, end: RoundEnd) -> None:
        """Take what the round's jobs left (decide, record)."""
        ...


def run_rounds(schedule: Schedule, launcher: Launcher) -> int | None:
    """Run rounds until ``schedule`` has none left. Returns the stop signal that ended the
    loop early (SIGINT, SIGTERM), or None when the schedule ran out."""
    from mmjudge.engine.interrupt import signal_number_of

    try:
        while (jobs := schedule.next_round()) is not None:
            end = launcher.launch(jobs) if jobs else RoundEnd([], None)
            if end.stop_signal is not None:
                return end.stop_signal
            schedule.after_round(end)
    except KeyboardInterrupt as error:  # between rounds: what was decided is kept
        return signal_number_of(error)
    return None


class SweepRound:
    """A sweep's one round: every cell of the grid at every item."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.statuses: list[str] | None = None

    def next_round(self) -> Sequence[CellJob] | None:
        if self.statuses is not None:
            return None
        return [CellJob(cell.index, None) for cell in self.grid.cells]

    def after_round(self, end: RoundEnd) -> None:
        self.statuses = end.statuses
