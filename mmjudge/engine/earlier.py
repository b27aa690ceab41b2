"""What earlier runs of a cell in its run folder left to the run that resumes it: the spend
the budget counts and the sends that may have been billed without an answer."""

from __future__ import annotations

import json
from pathlib import Path

from mmjudge.engine.policy import RunStats
from mmjudge.store.rows import JUDGMENTS, SAMPLES, iter_rows
from mmjudge.store.summary import read_summary


def earlier_runs(run_dir: Path) -> RunStats:
    """The stats a run of the cell in ``run_dir`` starts from.

    - ``spent_before_usd``: what the folder's rows (and repeats) were paid, lost sends sent
      again included, so ``runner.max_cost_usd`` bounds the cell across its runs;
    - ``calls.possibly_billed`` (and its dollars): what the last summary counted, less the
      calls it handed on to the response cache's claims (the resume counts those again, as
      resent or maybe resent); the run adds its own to them.
    """
    stats = RunStats()
    stats.spent_before_usd = _spent(run_dir / JUDGMENTS) + _spent(run_dir / SAMPLES)
    try:
        calls = read_summary(run_dir).calls
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return stats  # none yet (a first run), or one a resume cannot read: nothing carried
    if calls is not None:
        stats.calls.possibly_billed = max(calls.possibly_billed - calls.handed_on, 0)
        stats.calls.possibly_billed_usd = max(calls.possibly_billed_usd - calls.handed_on_usd, 0.0)
    return stats


def _spent(path: Path) -> float:
    """Dollars paid for the rows of ``path`` (answers from the cache are free; each lost
    send sent again is priced as its answer)."""
    if not path.is_file():
        return 0.0
    total = 0.0
    try:
        for row in iter_rows(path):
            if not row.get("cached"):
                total += float(row.get("cost_usd") or 0.0) * (1 + int(row.get("resent") or 0))
    except (OSError, ValueError, json.JSONDecodeError):
        return total
    return total
