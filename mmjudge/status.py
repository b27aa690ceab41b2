"""How a cell ended, and the exit code a run or a sweep reports for it.

Every cell ends in one status, written to its ``summary.json`` and counted in
``sweep_summary.json``:

========================  =====  ==========================================================
status                    exit   meaning
========================  =====  ==========================================================
``complete``              0      every item was judged without an error
``skipped``               0      the judge cannot do this cell (reason in ``skip_reason``)
``dry_run``               0      forecast only, nothing was called
``partial``               3      some judgments failed (at most ``runner.max_error_rate``)
``failed``                4      more than ``runner.max_error_rate`` of the judgments failed
                                 (or all of them), or the run was stopped by an error no
                                 retry can fix (the circuit breaker, a rejected key)
``stopped_by_budget``     5      ``runner.max_cost_usd`` stopped scheduling calls
``interrupted``           130    Ctrl-C (SIGINT); 143 for SIGTERM
========================  =====  ==========================================================

Exit code 2 stays what it was: a configuration or input error found before any call.
A multirun exits with the code of its most severe cell (interrupted, failed, stopped by
budget, partial, in that order).
"""

from __future__ import annotations

import shlex
import signal
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mmjudge.interrupt import signal_name

COMPLETE = "complete"
PARTIAL = "partial"
FAILED = "failed"
INTERRUPTED = "interrupted"
STOPPED_BY_BUDGET = "stopped_by_budget"
SKIPPED = "skipped"
DRY_RUN = "dry_run"

#: Statuses whose judgments the report analyses (a partial cell's failed rows are left out
#: of its κ and counted beside it).
ANALYSED = (COMPLETE, PARTIAL)
#: Statuses that end a run with exit code 0.
SUCCESSFUL = (COMPLETE, SKIPPED, DRY_RUN)
#: Every status, in the order the console line and the report list them.
ORDER = (COMPLETE, PARTIAL, FAILED, STOPPED_BY_BUDGET, INTERRUPTED, SKIPPED, DRY_RUN)

EXIT_CONFIG = 2
EXIT_PARTIAL = 3
EXIT_FAILED = 4
EXIT_BUDGET = 5
EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM

_EXIT = {PARTIAL: EXIT_PARTIAL, FAILED: EXIT_FAILED, STOPPED_BY_BUDGET: EXIT_BUDGET}
#: Most severe first: the status whose exit code a sweep of mixed cells reports.
_SEVERITY = (INTERRUPTED, FAILED, STOPPED_BY_BUDGET, PARTIAL)


def cell_status(n_judgments: int, n_errors: int, max_error_rate: float) -> tuple[str, str]:
    """``(status, reason)`` of a cell that ran to the end, from its rows' error count."""
    if n_errors == 0:
        return COMPLETE, ""
    share = n_errors / n_judgments if n_judgments else 1.0
    counted = f"{n_errors:,} of {n_judgments:,} judgments failed ({share:.0%})"
    if n_errors >= n_judgments:
        return FAILED, f"{counted}: every judgment failed"
    if share > max_error_rate:
        return FAILED, f"{counted}, more than runner.max_error_rate={max_error_rate:g}"
    return PARTIAL, f"{counted}; run the same command again to retry them"


def exit_code(status: str, signal_number: int | None = None) -> int:
    """The process exit code for one cell's status."""
    if status == INTERRUPTED:
        return 128 + (signal_number or signal.SIGINT)
    return _EXIT.get(status, 0)


def sweep_exit_code(statuses: Iterable[str], signal_number: int | None = None) -> int:
    """The exit code of a multirun: that of its most severe cell, 0 when all are fine."""
    present = set(statuses)
    for status in _SEVERITY:
        if status in present:
            return exit_code(status, signal_number)
    return 0


def count_statuses(statuses: Iterable[str]) -> dict[str, int]:
    """Cells per status, in :data:`ORDER` (unknown statuses last), zero counts left out."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    known = {s: counts.pop(s) for s in ORDER if s in counts}
    return {**known, **dict(sorted(counts.items()))}


def status_line(counts: Mapping[str, int]) -> str:
    """``6 cells: 3 complete, 1 partial, 2 failed`` for the console and the report."""
    total = sum(counts.values())
    parts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items())
    return f"{total} cell{'s' if total != 1 else ''}: {parts}"


def resume_command(
    argv: Sequence[str], directory: str, *, multirun: bool, program: str | None = None
) -> str:
    """The command that picks a stopped run (or sweep) up where it stopped.

    The same arguments, with the run directory pinned (``hydra.run.dir``, or
    ``hydra.sweep.dir`` for a multirun) so finished rows are kept and only the rest is judged.
    """
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    kept = [a for a in argv if not a.lstrip("+~").startswith(("hydra.run.dir=", key + "="))]
    head = program or f"{_python()} -m mmjudge.sweep"
    return " ".join([head, *(shlex.quote(a) for a in kept), shlex.quote(f"{key}={directory}")])


def _python() -> str:
    """How the running interpreter is named in a printed command (relative when it can be)."""
    executable = sys.executable or "python"
    return shlex.quote(executable)


def summary_counts(summaries: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Cells per status over run summaries (a summary without a status is complete)."""
    return count_statuses(str(s.get("status") or COMPLETE) for s in summaries)


# --- what the command line prints and exits with --------------------------------------------

_exit = {"code": 0}


def _severity(code: int) -> int:
    """Rank of an exit code: the same order as :func:`sweep_exit_code`."""
    if code >= 128:
        return 4
    return {0: 0, EXIT_PARTIAL: 1, EXIT_BUDGET: 2, EXIT_FAILED: 3}.get(code, 3)


def note_exit(code: int, *, replace: bool = False) -> None:
    """Remember the exit code for the end of the process (the most severe one wins, unless
    ``replace``: a finished multirun sets the code of the whole sweep)."""
    if replace or _severity(code) > _severity(_exit["code"]):
        _exit["code"] = code


def pending_exit() -> int:
    """The exit code noted so far (0 when every cell was fine)."""
    return _exit["code"]


def status_note(summary: Mapping[str, Any]) -> str:
    """``; status partial: 2 of 16 judgments failed …`` for a cell's closing line ("" when
    complete)."""
    status = str(summary.get("status") or COMPLETE)
    if status == COMPLETE:
        return ""
    reason = summary.get("status_reason")
    if reason and reason != summary.get("stopped_because"):
        return f"; status {status}: {reason}"
    return f"; status {status}"


def interrupted_lines(summary: Mapping[str, Any], directory: str, *, multirun: bool) -> str:
    """What an interrupted cell prints: what was kept, and the command that resumes."""
    kept = summary.get("n_judgments", 0)
    total = summary.get("n_items")
    of = f" of {total}" if isinstance(total, int) else ""
    head = f"mmjudge: interrupted; {kept}{of} judgments of this cell are saved. " + (
        "The sweep stops here; resume it (finished rows are kept, answers already paid "
        "for come from the response cache) with:"
        if multirun
        else "Resume it (finished rows are kept) with:"
    )
    return f"{head}\n  {resume_command(sys.argv[1:], directory, multirun=multirun)}"


def stopped_between_calls(signal_number: int, argv: Sequence[str]) -> str:
    """The line for a stop outside the judging loop (reading data, writing the report)."""
    multirun = any(a in ("-m", "--multirun") for a in argv)
    where = "hydra.sweep.dir=<the sweep folder>" if multirun else "hydra.run.dir=<the run folder>"
    return (
        f"stopped by {signal_name(signal_number)}; nothing in flight was lost. Run the same "
        f"command again with {where} to go on where it stopped"
    )
