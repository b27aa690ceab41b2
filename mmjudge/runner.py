"""Async scheduling of judge calls: concurrency and rate limits, retries, cache, budget.

Providers only know how to make one call; everything generic happens here, once.
Records are streamed to the caller as they finish, so memory stays flat however many
judgments a run makes.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mmjudge.cache import ResponseCache, request_key
from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.errors import BudgetExceeded, CredentialError, FatalProviderError
from mmjudge.providers.base import JudgeAPI
from mmjudge.records import JudgeRequest, JudgeResponse


@dataclass
class WorkItem:
    """One judgment to make; ``error`` set means it failed before any call (e.g. bad image)."""

    key: str
    request: JudgeRequest | None
    error: str | None = None
    forecast_usd: float = 0.0
    """Expected cost of the call, used by the budget."""
    context: Any = None
    """Whatever the caller needs to turn the outcome into a record."""


@dataclass
class Outcome:
    """What happened to one work item."""

    item: WorkItem
    response: JudgeResponse | None
    error: str | None
    cached: bool
    attempts: int
    latency_s: float


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


def _error_text(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text[:300]}"


class Runner:
    """Runs work items through one judge, yielding outcomes as they complete."""

    def __init__(
        self,
        judge: JudgeAPI,
        model: ModelConfig,
        settings: RunnerConfig,
        cache: ResponseCache | None = None,
        cost_of_response: Callable[[JudgeResponse], float] | None = None,
        stats: RunStats | None = None,
    ) -> None:
        self.judge = judge
        self.model = model
        self.settings = settings
        self.cache = cache
        self.cost_of_response = cost_of_response or (lambda _r: 0.0)
        self.stats = stats if stats is not None else RunStats()
        concurrency = max(1, min(settings.concurrency, model.max_concurrency))
        self.concurrency = concurrency
        self.requests = RateLimiter(model.requests_per_minute)
        self.tokens = RateLimiter(model.tokens_per_minute)
        self._in_flight_forecast = 0.0
        self._fatal: BaseException | None = None
        self._rng = random.Random(settings.seed)

    async def run(self, items: Iterable[WorkItem]) -> AsyncIterator[Outcome]:
        """Yield an outcome per item; stops early on a fatal error or the budget cap."""
        queue: asyncio.Queue[Outcome] = asyncio.Queue()
        slots = asyncio.Semaphore(self.concurrency)
        tasks: set[asyncio.Task[None]] = set()
        pending = 0

        async def worker(item: WorkItem) -> None:
            try:
                outcome = await self._judge_one(item)
                await queue.put(outcome)
            finally:
                slots.release()

        iterator = iter(items)
        exhausted = False
        while True:
            while not exhausted and self._fatal is None and not self.stats.stopped_by_budget:
                if slots.locked() and not queue.empty():
                    break
                item = next(iterator, None)
                if item is None:
                    exhausted = True
                    break
                if item.request is None:
                    yield Outcome(item, None, item.error, False, 0, 0.0)
                    continue
                cached = self._from_cache(item)
                if cached is not None:
                    yield cached
                    continue
                if self._would_pass_budget(item):
                    self.stats.stopped_by_budget = True
                    break
                await slots.acquire()
                self._in_flight_forecast += item.forecast_usd
                task = asyncio.create_task(worker(item))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
                pending += 1
            if pending == 0:
                break
            outcome = await queue.get()
            pending -= 1
            yield outcome
        if self._fatal is not None:
            for task in list(tasks):
                task.cancel()
            raise self._fatal
        if self.stats.stopped_by_budget:
            raise BudgetExceeded(
                f"stopped before passing runner.max_cost_usd={self.settings.max_cost_usd}: "
                f"spent ${self.stats.spent_usd:.4f} on {self.stats.calls} calls; raise the cap "
                "and run the same command again to resume (finished calls come from the cache)"
            )

    def _from_cache(self, item: WorkItem) -> Outcome | None:
        if self.cache is None or not self.settings.cache or not self.judge.cacheable:
            return None
        assert item.request is not None
        response = self.cache.get(request_key(self.model, item.request))
        if response is None:
            return None
        self.stats.cache_hits += 1
        return Outcome(item, response, None, True, 0, response.latency_s)

    def _would_pass_budget(self, item: WorkItem) -> bool:
        cap = self.settings.max_cost_usd
        if cap is None:
            return False
        return self.stats.spent_usd + self._in_flight_forecast + item.forecast_usd > cap

    async def _judge_one(self, item: WorkItem) -> Outcome:
        request = item.request
        assert request is not None
        attempts = 0
        started = time.perf_counter()
        try:
            while True:
                attempts += 1
                await self.requests.acquire(1.0)
                await self.tokens.acquire(_token_estimate(request, self.model.max_tokens))
                if self._fatal is not None:
                    return Outcome(item, None, "run stopped", False, attempts, 0.0)
                try:
                    response = await asyncio.wait_for(
                        self.judge.generate(request), timeout=self.settings.timeout_s
                    )
                except (FatalProviderError, CredentialError) as error:
                    self._fatal = self._fatal or error
                    return Outcome(item, None, _error_text(error), False, attempts, 0.0)
                except Exception as error:
                    retryable = isinstance(error, TimeoutError) or self.judge.is_retryable(error)
                    if not retryable or attempts > self.settings.max_retries:
                        self.stats.failures += 1
                        kind = type(error).__name__
                        self.stats.errors_by_kind[kind] = self.stats.errors_by_kind.get(kind, 0) + 1
                        return Outcome(
                            item,
                            None,
                            _error_text(error),
                            False,
                            attempts,
                            time.perf_counter() - started,
                        )
                    self.stats.retries += 1
                    await asyncio.sleep(self._backoff(attempts, self.judge.retry_after(error)))
                    continue
                self.stats.calls += 1
                usd = self.cost_of_response(response)
                self.stats.spent_usd += usd
                if self.cache is not None and self.settings.cache and self.judge.cacheable:
                    self.cache.put(request_key(self.model, request), response)
                return Outcome(item, response, None, False, attempts, response.latency_s)
        finally:
            self._in_flight_forecast -= item.forecast_usd

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter, never shorter than the server's retry-after."""
        ceiling = min(
            self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** (attempt - 1)
        )
        delay = self._rng.uniform(ceiling / 2, ceiling)
        if retry_after is not None:
            delay = max(delay, retry_after)
        return min(delay, max(self.settings.backoff_max_s, retry_after or 0.0))


def _token_estimate(request: JudgeRequest, max_tokens: int) -> float:
    """Rough tokens of a call for the tokens-per-minute limiter (4 characters a token)."""
    return len(request.prompt) / 4 + 100 * len(request.images) + max_tokens
