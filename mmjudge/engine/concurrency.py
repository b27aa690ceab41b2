"""How many calls a run keeps in flight, what limits them, and the line that says so.

Two settings can limit calls in flight: ``runner.concurrency`` (how hard the user wants to
push) and ``model.max_concurrency`` (what a model or server takes at once). Both are unset by
default, and a limit nobody set never cuts one somebody did:

- neither set: :data:`DEFAULT_CONCURRENCY`;
- one set: that one;
- both set: the smaller.

The process's open-files limit is the third: each call in flight holds a socket, so a soft
limit below what the calls need is raised (up to the hard limit) before the first call; where
the hard limit is too low, the calls in flight are cut to fit and the run's first line says so.
That line is said for paid judges only: a free judge's calls cost nothing and load no provider.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from mmjudge.config import ModelConfig, RunnerConfig

#: Calls in flight when neither ``runner.concurrency`` nor ``model.max_concurrency`` is set.
DEFAULT_CONCURRENCY = 16

#: Files a run keeps open besides its connections (caches, records, logs, the interpreter's).
OTHER_OPEN_FILES = 64


class InFlight(NamedTuple):
    """The calls a run keeps in flight and why that many."""

    calls: int
    limited_by: str
    """The setting (or default) that decides ``calls``, as the user would write it."""


def calls_in_flight(runner: RunnerConfig, model: ModelConfig, fill: int | None = None) -> InFlight:
    """The calls in flight that the two settings give (the open-files limit aside); with
    neither set, what the judge needs to fill its batches (``fill``, its ``calls_to_fill``)
    or the default."""
    user, own = runner.concurrency, model.max_concurrency
    if user is None and own is None and fill is not None:
        return InFlight(
            int(fill),
            f"two of model '{model.name}''s batches (model.options.batch_size); set "
            "runner.concurrency to change it",
        )
    if user is None and own is None:
        return InFlight(
            DEFAULT_CONCURRENCY,
            f"the default; set runner.concurrency to change it (model '{model.name}' sets no "
            "max_concurrency)",
        )
    if own is None:
        assert user is not None
        return InFlight(int(user), f"runner.concurrency={user}")
    if user is None:
        return InFlight(int(own), f"model.max_concurrency={own} of model '{model.name}'")
    if own < user:
        return InFlight(int(own), f"model.max_concurrency={own} caps runner.concurrency={user}")
    return InFlight(int(user), f"runner.concurrency={user}")


def fit_open_files(in_flight: InFlight) -> InFlight:
    """``in_flight``, after raising the soft open-files limit to what it needs; cut to fit
    (and saying so) when the hard limit is too low. Unchanged where there is no such limit."""
    try:
        import resource
    except ImportError:  # not on this platform
        return in_flight
    needed = in_flight.calls + OTHER_OPEN_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return in_flight
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        target = soft
    if target >= needed:
        return in_flight
    fits = max(1, target - OTHER_OPEN_FILES)
    return InFlight(
        fits,
        f"{in_flight.limited_by}, cut to fit the open-files limit of {target} (ulimit -n; "
        f"raise it to {needed} for {in_flight.calls} in flight)",
    )


def pacing(model: ModelConfig) -> str:
    """The model's rate limits, as a clause for the first line ("" when it has none)."""
    limits = []
    if model.requests_per_minute is not None:
        limits.append(f"model.requests_per_minute={model.requests_per_minute:g}")
    if model.tokens_per_minute is not None:
        limits.append(f"model.tokens_per_minute={model.tokens_per_minute:g}")
    return f"; paced by {' and '.join(limits)}" if limits else ""


#: Whether this process prints the calls-in-flight line (the command turns it on with
#: :func:`announce_in_flight`; a library call only logs it, at INFO on ``mmjudge``).
_ANNOUNCE = False
#: The lines said already in this process: each once, the default's once for all models.
_SAID: set[str] = set()


def announce_in_flight(on: bool = True) -> None:
    """Print the calls-in-flight line on the console (once per process; the command does)."""
    global _ANNOUNCE
    _ANNOUNCE = on


def first_line(in_flight: InFlight, model: ModelConfig, *, paid: bool = True) -> str:
    """The run's first line: calls in flight and what limits them; empty (nothing to say)
    when it was said already in this process, when the process did not ask for it
    (:func:`announce_in_flight`), or for a judge nobody pays for (``paid`` false: a judge whose
    descriptor says it is free, local or replayed, whose calls in flight cost nothing and
    load no provider), in which cases it is logged at INFO only."""
    line = (
        f"mmjudge: up to {in_flight.calls} calls in flight — {in_flight.limited_by}{pacing(model)}"
    )
    if not _ANNOUNCE or not paid:
        logging.getLogger(__name__).info(line.removeprefix("mmjudge: "))
        return ""
    seen = "default" if in_flight.limited_by.startswith("the default") else line
    if seen in _SAID:
        return ""
    _SAID.add(seen)
    return line
