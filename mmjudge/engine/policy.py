"""The policy both runners follow: what a cached answer, the budget, a failed call and an
answer mean, decided once for the sync runner (:mod:`~mmjudge.engine.sync`) and the batch
runner (:mod:`~mmjudge.engine.batch`).

:class:`CallPolicy` holds it: the response cache lookup, the budget check, the one backoff
rule, the error tally, and pricing each answer once (the cost travels with its
:class:`Outcome`). The work items and outcomes the runners pass around live here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.costs.calls import UNPRICED, PricedCall
from mmjudge.data.schema import Example
from mmjudge.engine.breaker import causes
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.judges.base import ErrorVerdict, JudgeAPI
from mmjudge.prompts.parsing import ParsedGrade
from mmjudge.records import Forecast, JudgeRequest, JudgeResponse
from mmjudge.speed import FAST, Speed
from mmjudge.store import CallCounts
from mmjudge.store.unanswered import UnansweredSends, append_unanswered

T = TypeVar("T")

#: Seconds after a run's first call that its first forecast starts on a worker thread (see
#: :meth:`RunStats.forecast_first_aside`).
FIRST_FORECAST_DELAY_S = 0.1

#: Prices one answer (see :class:`mmjudge.costs.calls.CallPricer`).
Pricer = Callable[[JudgeRequest, JudgeResponse], PricedCall]


class Passage(NamedTuple):
    """Where a result stood in a call about several results of its query
    (``prompt.passages_per_call``), and what that call gave it."""

    call_id: str
    """The call's id, which the rows of its results share."""
    position: int
    """The result's place in the call: 1 for ``R1``."""
    size: int
    """Results the call showed."""
    grade: ParsedGrade | None
    """The grade the call's answer gave the result (or why none); None without an answer
    (the call failed) and for a result asked again, whose grade is that second answer's."""
    share: PricedCall
    """The result's share of the call's usage and dollars
    (:func:`mmjudge.costs.split.split_priced`)."""
    asked_again: bool = False
    """Whether the answer left the result without a grade and it was asked on its own."""


class ItemCall(NamedTuple):
    """What a result's work item carries to its row: the item and the pictures it sent."""

    example: Example
    """The item judged."""
    image_hashes: tuple[str, ...]
    """The sha256 of each picture sent with it, in order."""
    passage: Passage | None = None
    """Where the result stood in a call about several results; None for a call about it
    alone."""


class EntryCall(NamedTuple):
    """What an entry's work item carries (``prompt.bank_calls=entry``), for the
    :class:`~mmjudge.engine.per_entry.EntryCollector` that gathers a result's calls."""

    example: Example
    """The item judged."""
    request: JudgeRequest
    """The result's request about the whole bank (what the row records)."""
    n_calls: int
    """Calls the result is split into."""
    position: int
    """This call's place among them."""


class PassagesCall(NamedTuple):
    """What the work item of a call about several results of one query carries
    (``prompt.passages_per_call``), for :mod:`mmjudge.engine.passages`, which turns its
    outcome into one per result."""

    call_id: str
    """The call's id (a hash of its results' keys in the order shown)."""
    singles: tuple[WorkItem, ...]
    """Each result's own work item (its request about it alone), in the order shown: what
    a result the answer left without a grade is asked again with."""
    weights: tuple[float, ...] = ()
    """Each result's weight in the call's input tokens, in the order shown (its listing and
    an equal part of what the call says once: :func:`~mmjudge.prompts.passages.
    call_weights`); empty: equal shares."""


class QueryCall(NamedTuple):
    """What a test-bank writer's work item carries: the query it writes entries for."""

    query_id: str
    """The query's id."""


#: What a work item carries for whoever turns its outcome into a record (None: nothing).
CallContext = ItemCall | EntryCall | PassagesCall | QueryCall | None


@dataclass
class WorkItem:
    """One judgment to make; ``error`` set means it failed before any call (e.g. bad image).

    The call's forecast is given either as it is (``forecast``) or as ``estimate``, which
    computes it when it is first needed: the runners ask only for calls they make, so an
    item answered from the cache is never tokenised or counted.
    """

    key: str
    request: JudgeRequest | None
    error: str | None = None
    forecast: Forecast = field(default_factory=Forecast)
    """Expected usage and cost of the call (the budget reads its dollars); filled in from
    ``estimate`` on first use (see :meth:`expected`)."""
    context: CallContext = None
    """What the caller needs to turn the outcome into a record."""
    estimate: Callable[[], Forecast] | None = field(default=None, repr=False)
    """Computes ``forecast`` when it is first needed."""

    def expected(self) -> Forecast:
        """The call's forecast, computed on first use when ``estimate`` is given."""
        if self.estimate is not None:
            self.forecast = self.estimate()
            self.estimate = None
        return self.forecast

    @property
    def forecast_usd(self) -> float:
        """Expected dollars of the call at list prices."""
        return self.expected().usd


@dataclass
class Outcome:
    """What happened to one work item."""

    item: WorkItem
    response: JudgeResponse | None
    error: str | None
    cached: bool
    attempts: int
    latency_s: float
    resent: int = 0
    """Earlier sends of this request that were lost (a process sent it and stopped before
    its answer arrived)."""
    priced: PricedCall = UNPRICED
    """The answer's usage and cost, priced once when it arrived (or came from the cache)."""
    possibly_billed: int = 0
    """Sends of this request that may have reached the provider and got no answer (an
    attempt timed out or was cut off after it left, a lost send that may have left)."""
    possibly_billed_usd: float = 0.0
    """Their cost, each at the call's forecast (:meth:`CallPolicy.possibly_billed`)."""


@dataclass
class RunStats:
    """What a run did so far: its call counts (the summary's ``calls`` block, counted as the
    calls are made) and the forecast of its calls."""

    calls: CallCounts = field(default_factory=CallCounts)
    """The counts, under the names the summary gives them."""
    counted: Forecast = field(default_factory=Forecast)
    """The forecasts counted so far (:attr:`forecast` is the run's)."""
    spent_before_usd: float = 0.0
    """What earlier runs of the cell in its run folder paid (:func:`.earlier.earlier_runs`):
    the budget counts it, so ``runner.max_cost_usd`` bounds the cell, not each run."""
    dearest_usd: float = 0.0
    """The dearest answer the cell has had (its rows', then this run's): a send is never
    expected to cost less (:meth:`CallPolicy.send_usd`)."""
    folder: Path | None = None
    """The run folder whose ledger of sends possibly billed without an answer this run adds
    to (:mod:`mmjudge.store.unanswered`); None for a run that keeps none (a judge used on its
    own, a runner in a test)."""
    _later: list[WorkItem] = field(default_factory=list, init=False, repr=False, compare=False)
    """Items to count once the first forecast, on its worker thread, is done."""
    _first: threading.Thread | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def forecast(self) -> Forecast:
        """Expected usage of every call the run made or was about to make, at list prices
        (answers from the cache are not forecast)."""
        self._count_later()
        return self.counted

    def forecast_first_aside(self, item: WorkItem, speed: Speed) -> None:
        """Make the run's first forecast on a worker thread, once, starting
        :data:`FIRST_FORECAST_DELAY_S` after the run's first call (called on the event loop);
        with ``speed`` off, here and now, before the next call leaves.

        The first forecast loads the tokenizer (~0.3 s of CPU). Made on the event loop as the
        first answers arrive, it would stall every call in flight; on a thread it uses the time
        the loop spends waiting for those answers. Started sooner, it competes with the first
        call still on its way out (measured: 0.1-0.3 s later at the server with 0.05 s);
        started at the first answer, tiktoken's encoder construction, which holds the GIL for
        ~0.15 s, stalls the loop as much as loading it there. Items drawn meanwhile are counted
        when it is done.
        """
        if self._first is None:
            self._first = threading.Thread(
                target=_forecast_quietly, args=(item,), name="mmjudge-first-forecast", daemon=True
            )
            if speed.on:
                asyncio.get_running_loop().call_later(FIRST_FORECAST_DELAY_S, self._first.start)
            else:  # the reference: made here, before the next call leaves
                self._first.start()
                self._first.join()

    def add_forecast(self, item: WorkItem) -> None:
        """Count ``item``'s forecast: at the next :meth:`settle` (or when :attr:`forecast` is
        read), so a call's answer is not held up by counting its tokens."""
        self._later.append(item)

    def settle(self) -> None:
        """Count the forecasts added since the last time, unless the first one is still to
        be made on its worker thread (nothing here waits for the tokenizer to load)."""
        first = self._first
        if not self._later or (first is not None and (first.ident is None or first.is_alive())):
            return
        self._count_later()

    def _count_later(self) -> None:
        if self._first is not None and self._first.ident is not None:  # started
            self._first.join()
        later, self._later = self._later, []
        for item in later:
            self.counted.add(item.expected())

    def absorb(self, other: RunStats, spent_before: float) -> None:
        """Add the counts of a runner that started with ``spent_before`` already spent (the
        batch runner's sync fallback) to these."""
        self.calls.absorb(other.calls, spent_before)


def _forecast_quietly(item: WorkItem) -> None:
    """``item.expected()`` on a worker thread: a failure is left for the event loop's own call
    to raise where it always has."""
    with contextlib.suppress(Exception):
        item.expected()


class WorkSource(Protocol):
    """A run's work items, which can be built again for some keys (the batch runner rebuilds
    the items it resubmits, having kept them without their image data while they waited)."""

    def __iter__(self) -> Iterator[WorkItem]: ...

    def only(self, keys: set[str]) -> Iterable[WorkItem]:
        """The items of ``keys``, built again."""
        ...


def error_text(error: BaseException) -> str:
    """One line for a row: the error's type and message, and the root cause behind it.

    SDK errors often say only "Connection error." or "Request timed out."; the root cause
    (``ConnectionRefusedError: ... 127.0.0.1:9``) is what tells a user what went wrong.
    """
    text = " ".join(str(error).split()) or type(error).__name__
    line = f"{type(error).__name__}: {text[:300]}"
    if isinstance(getattr(error, "status_code", None), int):
        return line  # the provider's status and message say it all
    inner = [e for e in causes(error) if not isinstance(e, asyncio.CancelledError)]
    root = inner[-1] if inner else error
    if root is not error:
        detail = " ".join(str(root).split())
        if detail and detail not in text:
            line += f" (cause: {type(root).__name__}: {detail[:200]})"
    return line


def classify(judge: JudgeAPI, error: Exception) -> ErrorVerdict:
    """The judge's verdict on a failed call (:meth:`JudgeAPI.classify_error`), with the fatal
    error chained to its cause; a call the runner's own time limit cut off is retryable."""
    verdict = judge.classify_error(error)
    if verdict.fatal is not None:
        verdict.fatal.__cause__ = error
        return verdict
    if isinstance(error, TimeoutError) and not verdict.retryable:
        return verdict._replace(retryable=True)
    return verdict


class CallTimeout(TimeoutError):
    """The runner's own per-call limit (``runner.timeout_s``) ran out."""


def endpoint_of(judge: JudgeAPI, model: ModelConfig) -> str:
    """Where a judge's calls go, for messages."""
    url = getattr(judge, "base_url", None) or model.base_url
    return str(url) if url else f"the {model.provider} API"


class CallPolicy:
    """The decisions the sync and batch runners share, and the tally they keep in ``stats``.

    ``discount`` is the share of the list price the calls are paid at (a batch API's
    discount), so the budget compares like with like. ``speed``: whether the run uses the
    speed machinery (here: its first forecast made on a worker thread).
    """

    def __init__(
        self,
        settings: RunnerConfig,
        stats: RunStats,
        cache: ResponseCache | None = None,
        price: Pricer | None = None,
        discount: float = 1.0,
        seed: int = 0,
        *,
        speed: Speed = FAST,
    ) -> None:
        self.settings = settings
        self.speed = speed
        self.stats = stats
        self.cache = cache
        self.price: Pricer = price or (lambda _request, _response: UNPRICED)
        self.discount = discount
        self.seed = seed
        self._rng = random.Random(seed)

    def drawn(self, item: WorkItem) -> None:
        """Count an item the run is about to call in the run's forecast."""
        self.stats.add_forecast(item)

    async def drawn_around(self, item: WorkItem, call: Awaitable[T]) -> T:
        """Await an item's first call, counted in the run's forecast: before it is sent when
        a budget reads the figure, else once it is answered, the run's first forecast on a
        worker thread (so no call waits for the tokenizer to load)."""
        if self.settings.max_cost_usd is not None:
            self.drawn(item)
            return await call
        self.stats.forecast_first_aside(item, self.speed)
        try:
            return await call
        finally:
            self.drawn(item)

    def committed_usd(self, item: WorkItem) -> float:
        """The forecast a call under way carries in the spend the budget counts as committed
        (at the run's discount; nothing, and nothing forecast, without a budget): see
        :meth:`in_flight_usd`."""
        if self.settings.max_cost_usd is None:
            return 0.0
        return item.forecast_usd * self.discount

    def in_flight_usd(self, forecasts: Iterable[float]) -> float:
        """What the calls under way, with these forecasts (:meth:`committed_usd`), may cost:
        each at its forecast or the dearest answer seen so far, whichever is more, so that
        answers dearer than forecast (long reasoning, say) correct the calls already sent."""
        if self.settings.max_cost_usd is None:
            return 0.0
        dearest = self.stats.dearest_usd
        return math.fsum(max(usd, dearest) for usd in forecasts)

    def send_usd(self, item: WorkItem) -> float:
        """What one send of ``item``'s request is expected to cost: its forecast (at the run's
        discount) or the dearest answer the cell has had, whichever is more. The budget and
        the possibly billed dollars price a send here."""
        return max(item.forecast_usd * self.discount, self.stats.dearest_usd)

    def from_cache(self, item: WorkItem, key: str) -> Outcome | None:
        """The cached answer for ``key`` as the item's outcome, or None."""
        if self.cache is None:
            return None
        response = self.cache.get(key)
        return None if response is None else self.hit(item, response)

    def hit(self, item: WorkItem, response: JudgeResponse) -> Outcome:
        """An answer this run did not pay for (the response cache): priced for its row."""
        self.stats.calls.cache_hits += 1
        priced = self._price(item, response)
        self._seen(priced)
        return Outcome(item, response, None, True, 0, response.latency_s, priced=priced)

    def over_budget(self, item: WorkItem, committed_usd: float) -> bool:
        """Whether sending ``item``'s request (a first attempt or a retry) could pass
        ``runner.max_cost_usd``, with what the cell spent (earlier runs in its folder
        included), what may have been billed for sends that got no answer, and
        ``committed_usd`` expected from other calls under way. The possibly billed dollars
        count so that a provider that takes requests and never answers cannot run a bill
        past the cap."""
        cap = self.settings.max_cost_usd
        if cap is None:
            return False
        expected = item.forecast_usd * self.discount
        return self.known_usd() + committed_usd + expected > cap

    def known_usd(self) -> float:
        """What the budget counts as spent: the cell's earlier runs, this run's answers and
        the sends that may have been billed without one."""
        calls = self.stats.calls
        return self.stats.spent_before_usd + calls.spent_usd + calls.possibly_billed_usd

    def answered(
        self, item: WorkItem, response: JudgeResponse, attempts: int, latency: float, resent: int
    ) -> Outcome:
        """A paid answer: priced once, added to the spend (with the lost sends before it,
        each priced as this one)."""
        calls = self.stats.calls
        calls.api_calls += 1
        priced = self._price(item, response)
        self._seen(priced)
        calls.spent_usd += priced.total_usd * (1 + resent)
        calls.resent += resent
        calls.resent_usd += priced.total_usd * resent
        return Outcome(item, response, None, False, attempts, latency, resent, priced)

    def possibly_billed(
        self,
        item: WorkItem,
        sends: int = 1,
        *,
        why: str = "sent and not answered",
        keys: Sequence[str] = (),
    ) -> float:
        """Count ``sends`` of ``item``'s request that may have reached the provider and got no
        answer; returns their dollars. Each is priced as a send (:meth:`send_usd`): the one
        place these dollars are computed, which the rows, the summary and the report carry as
        they are."""
        usd = self.send_usd(item) * sends
        self.unanswered(sends, usd, why=why, keys=keys)
        return usd

    def unanswered(self, sends: int, usd: float, *, why: str, keys: Sequence[str] = ()) -> None:
        """Add ``sends`` possibly billed without an answer (negative: sends counted so that an
        answer since proved were received, priced as resent now) to the run's count and to its
        folder's ledger, on disk before the count changes."""
        if not sends:
            return
        if self.stats.folder is not None:
            entry = UnansweredSends(sends=sends, usd=usd, why=why, keys=list(keys))
            append_unanswered(self.stats.folder, entry)
        calls = self.stats.calls
        calls.possibly_billed = max(calls.possibly_billed + sends, 0)
        calls.possibly_billed_usd = max(calls.possibly_billed_usd + usd, 0.0)

    def failed(
        self, item: WorkItem, kind: str, text: str, attempts: int, latency: float, resent: int = 0
    ) -> Outcome:
        """An item no attempt answered: counted by kind, its error on its row."""
        self.stats.calls.failures += 1
        self.stats.calls.errors_by_kind[kind] = self.stats.calls.errors_by_kind.get(kind, 0) + 1
        return Outcome(item, None, text, False, attempts, latency, resent)

    def backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter (``runner.backoff_base_s`` doubling, capped at
        ``runner.backoff_max_s``), never shorter than the server's retry-after."""
        ceiling = min(
            self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** (attempt - 1)
        )
        delay = self._rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, max(self.settings.backoff_max_s, retry_after or 0.0))

    def _price(self, item: WorkItem, response: JudgeResponse) -> PricedCall:
        assert item.request is not None
        return self.price(item.request, response)

    def _seen(self, priced: PricedCall) -> None:
        """An answer's price: from now on no send is expected to cost less."""
        if priced.total_usd > self.stats.dearest_usd:
            self.stats.dearest_usd = priced.total_usd
