"""How a cell ended, and the exit code a run or a sweep reports for it.

Every cell ends in one status, written to its ``summary.json`` and counted in
``sweep_summary.json``:

========================  =====  ==========================================================
status                    exit   meaning
========================  =====  ==========================================================
``complete``              0      every item was judged without an error; answers that hold no
                                 grade, up to ``runner.max_unparseable_rate`` of the answers,
                                 are counted in the closing line and leave it complete
``skipped``               0      the judge cannot do this cell (reason in ``skip_reason``)
``dry_run``               0      forecast only, nothing was called
``partial``               3      some judgments failed (at most ``runner.max_error_rate``), or
                                 more than ``runner.max_unparseable_rate`` of the answers could
                                 not be read as a grade; the reason says whether running again
                                 can retry the failures (not for items a replayed file has no
                                 grade for: it names those, how many and the first few)
``failed``                4      more than ``runner.max_error_rate`` of the judgments failed
                                 (or all of them), no answer could be read as a grade,
                                 or the run was stopped by an error no retry can fix (the
                                 circuit breaker, a rejected key, a rate limit that lasted
                                 ``runner.rate_limit_wait_s``)
``stopped_by_budget``     5      ``runner.max_cost_usd`` stopped scheduling calls
``interrupted``           130    Ctrl-C (SIGINT); 143 for SIGTERM
========================  =====  ==========================================================

Exit code 2 stays what it was: a configuration or input error found before any call.
A multirun exits with the code of its most severe cell (interrupted, failed, stopped by
budget, partial, in that order).
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from mmjudge.errors import (
    BudgetExceeded,
    ConfigError,
    CredentialError,
    DatasetError,
    Interrupted,
    UngradableItem,
)
from mmjudge.store.blocks import CellStatus

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
#: A race that asks for people's grades (``race.labels=ask``) stopped for them: a round's
#: labelling file waits to be filled, and the same command takes the race up.
EXIT_GRADES_NEEDED = 6
EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM

#: The kind a failed row of an item no rerun can grade is counted under (its error's name).
UNGRADABLE = UngradableItem.__name__
#: Items no rerun can grade named in a cell's reason.
FIRST_UNGRADABLE = 3


class Ungradable(NamedTuple):
    """A cell's failed rows that running again cannot mend (:class:`UngradableItem`: the
    replayed file has no grade for their items)."""

    n_rows: int
    """How many there are."""
    first: tuple[tuple[str, str], ...] = ()
    """The first few items, as (query id, result id)."""


_EXIT = {PARTIAL: EXIT_PARTIAL, FAILED: EXIT_FAILED, STOPPED_BY_BUDGET: EXIT_BUDGET}
#: Most severe first: the status whose exit code a sweep of mixed cells reports.
_SEVERITY = (INTERRUPTED, FAILED, STOPPED_BY_BUDGET, PARTIAL)


def cell_status(
    n_judgments: int,
    n_errors: int,
    max_error_rate: float,
    n_unparseable: int = 0,
    max_unparseable_rate: float = 1.0,
    first_unparseable: str | None = None,
    ungradable: Ungradable | None = None,
) -> tuple[str, str]:
    """``(status, reason)`` of a cell that ran to the end, from its rows' error count and its
    answers that could not be read as a grade (``first_unparseable``: the first such answer,
    quoted in the reason). The worse of the two decides; both are named when both count.
    ``ungradable``: the failed rows among ``n_errors`` that no rerun can mend, named apart
    from those a rerun retries."""
    found = [
        _errors_status(n_judgments, n_errors, max_error_rate, ungradable),
        _unparseable_status(
            n_judgments - n_errors, n_unparseable, max_unparseable_rate, first_unparseable
        ),
    ]
    worst = max(found, key=lambda part: _RANK[part[0]])
    if worst[0] == COMPLETE:
        return COMPLETE, ""
    reasons = [reason for state, reason in sorted(found, key=lambda p: -_RANK[p[0]]) if reason]
    return worst[0], "; ".join(reasons)


_RANK = {COMPLETE: 0, PARTIAL: 1, FAILED: 2}


def _errors_status(
    n_judgments: int, n_errors: int, max_error_rate: float, ungradable: Ungradable | None = None
) -> tuple[str, str]:
    if n_errors == 0:
        return COMPLETE, ""
    share = n_errors / n_judgments if n_judgments else 1.0
    counted = f"{n_errors:,} of {n_judgments:,} judgments failed ({share:.0%})"
    if n_errors >= n_judgments:
        state, counted = FAILED, f"{counted}: every judgment failed"
    elif share > max_error_rate:
        state, counted = FAILED, f"{counted}, more than runner.max_error_rate={max_error_rate:g}"
    else:
        state = PARTIAL
    if ungradable is None or not ungradable.n_rows:
        if state == PARTIAL:
            return PARTIAL, f"{counted}; run the same command again to retry them"
        return state, counted
    reason = f"{counted}; {_ungradable_text(ungradable, state, n_errors, share)}"
    if ungradable.n_rows < n_errors:
        others = n_errors - ungradable.n_rows
        reason += f"; run the same command again to retry the other {others:,}"
    return state, reason


def _ungradable_text(ungradable: Ungradable, state: str, n_errors: int, share: float) -> str:
    """What the reason says of the items no rerun can grade: how many, the first few, and
    what would help instead of running again."""
    first = "; ".join(f"{query!r} {result!r}" for query, result in ungradable.first)
    more = ", …" if ungradable.n_rows > len(ungradable.first) else ""
    every = ungradable.n_rows == n_errors
    fix = "add their grades to the file"
    if state == FAILED and every and share < 1:
        # the file grades the other items: the cell can be scored on those
        fix += (
            f", or set runner.max_error_rate={_rate_above(share)} to score the cell on the "
            "items it grades"
        )
    of = "any of them" if every else f"{ungradable.n_rows:,} of them"
    return (
        f"the replayed file has no grade for {of} (first: {first}{more}); running again will "
        f"not grade them: {fix}"
    )


def _rate_above(share: float) -> str:
    """The shortest rate, in hundredths, at or above ``share``."""
    return f"{math.ceil(share * 100) / 100:g}"


#: Characters of the first unparseable answer quoted in a cell's reason.
QUOTED_ANSWER_CHARS = 120


def quoted_answer(text: str | None) -> str:
    """An answer as one short quoted line: whitespace runs (newlines too) become one space,
    and a long answer is cut at :data:`QUOTED_ANSWER_CHARS` characters."""
    line = " ".join((text or "").split())
    if not line:
        return "an empty answer"
    if len(line) > QUOTED_ANSWER_CHARS:
        line = line[: QUOTED_ANSWER_CHARS - 1].rstrip() + "…"
    return f'"{line}"'


def _unparseable_status(
    n_answered: int, n_unparseable: int, max_rate: float, first: str | None
) -> tuple[str, str]:
    """An answer the judge gave that holds no grade is no judgment either; real models miss
    the format now and then, so up to ``runner.max_unparseable_rate`` of the answers the cell
    is complete (the closing line counts them), past it partial, and failed when no answer
    could be read. Unlike a failed call, running again does not retry it (the same request
    gets the same answer from the cache): the prompt or the model has to change."""
    if n_unparseable == 0:
        return COMPLETE, ""
    share = n_unparseable / n_answered if n_answered else 1.0
    counted = (
        f"{n_unparseable:,} of {n_answered:,} answers could not be read as a grade "
        f"({share:.0%}); first: {quoted_answer(first)}"
    )
    if n_unparseable >= n_answered:
        return FAILED, (
            f"{counted}; no answer could be read: check that the model answers in the "
            "prompt's format (a prompt with a test bank needs a rating for each entry)"
        )
    if share > max_rate:
        return PARTIAL, (
            f"{counted}; more than runner.max_unparseable_rate={max_rate:g}: check that the "
            "model answers in the prompt's format (they are left out of the agreement figures)"
        )
    return COMPLETE, ""


def cell_end(
    n_judgments: int,
    n_errors: int,
    max_error_rate: float,
    *,
    skipped: str | None = None,
    stop: BaseException | None = None,
    n_unparseable: int = 0,
    max_unparseable_rate: float = 1.0,
    first_unparseable: str | None = None,
    ungradable: Ungradable | None = None,
) -> CellStatus:
    """How a cell ended: skipped (with the reason), stopped early by ``stop`` (an interruption,
    the budget, the circuit breaker, a rejected key), or, when it ran to the end, as its rows'
    error count (``ungradable`` of them no rerun can mend) and unparseable answers say
    (:func:`cell_status`)."""
    if skipped:
        state, reason = SKIPPED, skipped
    elif isinstance(stop, Interrupted):
        state, reason = INTERRUPTED, str(stop)
    elif isinstance(stop, BudgetExceeded):
        state, reason = STOPPED_BY_BUDGET, str(stop)
    elif stop is not None:
        state, reason = FAILED, str(stop)
    else:
        state, reason = cell_status(
            n_judgments,
            n_errors,
            max_error_rate,
            n_unparseable,
            max_unparseable_rate,
            first_unparseable,
            ungradable,
        )
    if isinstance(stop, ConfigError | CredentialError | DatasetError):
        code = EXIT_CONFIG  # a setting found wrong as the calls were about to start
    else:
        code = exit_code(state, getattr(stop, "signal_number", None))
    return CellStatus(
        status=state,
        status_reason=reason or None,
        exit_code=code,
        stopped_because=str(stop) if stop is not None else None,
        skip_reason=skipped,
    )


def exit_code(status: str, signal_number: int | None = None) -> int:
    """The process exit code for one cell's status."""
    if status == INTERRUPTED:
        return 128 + (signal_number or signal.SIGINT)
    return _EXIT.get(status, 0)


def anything_judged(statuses: Iterable[str]) -> bool:
    """Whether any cell has a judgment to report: not every one failed or was skipped (a run
    or sweep with nothing judged builds no report of nothing)."""
    return any(status not in (FAILED, SKIPPED) for status in statuses)


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
