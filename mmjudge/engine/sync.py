"""The sync runner: one call per item, under concurrency and rate limits, with retries,
the response cache, claims and the budget decided by the shared policy
(:mod:`mmjudge.engine.policy`).

Providers only know how to make one call; everything generic happens here, once.
Records are streamed to the caller as they finish, so memory stays flat however many
judgments a run makes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.departures import Departure, watching
from mmjudge.engine.concurrency import calls_in_flight
from mmjudge.engine.health import EndpointHealth
from mmjudge.engine.jobs import (
    SET_ASIDE,
    Job,
    LookedUp,
    SetAside,
    look_up,
    stop_error,
    token_estimate,
)
from mmjudge.engine.limits import RateLimiter
from mmjudge.engine.lost_sends import LostSends
from mmjudge.engine.policy import (
    CallPolicy,
    CallTimeout,
    Outcome,
    Pricer,
    RunStats,
    WorkItem,
    classify,
    endpoint_of,
    error_text,
)
from mmjudge.engine.response_cache import (
    MAYBE_SENT,
    SENT,
    ItemClaims,
    RequestKeys,
    ResponseCache,
)
from mmjudge.errors import CacheError, CredentialError, FatalProviderError
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.registry import is_free
from mmjudge.records import JudgeRequest, JudgeResponse
from mmjudge.speed import FAST, Speed
from mmjudge.speed.collector import quiet_collector
from mmjudge.speed.event_loop import TurnPacer

#: Seconds between looks at items another process is judging.
CLAIM_POLL_S = 0.25


T = TypeVar("T")


def next_of(
    items: Iterable[T] | AsyncIterable[T],
) -> Callable[[], Awaitable[T | None]]:
    """A coroutine function giving the next item, or None at the end."""
    if isinstance(items, AsyncIterable):
        async_iterator = aiter(items)

        async def next_async() -> T | None:
            return await anext(async_iterator, None)

        return next_async
    iterator = iter(items)

    async def next_sync() -> T | None:
        return next(iterator, None)

    return next_sync


class Runner:
    """Runs work items through one judge, yielding outcomes as they complete.

    Besides concurrency, rate limits, retries, the cache and the budget, the runner:

    - claims each request in the response cache before paying for it (``claims``), so two
      processes running the same cell never pay twice: an item another live process holds
      is set aside and its answer taken from the cache when it arrives;
    - stops the cell when the endpoint cannot work or its rate limit does not clear
      (:mod:`mmjudge.engine.health`: the circuit breaker and ``runner.rate_limit_wait_s``);
    - stops cleanly on :meth:`request_stop` (Ctrl-C, SIGTERM): nothing new is scheduled,
      answers that arrive within ``runner.grace_s`` are yielded, the rest are cancelled;
    - counts every send that may have been billed without an answer in its run folder's
      ledger as it happens (:mod:`mmjudge.engine.lost_sends`), those a killed run left in
      the folder's claims first of all, so the budget holds across stops and kills;
    - keeps the row of an answer it paid for when the response cache fails as the answer is
      stored, then stops, touching the cache no more.
    """

    def __init__(
        self,
        judge: JudgeAPI,
        model: ModelConfig,
        settings: RunnerConfig,
        cache: ResponseCache | None = None,
        price: Pricer | None = None,
        stats: RunStats | None = None,
        claims: ItemClaims | None = None,
        seed: int = 0,
        concurrency: int | None = None,
        *,
        speed: Speed = FAST,
    ) -> None:
        """``concurrency``: calls in flight; by default :func:`.concurrency.calls_in_flight`'s.
        ``speed``: whether the run uses the speed machinery, as read where it started; the
        runner hands it to the judge, its collector, its pacer and its first forecast."""
        self.judge = judge
        self.speed = speed
        judge.use_speed(speed)
        self.free = is_free(model)
        """Whether the judge runs at no charge (nothing it sends is ever billed)."""
        self.model = model
        self.settings = settings
        usable = settings.cache and judge.cacheable
        self.cache = cache if usable else None
        self.claims = claims if usable and cache is not None else None
        self.keys = RequestKeys(model)
        self.stats = stats if stats is not None else RunStats()
        self.policy = CallPolicy(settings, self.stats, self.cache, price, seed=seed, speed=speed)
        self.lost = LostSends(self.policy, self.claims, self.free, self._on_cache)
        if concurrency is None:
            concurrency = calls_in_flight(settings, model, judge.calls_to_fill).calls
        self.concurrency = concurrency = max(1, concurrency)
        self.requests = RateLimiter(model.requests_per_minute)
        self.tokens = RateLimiter(model.tokens_per_minute)
        self.health = EndpointHealth.of(settings, endpoint_of(judge, model), model.name)
        self._committed: dict[int, float] = {}
        """The forecasts of the calls under way (by job), which the budget counts."""
        self._abandoned: list[Job] = []
        """Calls given up in flight at a stop, counted once the stop has cancelled them all."""
        self._cache_failed = False
        """Whether the response cache failed (busy, not writable): the run stops, and touches
        it no more (each step would wait for its lock again)."""
        self._fatal: BaseException | None = None
        self._stop_signal: int | None = None
        self._stop_deadline = math.inf
        self._halt = asyncio.Event()
        self._queue: asyncio.Queue[Outcome | None] = asyncio.Queue()
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._pending = 0
        """Jobs started whose outcome is not in the queue yet."""
        self._dropped = 0
        self._waiting: list[WorkItem] = []
        """Items another live process holds, looked at again every :data:`CLAIM_POLL_S`."""
        self._next_item: Callable[[], Awaitable[WorkItem | None]] | None = None
        self._exhausted = False
        self._taking = asyncio.Lock()  # an asynchronous iterable gives one item at a time
        self._pacer = TurnPacer(speed)  # the loop turns every few ms while items are taken

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
        stopped = self._stop_signal is not None or self.stats.calls.stopped_by_budget
        return not (self._fatal or stopped)

    def _fail_fast(self, error: BaseException) -> None:
        self._fatal = self._fatal or error
        self._halt.set()

    async def _cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
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
        waiting = self._waiting
        self._next_item = next_of(items)
        next_poll = 0.0
        self.lost.left_behind()
        heartbeat = asyncio.create_task(self._heartbeat()) if self.claims is not None else None
        restore_collector = quiet_collector(self.speed)
        try:
            while True:
                # A full set of slots is waited for in _next_outcome, which a stop wakes.
                # Finished outcomes are yielded before more items are taken: an item may
                # take a while to arrive (images being prepared), and its wait must not
                # hold back the rows of calls that have finished meanwhile.
                while (
                    not self._exhausted
                    and self._may_schedule()
                    and not self._slots.locked()
                    and self._queue.empty()
                    and not self._taking.locked()
                ):
                    item = await self._next_entry()
                    if item is None:
                        break
                    ready = self._admit(item)
                    if isinstance(ready, Outcome):
                        yield ready
                    elif ready is not None:
                        await self._start(ready)
                    await self._pacer.turn_if_due()  # calls leave, answers land, while taking
                if waiting and self._may_schedule() and time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + CLAIM_POLL_S
                    async for ready_outcome in self._poll_waiting(waiting):
                        yield ready_outcome
                if not self._pending and self._queue.empty():
                    if not self._may_schedule() or (self._exhausted and not waiting):
                        break
                    if not waiting:
                        continue
                finished = await self._next_outcome(polling=bool(waiting))
                if finished is not None:
                    self.stats.settle()
                    yield finished
        finally:
            restore_collector()
            await self._cancel_all()
            if heartbeat is not None:
                heartbeat.cancel()
            abandoned, self._abandoned = self._abandoned, []
            self.lost.given_up(abandoned)
            self._on_cache(lambda claims: claims.release_all())
        self._dropped += len(waiting)
        self._raise_stop(self._exhausted)

    def _admit(self, entry: LookedUp, waited: bool = False) -> Outcome | Job | None:
        """An item (looked up in the cache) as its immediate outcome, the job whose worker
        will claim and call it, or None (the budget stopped scheduling)."""
        item, key, response = entry
        if item.request is None:
            return Outcome(item, None, item.error, False, 0, 0.0)
        if response is not None:
            self.stats.calls.answered_by_another_process += waited
            return self.policy.hit(item, response)
        if self.policy.over_budget(item, self._committed_usd()):
            self.stats.calls.stopped_by_budget = True
            return None
        return Job(item, key, waited=waited)

    async def _next_entry(self) -> LookedUp | None:
        """The next item looked up, or None at the end (one taker at a time)."""
        assert self._next_item is not None
        async with self._taking:
            if self._exhausted:
                return None
            item = await self._next_item()
            if item is None:
                self._exhausted = True
                return None
            return look_up(item, self.cache, self.keys)

    async def _next_job(self) -> Job | None:
        """The next job for a worker that keeps its slot (items settled without a call go
        on the queue meanwhile); None at the end, on a stop or when the budget stops it."""
        while self._may_schedule():
            entry = await self._next_entry()
            if entry is None:
                return None
            ready = self._admit(entry)
            if isinstance(ready, Outcome):
                self._queue.put_nowait(ready)
                await self._pacer.turn_if_due()
                continue
            if ready is None:
                return None
            ready.started = True
            self._commit(ready)
            return ready
        return None

    async def _poll_waiting(self, waiting: list[WorkItem]) -> AsyncIterator[Outcome]:
        """Items another live process holds: take their answers when they are in the cache,
        or call them ourselves when their claims were released or expired (a worker that
        finds the claim still held sets its item aside again)."""
        assert self.claims is not None
        todo = list(waiting)
        waiting.clear()
        for index, item in enumerate(todo):
            if not self._may_schedule() or self._slots.locked():
                waiting.extend(todo[index:])
                break
            assert item.request is not None
            ready = self._admit(look_up(item, self.cache, self.keys), waited=True)
            if isinstance(ready, Outcome):
                yield ready
            elif isinstance(ready, Job):
                await self._start(ready)

    async def _start(self, job: Job) -> None:
        await self._slots.acquire()
        self._commit(job)
        self._pending += 1
        task = asyncio.create_task(self._worker(job))
        self._tasks.add(task)
        task.add_done_callback(functools.partial(self._finished, job))

    def _finished(self, job: Job, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if job.started:
            return
        # Cancelled before it ran (and claimed nothing): its own clean-up never happened.
        self._pending -= 1
        self._dropped += 1
        self._slots.release()
        self._committed.pop(id(job), None)

    def _commit(self, job: Job) -> None:
        """Count ``job``'s call as under way in the spend the budget counts as committed."""
        job.committed_usd = self.policy.committed_usd(job.item)
        self._committed[id(job)] = job.committed_usd

    def _committed_usd(self, excluding: Job | None = None) -> float:
        """What the calls under way may cost (:meth:`CallPolicy.in_flight_usd`), ``excluding``
        one of them."""
        skip = id(excluding) if excluding is not None else None
        return self.policy.in_flight_usd(v for k, v in self._committed.items() if k != skip)

    async def _worker(self, job: Job) -> None:
        """Judge ``job``, then the next items: a slot goes from an answer to the next call
        at once (not through the runner's loop), and the runner writes the answer's row."""
        job.started = True
        current: Job | None = job
        try:
            while current is not None:
                outcome = await self._judge_one(current)
                current = None
                if isinstance(outcome, SetAside):
                    self._queue.put_nowait(None)  # wakes the loop, which polls set-aside items
                    return
                if outcome is None:
                    self._dropped += 1
                self._queue.put_nowait(outcome)
                if self._queue.qsize() > self.concurrency:  # a judge that never waits:
                    await asyncio.sleep(0)  # the runner hands the outcomes on
                current = await self._next_job()
            self._queue.put_nowait(None)  # wakes the loop: this slot is free
        except asyncio.CancelledError:
            self._dropped += current is not None
            raise
        except Exception as error:  # the response cache could not be written: stop the run
            self._dropped += current is not None
            self._cache_failed = self._cache_failed or isinstance(error, CacheError)
            self._fail_fast(error)
            self._queue.put_nowait(None)
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
        """Keep the run's claims alive; a cache that fails meanwhile stops the run (its error
        is the run's, not lost inside this task)."""
        assert self.claims is not None
        while not self._cache_failed:
            await asyncio.sleep(self.claims.ttl_s / 3)
            self._on_cache(lambda claims: claims.renew())

    def _on_cache(self, step: Callable[[ItemClaims], object]) -> None:
        """Take ``step`` on the claims, unless the cache has failed; a failure now stops the
        run with its one-line error and leaves the cache alone from here on."""
        if self.claims is None or self._cache_failed:
            return
        try:
            step(self.claims)
        except CacheError as error:
            self._cache_failed = True
            self._fail_fast(error)
            self._queue.put_nowait(None)  # wake the loop, which stops

    def _raise_stop(self, exhausted: bool) -> None:
        cap = self.settings.max_cost_usd
        error = self._fatal or stop_error(
            self._stop_signal, self._dropped, exhausted, self.stats, cap
        )
        if error is not None:
            raise error

    # -- one item --------------------------------------------------------------------------

    async def _judge_one(self, job: Job) -> Outcome | SetAside | None:
        """Call the judge for one job, with retries; None when the run stopped first. The
        outcome carries the sends of its request that may have been billed without an
        answer."""
        outcome = await self._attempts(job)
        if isinstance(outcome, Outcome):
            self.lost.not_answered(job, outcome)
        return outcome

    def _departure(self, job: Job) -> Departure:
        """What the transport says about one attempt's request: once it has left, the claim
        is marked sent."""
        if self.claims is None or not job.claimed:
            return Departure()
        return Departure(on_left=functools.partial(self._left, job.key))

    def _left(self, key: str) -> None:
        """The transport says the request of ``key`` has left: its claim is marked sent."""
        self._on_cache(lambda claims: claims.sending(key, SENT))

    def _maybe_billed(self, job: Job, sends: int = 1) -> None:
        """Count sends of the job's request that may have reached the provider unanswered."""
        if self.free or sends <= 0:
            return
        job.possibly_billed += sends
        job.possibly_billed_usd += self.policy.possibly_billed(
            job.item, sends, why="timed out or cut off after it left", keys=[job.key]
        )

    async def _attempts(self, job: Job) -> Outcome | SetAside | None:
        """The attempts of :meth:`_judge_one`."""
        item = job.item
        request = item.request
        assert request is not None
        attempts = 0
        started = time.perf_counter()
        sent = False
        departure = Departure()
        try:
            while True:
                attempts += 1
                await self.requests.acquire(1.0)
                await self.tokens.acquire(token_estimate(request, self.model.max_tokens))
                if self._stopping():
                    self._release(job)
                    return None
                instead = self._mark_sending(job, attempts)
                if instead is not None:
                    return instead
                sent = True
                departure = self._departure(job)
                try:
                    with watching(departure):
                        call = self._call(request)
                        first = attempts == 1
                        response = await (self.policy.drawn_around(item, call) if first else call)
                except (FatalProviderError, CredentialError) as error:
                    sent = False
                    self._fail_fast(error)
                    self._release(job)
                    return Outcome(item, None, error_text(error), False, attempts, 0.0, job.resent)
                except Exception as error:
                    sent = False
                    if departure.may_have_left and not _answered(error):
                        self._maybe_billed(job)  # timed out or cut off after it left
                    verdict = classify(self.judge, error)
                    if verdict.fatal is not None:
                        self._fail_fast(verdict.fatal)
                        self._release(job)
                        text = error_text(verdict.fatal)
                        return Outcome(item, None, text, False, attempts, 0.0, job.resent)
                    retry, failed = self._failed_attempt(
                        job, error, verdict.retryable, attempts, started
                    )
                    if not retry:
                        return failed
                    await self._pause(self.policy.backoff(attempts, verdict.retry_after))
                    continue
                sent = False
                return await self._answered(job, response, attempts)
        except asyncio.CancelledError:
            self._given_up(job, sent and departure.may_have_left)
            raise
        finally:
            self._committed.pop(id(job), None)

    def _given_up(self, job: Job, may_have_left: bool) -> None:
        """A call given up at a stop: a request that may have left is abandoned (possibly
        billed, counted with the others when the stop has cancelled them all:
        :meth:`LostSends.given_up`), and whoever sends it again counts the lost send as
        resent; one that never left just gives its claim back."""
        if may_have_left:
            self._abandoned.append(job)
        else:
            self._release(job)

    def _stopping(self) -> bool:
        return self._stop_signal is not None or self._fatal is not None

    def _mark_sending(self, job: Job, attempts: int) -> Outcome | SetAside | None:
        """Before each send, committed: the request claimed and marked on the wire (first
        attempt), or marked on the wire again (a retry). Instead of None, the item's outcome
        when its answer is in the cache already, or ``SET_ASIDE`` when another live process
        holds its claim."""
        if self.claims is None:
            return None
        if attempts > 1:
            self.claims.sending(job.key, MAYBE_SENT)
            return None
        price = self.policy.send_usd(job.item) if self.settings.max_cost_usd is not None else 0.0
        claim = self.claims.claim(job.key, sending=MAYBE_SENT, usd=price)
        if claim.state == "cached":
            assert claim.response is not None
            self.stats.calls.answered_by_another_process += job.waited
            return self.policy.hit(job.item, claim.response)
        if claim.state == "busy":
            self._waiting.append(job.item)
            return SET_ASIDE
        job.claimed = True
        self.lost.claimed(job, claim)
        return None

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
        self, job: Job, error: Exception, retryable: bool, attempts: int, started: float
    ) -> tuple[bool, Outcome | None]:
        """After a failed attempt: ``(True, None)`` to try again, else ``(False, outcome)``
        with the item's error outcome, or None when the run is stopping (no row)."""
        text = error_text(error)
        will_retry = retryable and attempts <= self.settings.max_retries
        stop = self.health.failure(error, text, settled=attempts > 1 or not will_retry)
        if stop is not None:
            self._fail_fast(stop)
            self._release(job)
            return False, None
        if will_retry and not self._stopping() and self._retry_over_budget(job):
            self.stats.calls.stopped_by_budget = True  # the item gets no row: resumed later
            self._release(job)
            return False, None
        if will_retry and not self._stopping():
            self.stats.calls.retries += 1
            if self.claims is not None:
                self.claims.sending(job.key, False)
            return True, None
        if retryable and self._stopping():
            self._release(job)
            return False, None
        self._release(job)
        if attempts > 1:
            text = f"{text} (after {attempts} attempts)"
        elapsed = time.perf_counter() - started
        kind = type(error).__name__
        return False, self.policy.failed(job.item, kind, text, attempts, elapsed, job.resent)

    def _retry_over_budget(self, job: Job) -> bool:
        """Whether sending ``job``'s request again could pass the budget: a retry is a send
        like a first attempt (the failed one is counted already, possibly billed when it may
        have left), checked against the other calls under way."""
        return self.policy.over_budget(job.item, self._committed_usd(excluding=job))

    async def _answered(self, job: Job, response: JudgeResponse, attempts: int) -> Outcome:
        self.health.success()
        try:
            if self._cache_failed:
                pass
            elif self.claims is not None:
                self.claims.complete(job.key, response)  # on file before the row is written
            elif self.cache is not None:
                self.cache.put(job.key, response)
        except CacheError as error:
            # Paid for: its row is written all the same (the next run does not pay again for
            # an item with a row); the run stops here, with the cache's one-line error.
            self._cache_failed = True
            self._fail_fast(error)
        # The lost sends were billed too; each is priced as this one.
        outcome = self.policy.answered(job.item, response, attempts, response.latency_s, job.resent)
        self.lost.answered(job)
        return outcome

    def _release(self, job: Job) -> None:
        if job.claimed:
            self._on_cache(lambda claims: claims.release(job.key))

    async def _pause(self, seconds: float) -> None:
        """Back off, but wake at once when the run is stopping."""
        if self._halt.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._halt.wait(), seconds)


def _answered(error: Exception) -> bool:
    """Whether a failed attempt got an answer from the server (an error status): the request
    reached it and was refused, which providers do not bill."""
    return isinstance(getattr(error, "status_code", None), int)
