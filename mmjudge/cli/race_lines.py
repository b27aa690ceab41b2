"""What ``mmjudge race`` prints as it goes, whichever way its rounds run (its own launcher, or
a Hydra launcher through mmjudge's sweeper): each round's line, and when a stop signal ends the
race, the command that takes it up — the command as it was typed, pasteable into a shell."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence

from mmjudge.api.race_result import RaceResult, opening_lines, round_line
from mmjudge.store.labelling_file import GRADE_COLUMN
from mmjudge.studies.race_records import RoundDecision

PROG = "mmjudge race"
#: The race's own arguments, as given (a race through a Hydra launcher runs under the sweep
#: command's, which must not reach the line that takes the race up).
GIVEN: list[str] = []


def print_round(result: RaceResult, decision: RoundDecision) -> None:
    """The console's line for a round (before the first, what the race says as it opens)."""
    if decision.round == 1:
        for line in opening_lines(result):
            print(line, file=sys.stderr)
    print(round_line(result, decision), file=sys.stderr, flush=True)


def program() -> list[str]:
    """How this command was started, as a shell would run it again: ``python -m mmjudge race``
    (the interpreter's path) or the ``mmjudge`` script's path, then ``race``."""
    first = sys.argv[0] if sys.argv else ""
    if not first or first.endswith(("__main__.py", "-c")) or not os.path.isfile(first):
        return [sys.executable or "python", "-m", "mmjudge", "race"]
    return [first, "race"]


def resume_line(result: RaceResult, argv: Sequence[str]) -> str:
    """The command that takes a stopped race up, pasteable into a shell as printed: the same
    arguments with the sweep folder pinned (``hydra.sweep.dir``)."""
    kept = [a for a in argv if not a.lstrip("+~").startswith("hydra.sweep.dir=")]
    return shlex.join([*program(), *kept, f"hydra.sweep.dir={result.folder}"])


def stopped_lines(result: RaceResult) -> str:
    """What a stopped race prints: what was kept and the command that takes it up."""
    from mmjudge.engine.interrupt import signal_name

    by = signal_name(result.stop_signal) if result.stop_signal is not None else "a stop"
    return (
        f"{PROG}: stopped by {by} after {len(result.rounds)} decided rounds; the judgments made "
        f"are kept. Take the race up where it stopped with:\n  {resume_line(result, GIVEN)}"
    )


def waiting_lines(result: RaceResult) -> str:
    """What a race that stopped for people's grades prints: how many, where to write them, and
    the command that takes it up."""
    request = result.waiting
    assert request is not None
    given = request.asked - request.missing
    so_far = f" ({given:,} given so far)" if given else ""
    return (
        f"{PROG}: round {request.round} needs people's grades for {request.missing:,} of the "
        f"{request.asked:,} items it asked for{so_far}. Fill the '{GRADE_COLUMN}' column of\n"
        f"  {request.paths.csv}\n(or the '{GRADE_COLUMN}' field of {request.paths.jsonl.name} "
        "beside it; rows left blank are asked for again), then take the race up with:\n"
        f"  {resume_line(result, GIVEN)}"
    )
