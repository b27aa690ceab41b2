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

The state file, ``batches.json`` in the run directory, is rewritten atomically after every
change::

    {
      "schema_version": 1,
      "batches": [
        {
          "local_id": 1,                   # order of submission in this run directory
          "id": "batch_abc",               # the provider's batch id
          "provider": "openai",
          "base_url": "https://api.openai.com/v1",
          "model_id": "gpt-4o-2024-08-06",
          "attempt": 1,                    # 1 for first submissions, 2+ for follow-ups
          "state": "submitted",            # "submitted" until the results are written
          "status": "in_progress",         # the provider's last reported status
          "counts": {...},                 # the provider's last reported request counts
          "n_requests": 5, "n_bytes": 5120,
          "submitted_at": "2026-01-01T12:00:00+00:00", "submitted_ts": 1767268800.0,
          "ended_at": null, "collected_at": null,
          "info": {"input_file_id": "file-..."},   # provider-specific ids
          "items": {"mmj-3f2a...": "q01\\tp017"}   # custom_id -> item key (query \\t result)
        }
      ]
    }

A run started again in the same directory (``hydra.run.dir=...``) reads it, polls the batches
still marked ``submitted`` and never submits their items again. A ``custom_id`` is a hash of
the item key and of the request's cache key (see :func:`custom_id`), so it fits every
provider's rules (Anthropic: ``^[a-zA-Z0-9_-]{1,64}$``) and an item whose prompt changed since
it was submitted is not mistaken for the old one.

Providers take part through the small :class:`BatchJudge` protocol: build one request line,
submit lines, poll, and read results. Splitting, state, polling, retries and the cache live
here, once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from mmjudge.cache import ResponseCache, request_key
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
from mmjudge.records import JudgeRequest, JudgeResponse, sha256_text
from mmjudge.runner import Outcome, Runner, RunStats, WorkItem

log = logging.getLogger(__name__)

STATE_FILE = "batches.json"
STATE_SCHEMA_VERSION = 1
MODES = ("sync", "batch")
FAILED_MODES = ("batch", "sync")

#: Prefix of every ``custom_id`` (the rest is 40 hex digits: 44 characters in all).
CUSTOM_ID_PREFIX = "mmj-"

#: Bytes kept free under a byte limit for the envelope around the request lines.
ENVELOPE_BYTES = 1024


@dataclass(frozen=True)
class BatchLimits:
    """The most one batch may hold."""

    max_requests: int
    """Requests per batch."""
    max_bytes: int
    """Bytes of request lines per batch (the input file, or the create request's body)."""


@dataclass
class SubmittedBatch:
    """What the provider said when it accepted a batch."""

    id: str
    """The provider's batch id."""
    status: str
    """Its status right after creation."""
    info: dict[str, Any] = field(default_factory=dict)
    """Provider-specific ids worth keeping (OpenAI: the input file)."""


@dataclass
class BatchPoll:
    """One look at a submitted batch."""

    status: str
    """The provider's status word."""
    ended: bool
    """True once no item will change any more (completed, expired, cancelled, failed)."""
    counts: dict[str, int] = field(default_factory=dict)
    """The provider's request counts."""
    info: dict[str, Any] = field(default_factory=dict)
    """Provider-specific ids needed to read the results (OpenAI: output and error files)."""
    failure: str | None = None
    """Why the whole batch failed, when it did; items without a result get this message."""
    failure_retryable: bool = True
    """Whether items of a failed batch are worth submitting again."""


@dataclass
class BatchItemResult:
    """The result of one item of a batch."""

    custom_id: str
    """The id the item was submitted under."""
    response: JudgeResponse | None
    """The answer, or None when the item failed."""
    error: str | None = None
    """Why the item failed (one line)."""
    retryable: bool = False
    """Whether submitting the item again could succeed (expired, server error, rate limit)."""
    kind: str = ""
    """A short name for the failure, counted in the summary's ``errors_by_kind``."""


@runtime_checkable
class BatchJudge(Protocol):
    """What a judge implements to be used in batch mode."""

    batch_limits: BatchLimits

    def batch_entry(self, custom_id: str, request: JudgeRequest) -> bytes:
        """One request in the provider's batch format, JSON-encoded on one line."""
        ...

    async def batch_submit(self, entries: Sequence[bytes]) -> SubmittedBatch:
        """Create a batch from ``batch_entry`` lines."""
        ...

    async def batch_poll(self, batch_id: str) -> BatchPoll:
        """The batch's current status."""
        ...

    def batch_results(
        self, batch_id: str, poll: BatchPoll, latency_s: float
    ) -> AsyncIterator[BatchItemResult]:
        """The results of an ended batch, in whatever order the provider gives them."""
        ...


def custom_id(item_key: str, request_cache_key: str) -> str:
    """The id an item is submitted under: a hash of its key and of its request's cache key.

    Item keys hold tabs and arbitrary dataset ids, which providers do not accept, so they are
    hashed; the mapping back is kept in the state file.
    """
    return CUSTOM_ID_PREFIX + sha256_text(f"{item_key}\n{request_cache_key}")[:40]


def batch_discount(price_discount: float | None, sheet_discount: float) -> float:
    """The fraction of the list price paid in batch mode (the model's own, else the sheet's)."""
    return price_discount if price_discount is not None else sheet_discount


def check_settings(settings: RunnerConfig) -> None:
    """Raise :class:`ConfigError` for a mode or batch setting that cannot work."""
    if settings.mode not in MODES:
        raise ConfigError(f"runner.mode='{settings.mode}' must be one of: {', '.join(MODES)}")
    if settings.mode != "batch":
        return
    if settings.batch_failed not in FAILED_MODES:
        raise ConfigError(
            f"runner.batch_failed='{settings.batch_failed}' must be one of: "
            f"{', '.join(FAILED_MODES)}"
        )
    if settings.batch_poll_s <= 0:
        raise ConfigError(f"runner.batch_poll_s={settings.batch_poll_s} must be above 0")
    for name in ("batch_max_requests", "batch_max_bytes"):
        value = getattr(settings, name)
        if value is not None and value < 1:
            raise ConfigError(f"runner.{name}={value} must be at least 1 (or null)")


def check_judge(judge: JudgeAPI, model: ModelConfig) -> None:
    """Raise :class:`ConfigError` when ``judge`` has no batch API."""
    if not isinstance(judge, BatchJudge):
        raise ConfigError(
            f"model '{model.name}' (provider {model.provider}) has no batch API in mmjudge; "
            "use runner.mode=sync"
        )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _error_text(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text[:300]}"


# --- the state file ------------------------------------------------------------------------


@dataclass
class BatchRecord:
    """One submitted batch, as kept in the state file (see the module doc)."""

    local_id: int
    id: str
    provider: str
    base_url: str
    model_id: str
    attempt: int
    items: dict[str, str]
    n_requests: int
    n_bytes: int
    submitted_at: str
    submitted_ts: float
    state: str = "submitted"
    status: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    ended_at: str | None = None
    collected_at: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


class BatchState:
    """The batches of one run directory, saved to ``batches.json`` after every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches: list[BatchRecord] = []
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.batches = [BatchRecord.from_dict(b) for b in data.get("batches", [])]
            except (ValueError, TypeError, AttributeError) as error:
                raise ConfigError(
                    f"{path} cannot be read ({error}); it lists the batches this run submitted: "
                    "repair it, or remove it to submit every unfinished item again"
                ) from None

    def outstanding(self, provider: str, base_url: str) -> list[BatchRecord]:
        """Batches of this provider and endpoint whose results are not written yet."""
        return [
            b
            for b in self.batches
            if b.state == "submitted" and b.provider == provider and b.base_url == base_url
        ]

    def add(self, record: BatchRecord) -> None:
        self.batches.append(record)
        self.save()

    def next_local_id(self) -> int:
        return max((b.local_id for b in self.batches), default=0) + 1

    def save(self) -> None:
        """Write the state atomically: a kill at any moment leaves the old or the new file."""
        data = {
            "schema_version": STATE_SCHEMA_VERSION,
            "batches": [dataclasses.asdict(b) for b in self.batches],
        }
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)


# --- the runner ----------------------------------------------------------------------------


@dataclass
class BatchCounts:
    """What batch mode did, besides the :class:`RunStats` every runner keeps."""

    batches_submitted: int = 0
    """Batches submitted by this process (follow-ups included)."""
    batches_resumed: int = 0
    """Batches found outstanding in the state file when the run started."""
    followup_batches: int = 0
    """Batches that resubmitted failed items."""


@dataclass
class _Waiting:
    """An item whose answer is expected from a batch."""

    item: WorkItem
    cache_key: str
    attempt: int
    batch: int
    """``local_id`` of the batch that holds it."""


@dataclass
class _Chunk:
    """Request lines collected for one batch."""

    limits: BatchLimits
    entries: list[bytes] = field(default_factory=list)
    items: dict[str, str] = field(default_factory=dict)
    size: int = 0

    def fits(self, entry: bytes) -> bool:
        if not self.entries:
            return True
        if len(self.entries) >= self.limits.max_requests:
            return False
        return self.size + len(entry) + 1 + ENVELOPE_BYTES <= self.limits.max_bytes

    def add(self, cid: str, key: str, entry: bytes) -> None:
        self.entries.append(entry)
        self.items[cid] = key
        self.size += len(entry) + 1


class BatchRunner:
    """Runs work items through a judge's batch API, yielding outcomes as batches finish.

    The interface matches :class:`mmjudge.runner.Runner`: ``run(items)`` yields one
    :class:`Outcome` per item and ``stats`` tells what happened.

    ``rebuild`` turns a set of item keys back into full work items (images included); it is
    used to resubmit failed items, because items waiting for a batch are kept in memory only
    in the slimmer form ``shrink`` gives them.
    """

    def __init__(
        self,
        judge: JudgeAPI,
        model: ModelConfig,
        settings: RunnerConfig,
        *,
        state_path: Path,
        rebuild: Callable[[set[str]], Iterable[WorkItem]],
        cache: ResponseCache | None = None,
        cost_of_response: Callable[[JudgeResponse], float] | None = None,
        discount: float = 0.5,
        shrink: Callable[[WorkItem], WorkItem] | None = None,
        stats: RunStats | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        check_settings(settings)
        check_judge(judge, model)
        assert isinstance(judge, BatchJudge)
        self.judge = judge
        self.api: BatchJudge = judge
        self.model = model
        self.settings = settings
        self.cache = cache if settings.cache and judge.cacheable else None
        self.cost_of_response = cost_of_response or (lambda _r: 0.0)
        self.discount = discount
        self.rebuild = rebuild
        self.shrink = shrink or (lambda item: item)
        self.sleep = sleep
        provider_limits = judge.batch_limits
        self.limits = BatchLimits(
            max_requests=settings.batch_max_requests or provider_limits.max_requests,
            max_bytes=settings.batch_max_bytes or provider_limits.max_bytes,
        )
        self.provider = str(getattr(judge, "provider_name", "") or judge.provider)
        self.base_url = str(getattr(judge, "base_url", "") or model.base_url or "")
        self.state = BatchState(state_path)
        self.stats = stats if stats is not None else RunStats()
        self.counts = BatchCounts()
        self._committed_usd = 0.0
        self._rng = random.Random(settings.seed)
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

    async def run(self, items: Iterable[WorkItem]) -> AsyncIterator[Outcome]:
        """Yield an outcome per item; raises BudgetExceeded at the end if the cap stopped it."""
        resumed = self.state.outstanding(self.provider, self.base_url)
        self.counts.batches_resumed = len(resumed)
        elsewhere = [b for b in self.state.batches if b.state == "submitted" and b not in resumed]
        if elsewhere:
            log.warning(
                "%d submitted batch(es) in %s belong to another provider or base URL and are "
                "left alone; their items are submitted again here",
                len(elsewhere),
                self.state.path,
            )
        holder: dict[str, BatchRecord] = {}
        for record in resumed:
            for cid in record.items:
                holder[cid] = record
        if resumed:
            log.info(
                "resuming %d submitted batch(es) of %d requests",
                len(resumed),
                sum(b.n_requests for b in resumed),
            )
        pending: dict[str, _Waiting] = {}
        chunk = _Chunk(self.limits)
        submitted_now = False
        for item in items:
            if self._stop_signal is not None:
                break
            if item.request is None:
                yield Outcome(item, None, item.error, False, 0, 0.0)
                continue
            key = request_key(self.model, item.request)
            cached = self._from_cache(item, key)
            if cached is not None:
                yield cached
                continue
            cid = custom_id(item.key, key)
            if cid in holder:
                record = holder[cid]
                pending[cid] = _Waiting(self.shrink(item), key, record.attempt, record.local_id)
                self._committed_usd += item.expected_usd() * self.discount
                continue
            if self._would_pass_budget(item):
                self.stats.stopped_by_budget = True
                break
            entry = self.api.batch_entry(cid, item.request)
            if len(entry) + 1 + ENVELOPE_BYTES > self.limits.max_bytes:
                yield self._too_large(item, len(entry))
                continue
            if not chunk.fits(entry):
                await self._submit(chunk, 1, pending)
                submitted_now = True
                chunk = _Chunk(self.limits)
            chunk.add(cid, item.key, entry)
            pending[cid] = _Waiting(self.shrink(item), key, 1, 0)
            self._committed_usd += item.expected_usd() * self.discount
        if chunk.entries:
            await self._submit(chunk, 1, pending)
            submitted_now = True
        async for outcome in self._collect_all(pending, wait_first=submitted_now):
            yield outcome
        self.stats.batch = dataclasses.asdict(self.counts)
        if self._stop_signal is not None:
            raise Interrupted(
                f"stopped by {signal_name(self._stop_signal)}: {len(pending)} item(s) wait in "
                f"submitted batches, which the provider keeps running; {STATE_FILE} lists them "
                "and a resumed run collects them without submitting them again",
                self._stop_signal,
            )
        if self.stats.stopped_by_budget:
            raise BudgetExceeded(
                f"stopped before passing runner.max_cost_usd={self.settings.max_cost_usd}: "
                f"submitted batches expected to cost ${self._committed_usd:.4f} "
                f"(spent ${self.stats.spent_usd:.4f}); raise the cap and run the same command "
                "again to resume (finished calls come from the cache)"
            )

    async def _collect_all(
        self, pending: dict[str, _Waiting], *, wait_first: bool
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
                record.ended_at = record.ended_at or _now()
                retry: list[tuple[str, _Waiting]] = []
                async for outcome in self._collect(record, poll, pending, retry):
                    yield outcome
                record.state = "collected"
                record.collected_at = _now()
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
        pending: dict[str, _Waiting],
        retry: list[tuple[str, _Waiting]],
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

    def _success(self, waiting: _Waiting, response: JudgeResponse, latency: float) -> Outcome:
        response.batch = True
        response.latency_s = latency
        self.stats.calls += 1
        self.stats.spent_usd += self.cost_of_response(response)
        if self.cache is not None:
            self.cache.put(waiting.cache_key, response)
        return Outcome(waiting.item, response, None, False, waiting.attempt, latency)

    def _failed(
        self,
        cid: str,
        waiting: _Waiting,
        message: str,
        retryable: bool,
        kind: str,
        pending: dict[str, _Waiting],
        retry: list[tuple[str, _Waiting]],
    ) -> Outcome | None:
        """Queue a failed item for another try, or give its final error outcome."""
        sync_fallback = self.settings.batch_failed == "sync"
        if retryable and (sync_fallback or waiting.attempt <= self.settings.max_retries):
            retry.append((cid, waiting))
            return None
        del pending[cid]
        return self._failure(waiting, message, kind)

    def _failure(self, waiting: _Waiting, message: str, kind: str) -> Outcome:
        self.stats.failures += 1
        self.stats.errors_by_kind[kind] = self.stats.errors_by_kind.get(kind, 0) + 1
        return Outcome(waiting.item, None, f"batch: {message}", False, waiting.attempt, 0.0)

    async def _retry(
        self, retry: list[tuple[str, _Waiting]], pending: dict[str, _Waiting]
    ) -> AsyncIterator[Outcome]:
        """Resubmit failed items in follow-up batches, or call them one by one."""
        by_key = {waiting.item.key: (cid, waiting) for cid, waiting in retry}
        self.stats.retries += len(retry)
        rebuilt = [item for item in self.rebuild(set(by_key)) if item.key in by_key]
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
        chunks: dict[int, _Chunk] = {}
        for item in rebuilt:
            old_cid, waiting = by_key[item.key]
            if item.request is None:
                del pending[old_cid]
                yield Outcome(item, None, item.error, False, waiting.attempt, 0.0)
                continue
            cid = custom_id(item.key, waiting.cache_key)
            entry = self.api.batch_entry(cid, item.request)
            attempt = waiting.attempt + 1
            chunk = chunks.setdefault(attempt, _Chunk(self.limits))
            if not chunk.fits(entry):
                await self._submit(chunk, attempt, pending, followup=True)
                chunk = chunks[attempt] = _Chunk(self.limits)
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
            cost_of_response=self.cost_of_response,
            claims=self.cache.claims(self.settings.claim_ttl_s) if self.cache else None,
        )
        # The runner keeps its own stats (a budget stop of the first pass must not stop it
        # before it starts); they are added to this runner's when it finishes.
        runner.stats.spent_usd = self.stats.spent_usd
        spent_before = self.stats.spent_usd
        self._sync_runner = runner
        if self._stop_signal is not None:
            runner.request_stop(self._stop_signal)
        try:
            async for outcome in runner.run(items):
                yield outcome
        except BudgetExceeded:
            # Items it did not reach get no row, so the next run picks them up.
            self.stats.stopped_by_budget = True
        except Interrupted:
            pass  # this runner raises its own Interrupted when the flow ends
        finally:
            self._sync_runner = None
            sync = runner.stats
            for name in ("calls", "cache_hits", "retries", "failures", "resent", "abandoned"):
                setattr(self.stats, name, getattr(self.stats, name) + getattr(sync, name))
            self.stats.from_other_process += sync.from_other_process
            self.stats.resent_usd += sync.resent_usd
            self.stats.spent_usd += sync.spent_usd - spent_before
            for kind, n in sync.errors_by_kind.items():
                self.stats.errors_by_kind[kind] = self.stats.errors_by_kind.get(kind, 0) + n

    async def _submit(
        self,
        chunk: _Chunk,
        attempt: int,
        pending: dict[str, _Waiting],
        *,
        followup: bool = False,
    ) -> None:
        entries = chunk.entries
        submitted = await self._call(
            f"submit a batch of {len(entries)} requests", lambda: self.api.batch_submit(entries)
        )
        record = BatchRecord(
            local_id=self.state.next_local_id(),
            id=submitted.id,
            provider=self.provider,
            base_url=self.base_url,
            model_id=self.model.model_id,
            attempt=attempt,
            items=dict(chunk.items),
            n_requests=len(entries),
            n_bytes=chunk.size,
            submitted_at=_now(),
            submitted_ts=time.time(),
            status=submitted.status,
            info=dict(submitted.info),
        )
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

    # -- helpers ----------------------------------------------------------------------------

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
        expected = item.expected_usd() * self.discount
        return self.stats.spent_usd + self._committed_usd + expected > cap

    def _too_large(self, item: WorkItem, size: int) -> Outcome:
        self.stats.failures += 1
        kind = "BatchRequestTooLarge"
        self.stats.errors_by_kind[kind] = self.stats.errors_by_kind.get(kind, 0) + 1
        error = (
            f"batch: the request is {size:,} bytes, more than a batch may hold "
            f"({self.limits.max_bytes:,}; runner.batch_max_bytes); run it with runner.mode=sync"
        )
        return Outcome(item, None, error, False, 0, 0.0)

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
                retryable = isinstance(error, TimeoutError) or self.judge.is_retryable(error)
                if not retryable or attempts > self.settings.max_retries:
                    raise FatalProviderError(
                        f"model '{self.model.name}': could not {what} ({_error_text(error)}); "
                        "submitted batches are kept in the run directory's "
                        f"{STATE_FILE}: run the same command with hydra.run.dir=<that "
                        "directory> to resume"
                    ) from error
                await self.sleep(self._backoff(attempts, self.judge.retry_after(error)))

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        ceiling = min(
            self.settings.backoff_max_s, self.settings.backoff_base_s * 2 ** (attempt - 1)
        )
        delay = self._rng.uniform(ceiling / 2, ceiling)
        return max(delay, retry_after) if retry_after is not None else delay


async def _gather(results: AsyncIterator[BatchItemResult]) -> list[BatchItemResult]:
    return [result async for result in results]
