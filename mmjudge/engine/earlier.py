"""What earlier runs of a cell in its run folder left to the run that resumes it: the spend
the budget counts, the dearest answer they had, and the sends that may have been billed
without an answer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import NamedTuple

from mmjudge.engine.policy import RunStats
from mmjudge.store.rows import JUDGMENTS, SAMPLES, iter_rows
from mmjudge.store.summary import read_summary
from mmjudge.store.unanswered import (
    UnansweredSends,
    UnansweredTotal,
    append_unanswered,
    unanswered_total,
)


def earlier_runs(run_dir: Path) -> RunStats:
    """The stats a run of the cell in ``run_dir`` starts from, adding to the folder's ledger.

    - ``spent_before_usd``: what the folder's rows (and repeats) were paid, lost sends sent
      again included, so ``runner.max_cost_usd`` bounds the cell across its runs;
    - ``dearest_usd``: the dearest of those rows' answers (no send is expected to cost less);
    - ``calls.possibly_billed`` (and its dollars): what the folder's ledger of sends that may
      have been billed without an answer adds up to (:mod:`mmjudge.store.unanswered`); a
      folder written before the ledger was kept starts it from its last summary's figure,
      less the calls that summary handed on to the response cache's claims (the run counts
      those again from the claims). The runner adds to it what a killed run left in the
      claims, then its own.
    """
    stats = RunStats(folder=run_dir)
    paid = [_paid(run_dir / JUDGMENTS), _paid(run_dir / SAMPLES)]
    stats.spent_before_usd = math.fsum(p.usd for p in paid)
    stats.dearest_usd = max(p.dearest for p in paid)
    total = unanswered_total(run_dir) or _from_summary(run_dir, write=True)
    stats.calls.possibly_billed = total.sends
    stats.calls.possibly_billed_usd = total.usd
    return stats


class _Paid(NamedTuple):
    usd: float
    """Dollars paid for a file's rows."""
    dearest: float
    """The dearest answer among them (cache hits included: their price is a call's)."""


def _paid(path: Path) -> _Paid:
    """What the rows of ``path`` were paid (answers from the cache are free; each lost send
    sent again is priced as its answer), and their dearest answer."""
    if not path.is_file():
        return _Paid(0.0, 0.0)
    spent: list[float] = []
    dearest = 0.0
    try:
        for row in iter_rows(path):
            cost = float(row.get("cost_usd") or 0.0)
            dearest = max(dearest, cost)
            if not row.get("cached"):
                spent.append(cost * (1 + int(row.get("resent") or 0)))
    except (OSError, ValueError, json.JSONDecodeError):
        pass
    return _Paid(math.fsum(spent), dearest)


def _from_summary(run_dir: Path, *, write: bool) -> UnansweredTotal:
    """A folder without a ledger: its last summary's possibly billed sends, less those it
    handed on to the claims; with ``write``, the ledger starts from them."""
    try:
        calls = read_summary(run_dir).calls
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        calls = None  # none yet (a first run), or one a resume cannot read
    if calls is None:
        return UnansweredTotal(0, 0.0)
    total = UnansweredTotal(
        max(calls.possibly_billed - calls.handed_on, 0),
        max(calls.possibly_billed_usd - calls.handed_on_usd, 0.0),
    )
    if write and total.sends:
        why = "counted by the folder's last summary"
        append_unanswered(run_dir, UnansweredSends(sends=total.sends, usd=total.usd, why=why))
    return total
