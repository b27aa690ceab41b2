"""Batch mode (``runner.mode=batch``): judge requests go through the provider's batch API.

Batch APIs bill every call at a discount (half price at OpenAI and Anthropic) in return for
answers that may take up to a day. A cell in batch mode:

1. streams its work items once. Items that failed before any call, and cache hits, become
   outcomes at once; items already sitting in a submitted batch (a run that was stopped and
   started again) wait for that batch; the rest are packed into batches no larger than the
   provider's limits (or ``runner.batch_max_requests`` / ``runner.batch_max_bytes``) and
   submitted. Each batch is written to the state file as soon as the provider accepts it.
2. polls every outstanding batch each ``runner.batch_poll_s`` seconds. When one ends, its
   results are matched to the items by ``custom_id`` (providers may return them in any order),
   successful answers go into the response cache and out as outcomes, and the batch is marked
   collected.
3. resubmits items that came back failed for a reason worth another try (expired, cancelled, a
   server error) in a follow-up batch, at most ``runner.max_retries`` times, or calls them one by
   one with ``runner.batch_failed=sync``. Other failures become error rows, as in sync mode.

The state file, ``batches.json`` in the run directory (layout: :mod:`mmjudge.store.batches`),
is rewritten atomically after every change. A run started again in the same directory
(``hydra.run.dir=...``) reads it, polls the batches still marked ``submitted`` and never
submits their items again. A ``custom_id`` is a hash of the item key and of the request's
cache key (:func:`mmjudge.engine.batch_packing.custom_id`), so it fits every provider's rules
and an item whose prompt changed since it was submitted is not mistaken for the old one.

Providers take part through the small :class:`~mmjudge.judges.base.BatchJudge` protocol.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.engine.batch_packing import (
    ENVELOPE_BYTES,
    BatchCounts,
    Chunk,
    Waiting,
    custom_id,
    error_line,
    now,
    resumed_batches,
    too_large,
    without_image_data,
)
from mmjudge.engine.interrupt import signal_name
from mmjudge.engine.policy import (
    CallPolicy,
    Outcome,
    Pricer,
    RunStats,
    WorkItem,
    WorkSource,
    classify,
)
from mmjudge.engine.response_cache import RequestKeys, ResponseCache
from mmjudge.engine.sync import Runner
from mmjudge.errors import (
    BudgetExceeded,
    ConfigError,
    CredentialError,
    FatalProviderError,
    Interrupted,
)
from mmjudge.judges.base import (
    BatchItemResult,
    BatchJudge,
    BatchLimits,
    BatchPoll,
    JudgeAPI,
    check_batch_judge,
)
from mmjudge.records import JudgeResponse
from mmjudge.speed import FAST, Speed
from mmjudge.store.batches import STATE_FILE, BatchRecord, BatchState

log = logging.getLogger(__name__)


class BatchRunner:
    """Runs work items through a judge's batch API, yielding outcomes as batches finish.

    The interface matches :class:`mmjudge.engine.sync.Runner`: ``run(items)`` yields one
    :class:`Outcome` per item and ``stats`` tells what happened.

    Items waiting for a batch are kept without their image data
    (:func:`without_image_data`); to resubmit failed ones, ``run`` builds them again from its
    :class:`~mmjudge.engine.policy.WorkSource`. Cache, budget, backoff, pricing and the
    error tally are the shared :class:`~mmjudge.engine.policy.CallPolicy`.
    """

    def __init__(
        self,
        judge: JudgeAPI,
        model: ModelConfig,
        settings: RunnerConfig,
        *,
        state_path: Path,
        cache: ResponseCache | None = None,
        price: Pricer | None = None,
        discount: float = 0.5,
        stats: RunStats | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int = 0,
        speed: Speed = FAST,
    ) -> None:
        check_batch_judge(judge, model)
        assert isinstance(judge, BatchJudge)
        judge.use_speed(speed)  # before the batch API's first call builds the judge's client
        self.judge = judge
        self.api: BatchJudge = judge
        self.model = model
        self.keys = RequestKeys(model)
        self.settings = settings
        self.cache = cache if settings.cache and judge.cacheable else None
        self.discount = discount
        self.sleep = sleep
        provider_limits = judge.batch_limits
        self.limits = BatchLimits(
            max_requests=settings.batch_max_requests or provider_limits.max_requests,
            max_bytes=settings.batch_max_bytes or provider_limits.max_bytes,
        )
        self.provider = str(model.provider)
        self.base_url = str(getattr(judge, "base_url", "") or model.base_url or "")
        self.state = BatchState(state_path)
        self.stats = stats if stats is not None else RunStats()
        self.policy = CallPolicy(
            settings, self.stats, self.cache, price, discount, seed, speed=speed
        )
        self.counts = BatchCounts()
        self._committed_usd = 0.0
        self._source: WorkSource | None = None
        self._stop_signal: int | None = None
        self._halt = asyncio.Event()
        self._waiting = 0
        self._sync_runner: Runner | None = None

    # -- stopping ---------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Items waiting in submitted batches."""
        return self._waiting

    def request_stop(self, signal_number: int) -> bool:
        """Stop submitting and polling (Ctrl-C, SIGTERM). Submitted batches stay with the
        provider and in the state file; a resumed run collects them. True the first time."""
        first = self._stop_signal is None
        if first:
            self._stop_signal = signal_number
        self._halt.set()
        if self._sync_runner is not None:
            self._sync_runner.request_stop(signal_number)
        return first

    async def _pause(self, seconds: float) -> None:
        """Wait between polls, waking at once when the run is stopping."""
        if self._halt.is_set():
            return
        sleeper = asyncio.ensure_future(self.sleep(seconds))
        halted = asyncio.ensure_future(self._halt.wait())
        await asyncio.wait({sleeper, halted}, return_when=asyncio.FIRST_COMPLETED)
        for task in (sleeper, halted):
            task.cancel()

    # -- the flow ---------------------------------------------------------------------------

    async def run(self, items: WorkSource) -> AsyncIterator[Outcome]:
        """Yield an outcome per item; raises BudgetExceeded at the end if the cap stopped it."""
        self._source = items
        resumed = resumed_batches(self.state, self.provider, self.base_url)
        self.counts.batches_resumed = len(resumed)
        holder = {cid: record for record in resumed for cid in record.items}
        pending: dict[str, Waiting] = {}
        chunk = Chunk(self.limits)
        submitted_now = False
        for item in items:
            if self._stop_signal is not None:
                break
            if item.request is None:
                yield Outcome(item, None, item.error, False, 0, 0.0)
                continue
            key = self.keys(item.request)
            cached = self.policy.from_cache(item, key)
            if cached is not None:
                yield cached
                continue
            self.policy.drawn(item)
            cid = custom_id(item.key, key)
            if cid in holder:
                record = holder[cid]
                slim = without_image_data(item)
                pending[cid] = Waiting(slim, key, record.attempt, record.local_id)
                self._committed_usd += item.forecast_usd * self.discount
                continue
            if self.policy.over_budget(item, self._committed_usd):
                self.stats.calls.stopped_by_budget = True
                break
            entry = self.api.batch_entry(cid, item.request)
            if len(entry) + 1 + ENVELOPE_BYTES > self.limits.max_bytes:
                error = too_large(len(entry), self.limits.max_bytes)
                yield self.policy.failed(item, "BatchRequestTooLarge", error, 0, 0.0)
                continue
            if not chunk.fits(entry):
                await self._submit(chunk, 1, pending)
                submitted_now = True
                chunk = Chunk(self.limits)
            chunk.add(cid, item.key, entry)
            pending[cid] = Waiting(without_image_data(item), key, 1, 0)
            self._committed_usd += item.forecast_usd * self.discount
        if chunk.entries:
            await self._submit(chunk, 1, pending)
            submitted_now = True
        async for outcome in self._collect_all(pending, wait_first=submitted_now):
            yield outcome
        self.stats.calls.batch = dataclasses.asdict(self.counts)
        self._raise_stop(len(pending))

    def _raise_stop(self, n_waiting: int) -> None:
        """The error that says why the run ended early, if it did."""
        if self._stop_signal is not None:
            raise Interrupted(
                f"stopped by {signal_name(self._stop_signal)}: {n_waiting} item(s) wait in "
                f"submitted batches, which the provider keeps running; {STATE_FILE} lists them "
                "and a resumed run collects them without submitting them again",
                self._stop_signal,
            )
        if self.stats.calls.stopped_by_budget:
            raise BudgetExceeded(
                f"stopped before passing runner.max_cost_usd={self.settings.max_cost_usd}: "
                f"submitted batches expected to cost ${self._committed_usd:.4f} "
                f"(spent ${self.stats.calls.spent_usd:.4f}); raise the cap and run the same "
                "command again to resume (finished calls come from the cache)"
            )

    async def _collect_all(
        self, pending: dict[str, Waiting], *, wait_first: bool
    ) -> AsyncIterator[Outcome]:
        wait = wait_first
        while True:
            active = self.state.outstanding(self.provider, self.base_url)
            self._waiting = len(pending)
            if not active or self._stop_signal is not None:
                break
            if wait:
                await self._pause(self.settings.batch_poll_s)
                if self._stop_signal is not None:
                    break
            wait = True
            changed = False
            for record in active:
                poll: BatchPoll = await self._call(
                    f"poll batch {record.id}", functools.partial(self.api.batch_poll, record.id)
                )
                if poll.status != record.status or poll.counts != record.counts:
                    record.status, record.counts = poll.status, dict(poll.counts)
                    changed = True
                if not poll.ended:
                    continue
                record.ended_at = record.ended_at or now()
                retry: list[tuple[str, Waiting]] = []
                async for outcome in self._collect(record, poll, pending, retry):
                    yield outcome
                record.state = "collected"
                record.collected_at = now()
                record.info.update(poll.info)
                self.state.save()
                changed = False
                log.info(
                    "collected batch %s (%s): %d requests, %d to retry",
                    record.id,
                    poll.status,
                    record.n_requests,
                    len(retry),
                )
                if retry:
                    async for outcome in self._retry(retry, pending):
                        yield outcome
            if changed:
                self.state.save()
        if self._stop_signal is not None:
            return
        for cid, waiting in list(pending.items()):
            # Defensive: an item whose batch vanished from the state (edited by hand).
            del pending[cid]
            yield self._failure(waiting, "no batch holds this item any more", "BatchLost")

    async def _collect(
        self,
        record: BatchRecord,
        poll: BatchPoll,
        pending: dict[str, Waiting],
        retry: list[tuple[str, Waiting]],
    ) -> AsyncIterator[Outcome]:
        latency = max(time.time() - record.submitted_ts, 0.0)
        results = await self._call(
            f"read the results of batch {record.id}",
            lambda: _gather(self.api.batch_results(record.id, poll, latency)),
        )
        seen: set[str] = set()
        for result in results:
            cid = result.custom_id
            waiting = pending.get(cid)
            if cid in seen or cid not in record.items or waiting is None:
                continue
            if waiting.batch != record.local_id:
                continue
            seen.add(cid)
            if result.response is not None:
                del pending[cid]
                yield self._success(waiting, result.response, latency)
                continue
            outcome = self._failed(
                cid,
                waiting,
                result.error or "failed",
                result.retryable,
                result.kind or "BatchItemError",
                pending,
                retry,
            )
            if outcome is not None:
                yield outcome
        message = poll.failure or f"no result in batch {record.id} (status {poll.status})"
        retryable = poll.failure_retryable if poll.failure else True
        kind = "BatchFailed" if poll.failure else "BatchMissing"
        for cid in record.items:
            waiting = pending.get(cid)
            if cid in seen or waiting is None or waiting.batch != record.local_id:
                continue
            outcome = self._failed(cid, waiting, message, retryable, kind, pending, retry)
            if outcome is not None:
                yield outcome

    def _success(self, waiting: Waiting, response: JudgeResponse, latency: float) -> Outcome:
        response.batch = True
        response.latency_s = latency
        if self.cache is not None:
            self.cache.put(waiting.cache_key, response)
        return self.policy.answered(waiting.item, response, waiting.attempt, latency, 0)

    def _failed(
        self,
        cid: str,
        waiting: Waiting,
        message: str,
        retryable: bool,
        kind: str,
        pending: dict[str, Waiting],
        retry: list[tuple[str, Waiting]],
    ) -> Outcome | None:
        """Queue a failed item for another try, or give its final error outcome."""
        sync_fallback = self.settings.batch_failed == "sync"
        if retryable and (sync_fallback or waiting.attempt <= self.settings.max_retries):
            retry.append((cid, waiting))
            return None
        del pending[cid]
        return self._failure(waiting, message, kind)

    def _failure(self, waiting: Waiting, message: str, kind: str) -> Outcome:
        return self.policy.failed(waiting.item, kind, f"batch: {message}", waiting.attempt, 0.0)

    async def _retry(
        self, retry: list[tuple[str, Waiting]], pending: dict[str, Waiting]
    ) -> AsyncIterator[Outcome]:
        """Resubmit failed items in follow-up batches, or call them one by one."""
        by_key = {waiting.item.key: (cid, waiting) for cid, waiting in retry}
        self.stats.calls.retries += len(retry)
        assert self._source is not None
        rebuilt = [item for item in self._source.only(set(by_key)) if item.key in by_key]
        found = {item.key for item in rebuilt}
        for key, (cid, waiting) in by_key.items():
            if key not in found:
                del pending[cid]
                yield self._failure(waiting, "the item could not be rebuilt to retry", "Rebuild")
        if self.settings.batch_failed == "sync":
            for item in rebuilt:
                del pending[by_key[item.key][0]]
            async for outcome in self._sync(rebuilt):
                yield outcome
            return
        chunks: dict[int, Chunk] = {}
        for item in rebuilt:
            old_cid, waiting = by_key[item.key]
            if item.request is None:
                del pending[old_cid]
                yield Outcome(item, None, item.error, False, waiting.attempt, 0.0)
                continue
            cid = custom_id(item.key, waiting.cache_key)
            entry = self.api.batch_entry(cid, item.request)
            attempt = waiting.attempt + 1
            chunk = chunks.setdefault(attempt, Chunk(self.limits))
            if not chunk.fits(entry):
                await self._submit(chunk, attempt, pending, followup=True)
                chunk = chunks[attempt] = Chunk(self.limits)
            chunk.add(cid, item.key, entry)
            if cid != old_cid:
                del pending[old_cid]
            pending[cid] = dataclasses.replace(waiting, attempt=attempt, batch=0)
        for attempt, chunk in chunks.items():
            if chunk.entries:
                await self._submit(chunk, attempt, pending, followup=True)

    async def _sync(self, items: list[WorkItem]) -> AsyncIterator[Outcome]:
        """Call failed items one by one through the ordinary runner (``batch_failed=sync``)."""
        runner = Runner(
            self.judge,
            self.model,
            self.settings,
            cache=self.cache,
            price=self.policy.price,
            claims=(
                self.cache.claims(self.settings.claim_ttl_s, folder=self.stats.folder)
                if self.cache
                else None
            ),
            seed=self.policy.seed,
            speed=self.policy.speed,
        )
        # Its sends possibly billed go to the folder's ledger; no send is expected to cost
        # less than the dearest answer seen.
        runner.stats.folder = self.stats.folder
        runner.stats.dearest_usd = self.stats.dearest_usd
        # The runner keeps its own stats (a budget stop of the first pass must not stop it
        # before it starts); they are added to this runner's when it finishes.
        runner.stats.calls.spent_usd = self.stats.calls.spent_usd
        # The budget counts earlier runs and the sends possibly billed so far as well.
        runner.stats.spent_before_usd = (
            self.stats.spent_before_usd + self.stats.calls.possibly_billed_usd
        )
        spent_before = self.stats.calls.spent_usd
        self._sync_runner = runner
        if self._stop_signal is not None:
            runner.request_stop(self._stop_signal)
        try:
            async for outcome in runner.run(items):
                yield outcome
        except BudgetExceeded:
            # Items it did not reach get no row, so the next run picks them up.
            self.stats.calls.stopped_by_budget = True
        except Interrupted:
            pass  # this runner raises its own Interrupted when the flow ends
        finally:
            self._sync_runner = None
            self.stats.absorb(runner.stats, spent_before)

    async def _submit(
        self,
        chunk: Chunk,
        attempt: int,
        pending: dict[str, Waiting],
        *,
        followup: bool = False,
    ) -> None:
        entries = chunk.entries
        submitted = await self._call(
            f"submit a batch of {len(entries)} requests", lambda: self.api.batch_submit(entries)
        )
        where = (self.provider, self.base_url, self.model.model_id)
        record = chunk.record(self.state.next_local_id(), submitted, where, attempt)
        self.state.add(record)
        for cid in chunk.items:
            if cid in pending:
                pending[cid].batch = record.local_id
        self.counts.batches_submitted += 1
        self.counts.followup_batches += followup
        log.info(
            "submitted batch %s: %d requests, %.1f MB%s",
            submitted.id,
            len(entries),
            chunk.size / 1e6,
            f" (attempt {attempt})" if attempt > 1 else "",
        )

    async def _call(self, what: str, make: Callable[[], Awaitable[Any]]) -> Any:
        """Await ``make()``, retrying transient errors with backoff; one-line error otherwise."""
        attempts = 0
        while True:
            attempts += 1
            try:
                return await make()
            except (FatalProviderError, CredentialError, ConfigError):
                raise
            except Exception as error:
                verdict = classify(self.judge, error)
                if verdict.fatal is not None:
                    raise verdict.fatal from error
                if not verdict.retryable or attempts > self.settings.max_retries:
                    raise FatalProviderError(
                        f"model '{self.model.name}': could not {what} ({error_line(error)}); "
                        "submitted batches are kept in the run directory's "
                        f"{STATE_FILE}: run the same command with hydra.run.dir=<that "
                        "directory> to resume"
                    ) from error
                await self.sleep(self.policy.backoff(attempts, verdict.retry_after))


async def _gather(results: AsyncIterator[BatchItemResult]) -> list[BatchItemResult]:
    return [result async for result in results]
