"""Async scheduling of judge calls: concurrency and rate limits, retries, cache, budget.

Providers only know how to make one call; everything generic happens here, once.
Records are streamed to the caller as they finish, so memory stays flat however many
judgments a run makes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import random
import sys
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mmjudge.breaker import Breaker, causes
from mmjudge.cache import ItemClaims, ResponseCache, request_key
from mmjudge.concurrency import calls_in_flight
from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.errors import (
    BudgetExceeded,
    ConfigError,
    CredentialError,
    FatalProviderError,
    Interrupted,
)
from mmjudge.interrupt import signal_name
from mmjudge.providers.base import JudgeAPI
from mmjudge.records import JudgeRequest, JudgeResponse

#: Seconds between looks at items another process is judging.
CLAIM_POLL_S = 0.25


@dataclass
class WorkItem:
    """One judgment to make; ``error`` set means it failed before any call (e.g. bad image)."""

    key: str
    request: JudgeRequest | None
    error: str | None = None
    forecast_usd: float = 0.0
    """Expected cost of the call, used by the budget (see :meth:`expected_usd`)."""
    context: Any = None
    """Whatever the caller needs to turn the outcome into a record."""
    estimate: Callable[[], float] | None = field(default=None, repr=False)
    """Computes ``forecast_usd`` when it is first needed, so an item answered from the cache
    is never forecast (no tokens counted for a call that is not made)."""

    def expected_usd(self) -> float:
        """The call's expected cost, computed on first use when ``estimate`` is given."""
        if self.estimate is not None:
            self.forecast_usd = self.estimate()
            self.estimate = None
        return self.forecast_usd


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


@dataclass
class RunStats:
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    stopped_by_budget: bool = False
    spent_usd: float = 0.0
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    batch: dict[str, int] = field(default_factory=dict)
    """Batch-mode counts (batches submitted, resumed, follow-ups); empty in sync mode."""
    resent: int = 0
    """Requests sent again because a stopped process had sent them and got no answer."""
    resent_usd: float = 0.0
    """Estimated cost of those lost first sends (each priced as its resend); in ``spent_usd``."""
    abandoned: int = 0
    """Calls in flight that this run gave up when it stopped (resent on resume)."""
    from_other_process: int = 0
    """Items another live process was paying for; this run waited for their answers."""


class RateLimiter:
    """A token bucket refilled continuously; ``rate`` units per minute, ``None`` for no limit."""

    def __init__(self, per_minute: float | None) -> None:
        self.rate = per_minute / 60.0 if per_minute else None
        self.capacity = per_minute or 0.0
        self.level = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self, amount: float = 1.0) -> None:
        if self.rate is None:
            return
        amount = min(amount, self.capacity)
        async with self._lock:
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
                self.updated = now
                if self.level >= amount:
                    self.level -= amount
                    return
                await asyncio.sleep((amount - self.level) / self.rate)


class Progress:
    """A one-line progress display on stderr: done/total, rate, ETA and dollars so far."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled and sys.stderr.isatty()
        self.done = 0
        self.usd = 0.0
        self.started = time.monotonic()
        self._last = 0.0

    def update(self, usd: float) -> None:
        self.done += 1
        self.usd += usd
        now = time.monotonic()
        if self.enabled and now - self._last > 0.2:
            self._last = now
            sys.stderr.write("\r" + self.line() + "\x1b[K")
            sys.stderr.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        total = f"/{self.total}" if self.total is not None else ""
        eta = ""
        if self.total and rate > 0:
            eta = f" ETA {max(self.total - self.done, 0) / rate:.0f}s"
        return f"{self.label} {self.done}{total} {rate:.1f}/s{eta} ${self.usd:.4f}"

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + self.line() + "\x1b[K\n")
            sys.stderr.flush()


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


class CallTimeout(TimeoutError):
    """The runner's own per-call limit (``runner.timeout_s``) ran out."""


def endpoint_of(judge: JudgeAPI, model: ModelConfig) -> str:
    """Where a judge's calls go, for messages."""
    url = getattr(judge, "base_url", None) or model.base_url
    return str(url) if url else f"the {model.provider} API"


def check_reliability_settings(settings: RunnerConfig) -> None:
    """Raise :class:`ConfigError` for a failure-handling setting that cannot work."""
    if not 0.0 <= settings.max_error_rate <= 1.0:
        raise ConfigError(
            f"runner.max_error_rate={settings.max_error_rate} must be between 0 and 1 "
            "(the share of failed judgments above which a cell counts as failed)"
        )
    if settings.breaker_failures < 1:
        raise ConfigError(
            f"runner.breaker_failures={settings.breaker_failures} must be at least 1 "
            "(failed calls in a row that stop a cell)"
        )
    if settings.grace_s < 0:
        raise ConfigError(f"runner.grace_s={settings.grace_s} must be 0 or more")
    if settings.claim_ttl_s <= 0:
        raise ConfigError(f"runner.claim_ttl_s={settings.claim_ttl_s} must be above 0")


@dataclass
class _Job:
    """A work item on its way to the judge."""

    item: WorkItem
    key: str
    """The request's cache key."""
    resent: int = 0
    """Earlier sends lost by stopped processes (see :class:`mmjudge.cache.Claim`)."""
    started: bool = False
    """Whether its task began (a task cancelled before that runs none of its clean-up)."""


class Runner:
    """Runs work items through one judge, yielding outcomes as they complete.

    Besides concurrency, rate limits, retries, the cache and the budget, the runner:

    - claims each request in the response cache before paying for it (``claims``), so two
      processes running the same cell never pay twice: an item another live process holds
      is set aside and its answer taken from the cache when it arrives;
    - trips a circuit breaker (:mod:`mmjudge.breaker`) when the endpoint cannot work;
    - stops cleanly on :meth:`request_stop` (Ctrl-C, SIGTERM): nothing new is scheduled,
      answers that arrive within ``runner.grace_s`` are yielded, the rest are cancelled.
    """

    def __init__(
        self,
        judge: JudgeAPI,
        model: ModelConfig,
        settings: RunnerConfig,
        cache: ResponseCache | None = None,
        cost_of_response: Callable[[JudgeResponse], float] | None = None,
        stats: RunStats | None = None,
        claims: ItemClaims | None = None,
        concurrency: int | None = None,
    ) -> None:
        """``concurrency``: calls in flight; by default what the settings give
        (:func:`mmjudge.concurrency.calls_in_flight`)."""
        self.judge = judge
        self.model = model
        self.settings = settings
        usable = settings.cache and judge.cacheable
        self.cache = cache if usable else None
        self.claims = claims if usable and cache is not None else None
        self.cost_of_response = cost_of_response or (lambda _r: 0.0)
        self.stats = stats if stats is not None else RunStats()
        if concurrency is None:
            concurrency = calls_in_flight(settings, model).calls
        concurrency = max(1, concurrency)
        self.concurrency = concurrency
        self.requests = RateLimiter(model.requests_per_minute)
        self.tokens = RateLimiter(model.tokens_per_minute)
        self.breaker = Breaker(settings.breaker_failures, endpoint_of(judge, model), model.name)
        self._in_flight_forecast = 0.0
        self._fatal: BaseException | None = None
        self._rng = random.Random(settings.seed)
        self._stop_signal: int | None = None
        self._stop_deadline = math.inf
        self._halt = asyncio.Event()
        self._queue: asyncio.Queue[Outcome | None] = asyncio.Queue()
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending = 0
        """Jobs started whose outcome is not in the queue yet."""
        self._dropped = 0

    # -- stopping --------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Calls under way."""
        return self._pending

    def request_stop(self, signal_number: int) -> bool:
        """Stop scheduling; in-flight answers that arrive within ``runner.grace_s`` are still
        yielded. A second request cancels them at once. Returns True the first time."""
        first = self._stop_signal is None
        now = time.monotonic()
        if first:
            self._stop_signal = signal_number
            self._stop_deadline = now + max(self.settings.grace_s, 0.0)
        else:
            self._stop_deadline = now
        self._halt.set()
        self._queue.put_nowait(None)  # wake the loop if it is waiting for an outcome
        return first

    def _may_schedule(self) -> bool:
        return (
            self._fatal is None and self._stop_signal is None and not self.stats.stopped_by_budget
        )

    def _fail_fast(self, error: BaseException) -> None:
        self._fatal = self._fatal or error
        self._halt.set()

    async def _cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- the loop --------------------------------------------------------------------------

    async def run(
        self, items: Iterable[WorkItem] | AsyncIterable[WorkItem]
    ) -> AsyncIterator[Outcome]:
        """Yield an outcome per item; stops early on a fatal error, the breaker, the budget
        cap or a stop request, and then raises the matching error.

        ``items`` may be asynchronous, for items whose preparation is awaited (images
        preprocessed in worker threads) rather than done on the event loop.
        """
        waiting: list[WorkItem] = []
        iterator = _next_of(items)
        exhausted = False
        next_poll = 0.0
        heartbeat = asyncio.create_task(self._heartbeat()) if self.claims is not None else None
        try:
            while True:
                # A full set of slots is waited for in _next_outcome, which a stop wakes.
                # Finished outcomes are yielded before more items are taken: an item may
                # take a while to arrive (images being prepared), and its wait must not
                # hold back the rows of calls that have finished meanwhile.
                while (
                    not exhausted
                    and self._may_schedule()
                    and not self._slots.locked()
                    and self._queue.empty()
                ):
                    item = await iterator()
                    if item is None:
                        exhausted = True
                        break
                    ready = self._admit(item, waiting)
                    if isinstance(ready, Outcome):
                        yield ready
                    elif ready is not None:
                        await self._start(ready)
                if waiting and self._may_schedule() and time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + CLAIM_POLL_S
                    async for ready_outcome in self._poll_waiting(waiting):
                        yield ready_outcome
                if not self._pending and self._queue.empty():
                    if not self._may_schedule() or (exhausted and not waiting):
                        break
                    if not waiting:
                        continue
                finished = await self._next_outcome(polling=bool(waiting))
                if finished is not None:
                    yield finished
        finally:
            await self._cancel_all()
            if heartbeat is not None:
                heartbeat.cancel()
            if self.claims is not None:
                self.claims.release_all()
        self._dropped += len(waiting)
        self._raise_stop(exhausted)

    def _admit(self, item: WorkItem, waiting: list[WorkItem]) -> Outcome | _Job | None:
        """An item's immediate outcome, the job to run for it, or None (set aside, or the
        budget stopped scheduling)."""
        if item.request is None:
            return Outcome(item, None, item.error, False, 0, 0.0)
        key = request_key(self.model, item.request) if self.cache is not None else ""
        cached = self._from_cache(item, key)
        if cached is not None:
            return cached
        if self._would_pass_budget(item):
            self.stats.stopped_by_budget = True
            return None
        if self.claims is None:
            return _Job(item, key)
        claim = self.claims.claim(key)
        if claim.state == "cached":
            assert claim.response is not None
            self.stats.cache_hits += 1
            return Outcome(item, claim.response, None, True, 0, claim.response.latency_s)
        if claim.state == "busy":
            waiting.append(item)
            return None
        return _Job(item, key, resent=claim.resent)

    async def _poll_waiting(self, waiting: list[WorkItem]) -> AsyncIterator[Outcome]:
        """Items another live process holds: take their answers when they are in the cache,
        or call them ourselves when their claims were released or expired."""
        assert self.claims is not None
        still: list[WorkItem] = []
        for index, item in enumerate(waiting):
            if not self._may_schedule() or self._slots.locked():
                still.extend(waiting[index:])
                break
            assert item.request is not None
            before = self.stats.cache_hits
            ready = self._admit(item, still)
            if isinstance(ready, Outcome):
                self.stats.from_other_process += self.stats.cache_hits - before
                yield ready
            elif isinstance(ready, _Job):
                await self._start(ready)
        waiting[:] = still

    async def _start(self, job: _Job) -> None:
        await self._slots.acquire()
        self._in_flight_forecast += job.item.expected_usd()
        self._pending += 1
        task = asyncio.create_task(self._worker(job))
        self._tasks.add(task)
        task.add_done_callback(functools.partial(self._finished, job))

    def _finished(self, job: _Job, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if job.started:
            return
        # Cancelled before it ran: the worker's own clean-up never happened.
        self._pending -= 1
        self._dropped += 1
        self._slots.release()
        self._in_flight_forecast -= job.item.expected_usd()
        self._release(job)

    async def _worker(self, job: _Job) -> None:
        job.started = True
        try:
            outcome = await self._judge_one(job)
            if outcome is None:
                self._dropped += 1
            self._queue.put_nowait(outcome)
        except asyncio.CancelledError:
            self._dropped += 1
            raise
        finally:
            self._pending -= 1
            self._slots.release()

    async def _next_outcome(self, *, polling: bool) -> Outcome | None:
        """The next finished outcome; None when woken without one (a stop, a poll due)."""
        if self._fatal is not None:
            await self._cancel_all()
            return None if self._queue.empty() else self._queue.get_nowait()
        timeout: float | None = None
        if self._stop_signal is not None:
            timeout = self._stop_deadline - time.monotonic()
            if timeout <= 0:
                await self._cancel_all()
                return None if self._queue.empty() else self._queue.get_nowait()
        if polling:
            timeout = CLAIM_POLL_S if timeout is None else min(timeout, CLAIM_POLL_S)
        if timeout is None:
            return await self._queue.get()
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None

    async def _heartbeat(self) -> None:
        assert self.claims is not None
        while True:
            await asyncio.sleep(self.claims.ttl_s / 3)
            self.claims.renew()

    def _raise_stop(self, exhausted: bool) -> None:
        if self._fatal is not None:
            raise self._fatal
        cut_short = not exhausted or self._dropped > 0
        if self._stop_signal is not None and cut_short:
            name = signal_name(self._stop_signal)
            raise Interrupted(
                f"stopped by {name}: {self._dropped} call(s) in flight were given up and will "
                "be sent again on resume",
                self._stop_signal,
            )
        if self.stats.stopped_by_budget:
            raise BudgetExceeded(
                f"stopped before passing runner.max_cost_usd={self.settings.max_cost_usd}: "
                f"spent ${self.stats.spent_usd:.4f} on {self.stats.calls} calls; raise the cap "
                "and run the same command again to resume (finished calls come from the cache)"
            )

    # -- one item --------------------------------------------------------------------------

    def _from_cache(self, item: WorkItem, key: str) -> Outcome | None:
        if self.cache is None:
            return None
        response = self.cache.get(key)
        if response is None:
            return None
        self.stats.cache_hits += 1
        return Outcome(item, response, None, True, 0, response.latency_s)

    def _would_pass_budget(self, item: WorkItem) -> bool:
        cap = self.settings.max_cost_usd
        if cap is None:
            return False
        return self.stats.spent_usd + self._in_flight_forecast + item.expected_usd() > cap

    async def _judge_one(self, job: _Job) -> Outcome | None:
        """Call the judge for one job, with retries; None when the run stopped first."""
        item = job.item
        request = item.request
        assert request is not None
        attempts = 0
        started = time.perf_counter()
        sent = False
        try:
            while True:
                attempts += 1
                await self.requests.acquire(1.0)
                await self.tokens.acquire(_token_estimate(request, self.model.max_tokens))
                if self._stopping():
                    self._release(job)
                    return None
                self._mark_sending(job, attempts)
                sent = True
                try:
                    response = await self._call(request)
                except (FatalProviderError, CredentialError) as error:
                    sent = False
                    self._fail_fast(error)
                    self._release(job)
                    return Outcome(item, None, error_text(error), False, attempts, 0.0, job.resent)
                except Exception as error:
                    sent = False
                    retry, failed = self._failed_attempt(job, error, attempts, started)
                    if not retry:
                        return failed
                    await self._pause(self._backoff(attempts, self.judge.retry_after(error)))
                    continue
                sent = False
                return self._answered(job, response, attempts)
        except asyncio.CancelledError:
            if self.claims is not None:
                if sent:
                    self.stats.abandoned += 1
                    self.claims.abandon(job.key)
                else:
                    self.claims.release(job.key)
            raise
        finally:
            self._in_flight_forecast -= item.expected_usd()

    def _stopping(self) -> bool:
        return self._stop_signal is not None or self._fatal is not None

    def _mark_sending(self, job: _Job, attempts: int) -> None:
        if attempts == 1:
            self.stats.resent += job.resent
        if self.claims is not None:
            self.claims.sending(job.key)

    async def _call(self, request: JudgeRequest) -> JudgeResponse:
        """One attempt, under the runner's own time limit."""
        limit = self.settings.timeout_s
        deadline = asyncio.timeout(limit)
        try:
            async with deadline:
                return await self.judge.generate(request)
        except TimeoutError:
            if not deadline.expired():
                raise
            raise CallTimeout(
                f"no answer within {limit:g} s (runner.timeout_s, the runner's limit on each "
                "call; raise it for a slow model)"
            ) from None

    def _failed_attempt(
        self, job: _Job, error: Exception, attempts: int, started: float
    ) -> tuple[bool, Outcome | None]:
        """After a failed attempt: ``(True, None)`` to try again, else ``(False, outcome)``
        with the item's error outcome, or None when the run is stopping (no row)."""
        text = error_text(error)
        retryable = isinstance(error, TimeoutError) or self.judge.is_retryable(error)
        will_retry = retryable and attempts <= self.settings.max_retries
        # The breaker counts failures that no retry has fixed: a failed retry, or a failure
        # that will not be retried. A burst of first attempts failing together (stale
        # keep-alive connections dropped at once) does not count until retries fail too.
        if attempts > 1 or not will_retry:
            trip = self.breaker.failure(error, text)
            if trip is not None:
                self._fail_fast(trip)
                self._release(job)
                return False, None
        if will_retry and not self._stopping():
            self.stats.retries += 1
            if self.claims is not None:
                self.claims.sending(job.key, False)
            return True, None
        if retryable and self._stopping():
            self._release(job)
            return False, None
        self.stats.failures += 1
        kind = type(error).__name__
        self.stats.errors_by_kind[kind] = self.stats.errors_by_kind.get(kind, 0) + 1
        self._release(job)
        if attempts > 1:
            text = f"{text} (after {attempts} attempts)"
        elapsed = time.perf_counter() - started
        return False, Outcome(job.item, None, text, False, attempts, elapsed, job.resent)

    def _answered(self, job: _Job, response: JudgeResponse, attempts: int) -> Outcome:
        self.breaker.success()
        self.stats.calls += 1
        usd = self.cost_of_response(response)
        self.stats.spent_usd += usd
        if job.resent:
            # The lost sends were billed too; each is priced as this one.
            self.stats.resent_usd += usd * job.resent
            self.stats.spent_usd += usd * job.resent
        if self.claims is not None:
            self.claims.complete(job.key, response)
        elif self.cache is not None:
            self.cache.put(job.key, response)
        return Outcome(job.item, response, None, False, attempts, response.latency_s, job.resent)

    def _release(self, job: _Job) -> None:
        if self.claims is not None:
            self.claims.release(job.key)

    async def _pause(self, seconds: float) -> None:
        """Back off, but wake at once when the run is stopping."""
        if self._halt.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._halt.wait(), seconds)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter, never shorter than the server's retry-after."""
        ceiling = min(
            self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** (attempt - 1)
        )
        delay = self._rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, max(self.settings.backoff_max_s, retry_after or 0.0))


def _next_of(
    items: Iterable[WorkItem] | AsyncIterable[WorkItem],
) -> Callable[[], Awaitable[WorkItem | None]]:
    """A coroutine function giving the next item, or None at the end."""
    if isinstance(items, AsyncIterable):
        async_iterator = aiter(items)

        async def next_async() -> WorkItem | None:
            return await anext(async_iterator, None)

        return next_async
    iterator = iter(items)

    async def next_sync() -> WorkItem | None:
        return next(iterator, None)

    return next_sync


def _token_estimate(request: JudgeRequest, max_tokens: int) -> float:
    """Rough tokens of a call for the tokens-per-minute limiter (4 characters a token)."""
    return len(request.prompt) / 4 + 100 * len(request.images) + max_tokens
