"""``possibly_billed.jsonl``: a run folder's ledger of the sends that may have been billed
without an answer.

A send that left and got no answer (it timed out or was cut off after it left, it was in
flight when a stop gave it up, a killed process left it behind in the response cache's claims)
may be billed by the provider. Each is written here as it happens, one line per event, so the
figure survives any way a run ends, SIGKILL included; the next run in the folder starts its
count, and its budget (``runner.max_cost_usd``), from the sum. A send counted here that is
later proved to have reached the provider (the request was sent again and answered) is priced
as resent at that answer's price and leaves the figure: a line with negative ``sends`` and
``usd``. The sum is the figure the summary, the console and the report show
(``calls.possibly_billed``).

Each line::

    {"schema_version": 1, "sends": 3, "usd": 0.0012, "why": "given up in flight at a stop",
     "keys": ["<request key>", ...]}
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from mmjudge.files import append_jsonl, read_jsonl

UNANSWERED = "possibly_billed.jsonl"
UNANSWERED_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class UnansweredSends:
    """One line of the ledger: sends that may have been billed without an answer."""

    sends: int
    """How many: positive when they may have been billed, negative for sends counted before
    that a later answer proved were received (priced as resent from then on)."""
    usd: float
    """Their estimated dollars, with the sign of ``sends``."""
    why: str
    """What happened, in words."""
    keys: list[str] = field(default_factory=list)
    """The requests' response-cache keys, where there is a cache."""
    schema_version: int = UNANSWERED_SCHEMA_VERSION
    """The layout of the line."""


class UnansweredTotal(NamedTuple):
    """What a ledger adds up to."""

    sends: int
    """Sends that may have been billed without an answer."""
    usd: float
    """Their estimated dollars."""


def append_unanswered(run_dir: Path, entry: UnansweredSends) -> None:
    """Add ``entry`` to ``run_dir``'s ledger, on disk before this returns."""
    append_jsonl(run_dir / UNANSWERED, asdict(entry))


def read_unanswered(run_dir: Path) -> Iterator[UnansweredSends]:
    """The ledger's entries in order (none when there is no ledger); a line a killed writer
    left partial, or one that is not an entry, is skipped."""
    path = run_dir / UNANSWERED
    if not path.is_file():
        return
    for _line, value in read_jsonl(path, strict=False):
        entry = _entry(value)
        if entry is not None:
            yield entry


def unanswered_total(run_dir: Path) -> UnansweredTotal | None:
    """What ``run_dir``'s ledger adds up to; None when the folder has no ledger."""
    if not (run_dir / UNANSWERED).is_file():
        return None
    entries = list(read_unanswered(run_dir))
    sends = sum(e.sends for e in entries)
    usd = math.fsum(e.usd for e in entries)
    return UnansweredTotal(max(sends, 0), max(usd, 0.0))


def _entry(value: object) -> UnansweredSends | None:
    if not isinstance(value, dict):
        return None
    try:
        sends, usd = int(value["sends"]), float(value["usd"])
    except (KeyError, TypeError, ValueError):
        return None
    if not math.isfinite(usd):
        return None
    keys = value.get("keys")
    return UnansweredSends(
        sends=sends,
        usd=usd,
        why=str(value.get("why") or ""),
        keys=[str(k) for k in keys] if isinstance(keys, list) else [],
        schema_version=int(value.get("schema_version") or UNANSWERED_SCHEMA_VERSION),
    )
