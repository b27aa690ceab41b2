"""What the sync runner (:mod:`mmjudge.engine.sync`) keeps for each call, and the error a
run ends with when it stops before its last item."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from mmjudge.engine.interrupt import signal_name
from mmjudge.engine.policy import RunStats, WorkItem
from mmjudge.engine.response_cache import RequestKeys, ResponseCache
from mmjudge.errors import BudgetExceeded, Interrupted
from mmjudge.records import JudgeRequest, JudgeResponse
from mmjudge.store import CallCounts


class LookedUp(NamedTuple):
    """A work item with its request's cache key and the answer the cache holds for it."""

    item: WorkItem
    key: str
    """The request's cache key ("" for an item without a request or without a cache)."""
    response: JudgeResponse | None


def look_up(item: WorkItem, cache: ResponseCache | None, keys: RequestKeys) -> LookedUp:
    """``item`` looked up in ``cache``. An answer found is final; one not found may still
    arrive before the item is called (another process paying for it), which the runner's
    claim, taken before the call, looks for again."""
    if item.request is None or cache is None:
        return LookedUp(item, "", None)
    key = keys(item.request)
    return LookedUp(item, key, cache.get(key))


class SetAside:
    """What a job's worker gives back when another live process holds the item's claim."""


SET_ASIDE = SetAside()


@dataclass
class Job:
    """A work item on its way to the judge."""

    item: WorkItem
    key: str
    """The request's cache key."""
    resent: int = 0
    """Earlier sends lost by stopped processes (see
    :class:`mmjudge.engine.response_cache.Claim`)."""
    lost_usd: float = 0.0
    """What the run folder's ledger counts each lost send (sure or maybe) at."""
    started: bool = False
    """Whether its task began (a task cancelled before that runs none of its clean-up)."""
    claimed: bool = False
    """Whether this run holds the request's claim."""
    waited: bool = False
    """Whether the item was set aside first, another live process holding it."""
    possibly_billed: int = 0
    """Sends of this job's request that may have been billed without an answer (see
    :attr:`mmjudge.engine.policy.Outcome.possibly_billed`)."""
    possibly_billed_usd: float = 0.0
    """Their dollars at the call's forecast."""
    committed_usd: float = 0.0
    """The call's forecast dollars counted in the run's committed spend (with a budget; see
    :meth:`mmjudge.engine.policy.CallPolicy.in_flight_usd`)."""


def token_estimate(request: JudgeRequest, max_tokens: int) -> float:
    """Rough tokens of a call for the tokens-per-minute limiter (4 characters a token)."""
    return len(request.prompt) / 4 + 100 * len(request.images) + max_tokens


def stop_error(
    stop_signal: int | None,
    dropped: int,
    exhausted: bool,
    stats: RunStats,
    max_cost_usd: float | None,
) -> Exception | None:
    """Why a run that ended this way did not judge every item: a stop request that cut it
    short (``dropped`` calls given up, or items never taken), or the budget; None when it
    did."""
    if stop_signal is not None and (not exhausted or dropped > 0):
        return Interrupted(
            f"stopped by {signal_name(stop_signal)}: {dropped} call(s) in flight were given up "
            "and will be sent again on resume",
            stop_signal,
        )
    calls = stats.calls
    if calls.stopped_by_budget:
        return BudgetExceeded(
            f"stopped before passing runner.max_cost_usd={max_cost_usd}: "
            f"spent ${calls.spent_usd:.4f} on {calls.api_calls} calls{_earlier(stats)}"
            f"{_possibly(calls)}; "
            "raise the cap and run the same command again to resume (finished calls come from "
            "the cache)"
        )
    return None


def _possibly(calls: CallCounts) -> str:
    """The possibly billed dollars the budget counted, for the stop message ('' if none)."""
    if not calls.possibly_billed:
        return ""
    return (
        f" and possibly ${calls.possibly_billed_usd:.4f} more for {calls.possibly_billed} "
        "send(s) given up after they left (earlier runs of this cell included)"
    )


def _earlier(stats: RunStats) -> str:
    """What earlier runs of the cell in its folder spent, for the stop message ('' if
    nothing)."""
    if not stats.spent_before_usd:
        return ""
    return f" (and ${stats.spent_before_usd:.4f} in earlier runs of this cell)"
