"""Grade one item with a configured judge, through the runner a sweep uses.

:class:`Judge` wraps a provider (a :class:`~mmjudge.judges.base.JudgeAPI`, which only knows
how to make one call) with everything the sweep adds around it: the request is built by the
cell's own code (prompt, images prepared and cached), the call goes through the sync runner
(:class:`~mmjudge.engine.sync.Runner`: retries with backoff, the circuit breaker, the
response cache, the budget), its answer is priced once by the price sheet
(:class:`~mmjudge.costs.calls.CallPricer`) and turned into the row a run would write
(:func:`~mmjudge.engine.record.judgment_record`).

The provider's client lives on an event loop of the judge's own, in a background thread, so
:meth:`Judge.grade` works in a plain script and in a notebook (whose loop is already
running), and :meth:`Judge.agrade` can be awaited from any loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from mmjudge.config import SweepConfig
from mmjudge.errors import ConfigError
from mmjudge.records import JudgmentRecord, Usage

if TYPE_CHECKING:
    from mmjudge.data.schema import Example
    from mmjudge.engine.policy import RunStats
    from mmjudge.engine.response_cache import ResponseCache
    from mmjudge.engine.work import CellContext

T = TypeVar("T")

#: The ``run_id`` of the rows a :class:`Judge` makes (they belong to no run folder).
RUN_ID = "library"


@dataclass(frozen=True)
class Grade:
    """One item graded: the grade, the answer it was read from, and what the call cost."""

    label: int | None
    """The grade read from the answer (None when the call failed or the answer had none)."""
    explanation: str | None
    """The judge's reason, when the prompt asks for one."""
    raw_output: str | None
    """The judge's answer as it came back."""
    parse_error: str | None
    """Why no grade could be read from the answer."""
    error: str | None
    """Why the item got no answer (a bad image, a provider error after the retries)."""
    usage: Usage
    """Tokens as the provider reported them."""
    cost_usd: float
    """Dollars for the call at the price sheet's prices (also for an answer from the cache:
    what the judgment costs, not what this call spent)."""
    image_cost_usd: float
    """The images' share of ``cost_usd``."""
    cached: bool
    """The answer came from the response cache: no call was made."""
    latency_s: float
    """Seconds the call took (0 from the cache)."""
    record: JudgmentRecord
    """The row a run would write for this item."""


class Judge:
    """A configured judge that grades one item at a time, as a sweep's cell grades it.

    Build one with :meth:`from_config`; close it (or use it in a ``with`` block) to close
    the provider's client and the response cache. Each item is a call of its own, as
    ``runner.mode=sync`` makes them, whatever the config's mode: a batch API answers in
    hours, not per item.
    """

    def __init__(self, config: SweepConfig) -> None:
        """A judge for ``config`` (a composed config, see :func:`mmjudge.compose`).

        Raises:
            ConfigError: a judge that cannot do this cell (images for a text-only judge), a
                test-bank prompt, or a bad runner setting.
            CredentialError: the provider's key is not set.
        """
        from mmjudge.costs.output_tokens import output_tokens
        from mmjudge.costs.sheets import price_for
        from mmjudge.engine.cell import skip_reason
        from mmjudge.engine.policy import RunStats
        from mmjudge.engine.work import CellContext
        from mmjudge.images import ImageCache
        from mmjudge.judges.registry import judge_class
        from mmjudge.locations import resolve_path
        from mmjudge.speed import read_switch

        if config.prompt.bank is not None:
            raise ConfigError(
                "prompt.bank grades against a test bank, which needs the dataset's queries: "
                "run a cell (mmjudge.run_cell) instead"
            )
        config.runner.validate()
        speed = read_switch()  # once, for every call this judge makes
        judge_cls = judge_class(config.model)
        reason = skip_reason(config, judge_cls)
        if reason is not None:
            raise ConfigError(reason)
        self.config = config
        """The config the judge was built from."""
        judge = judge_cls(config.model)
        judge.check_scale(list(config.dataset.scale.grades))
        self._context: CellContext = CellContext(
            cfg=config,
            run_id=RUN_ID,
            judge=judge,
            price=price_for(config.pricing, config.model),
            image_settings=config.images,
            image_cache=ImageCache(resolve_path(config.paths.image_cache)),
            usage_per_call=judge_cls.usage_per_call(config.model),
            speed=speed,
        )
        self._context.output = output_tokens(config, iter(()))
        self._cache_path = resolve_path(config.paths.response_cache)
        self._stats: RunStats = RunStats()
        self._cache: ResponseCache | None = None
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_config(
        cls, config: SweepConfig | Sequence[str], *, config_dir: str | Path | None = None
    ) -> Judge:
        """A judge for a composed config, or for overrides composed as :func:`mmjudge.compose`
        composes them (``["model=gpt4o_mini", "modality=text"]``).

        Raises:
            ConfigError: a bad setting (see :meth:`__init__`).
            CredentialError: the provider's key is not set.
        """
        from mmjudge.api.compose import compose

        if isinstance(config, str):
            raise TypeError("give the overrides as a list: ['model=lexical']")
        typed = config if isinstance(config, SweepConfig) else compose(config, config_dir)
        return cls(typed)

    # -- grading ---------------------------------------------------------------------------

    def grade(
        self,
        query: str,
        fields: Mapping[str, str] | Sequence[tuple[str, str]] = (),
        images: Sequence[str | Path] = (),
        *,
        query_id: str = "q",
        result_id: str = "r",
    ) -> Grade:
        """Grade one result for ``query``: its text ``fields`` (name → text, in display
        order) and ``images`` (file paths, relative to the working folder, or URLs), as the
        cell's modality shows them.

        A per-item failure (a missing image, an error after the retries, an answer without a
        grade) is returned in the :class:`Grade`, as a run keeps it in its row.

        Raises:
            BudgetExceeded: ``runner.max_cost_usd`` is spent (counted over the judge's life).
            FatalProviderError: an error no retry can fix (a rejected key, an unknown model),
                or the circuit breaker tripped.
        """
        return self._on_loop(self._grade(query, fields, images, query_id, result_id)).result()

    async def agrade(
        self,
        query: str,
        fields: Mapping[str, str] | Sequence[tuple[str, str]] = (),
        images: Sequence[str | Path] = (),
        *,
        query_id: str = "q",
        result_id: str = "r",
    ) -> Grade:
        """:meth:`grade`, awaitable; up to the runner's calls in flight run at once when
        several are awaited together (``asyncio.gather``).

        Raises:
            BudgetExceeded, FatalProviderError: as :meth:`grade`.
        """
        job = self._on_loop(self._grade(query, fields, images, query_id, result_id))
        return await asyncio.wrap_future(job)

    @property
    def spent_usd(self) -> float:
        """Dollars spent on calls so far (answers from the cache cost nothing here)."""
        return self._stats.calls.spent_usd

    @property
    def possibly_billed_usd(self) -> float:
        """Dollars that calls given up after their request left (a timeout) may have cost,
        each at its forecast: a possible extra beside :attr:`spent_usd`, not part of it."""
        return self._stats.calls.possibly_billed_usd

    @property
    def calls(self) -> int:
        """Calls made so far (retries included)."""
        return self._stats.calls.api_calls

    @property
    def cache_hits(self) -> int:
        """Items answered from the response cache so far."""
        return self._stats.calls.cache_hits

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the provider's client and the response cache, and stop the judge's loop.
        Grading after this raises :class:`RuntimeError`."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
            self._closed = True
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self._aclose(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- on the judge's loop ---------------------------------------------------------------

    def _on_loop(self, job: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``job`` on the judge's loop (started on first use); returns its future."""
        with self._lock:
            if self._closed:
                job.close()
                raise RuntimeError("this judge is closed")
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="mmjudge-judge", daemon=True
                )
                self._thread.start()
            return asyncio.run_coroutine_threadsafe(job, self._loop)

    async def _grade(
        self,
        query: str,
        fields: Mapping[str, str] | Sequence[tuple[str, str]],
        images: Sequence[str | Path],
        query_id: str,
        result_id: str,
    ) -> Grade:
        from mmjudge.costs.calls import CallPricer
        from mmjudge.engine.concurrency import calls_in_flight
        from mmjudge.engine.record import judgment_record
        from mmjudge.engine.sync import Runner
        from mmjudge.engine.work import build_work

        cfg = self.config
        if self._slots is None:
            judge = self._context.judge
            fill = judge.calls_to_fill if judge is not None else None
            in_flight = calls_in_flight(cfg.runner, cfg.model, fill)
            self._slots = asyncio.Semaphore(max(1, in_flight.calls))
        example = _example(query, fields, images, query_id, result_id)
        [item] = build_work(self._context, [example], set())
        async with self._slots:
            assert self._context.judge is not None
            runner = Runner(
                self._context.judge,
                cfg.model,
                cfg.runner,
                cache=self._open_cache(),
                price=CallPricer(self._context.price, cfg.model, cfg.pricing.batch_discount),
                stats=self._stats,
                seed=cfg.seed,
                concurrency=1,
                speed=self._context.speed,
            )
            outcomes = [outcome async for outcome in runner.run([item])]
        record = judgment_record(self._context, outcomes[-1])
        return Grade(
            label=record.label,
            explanation=record.explanation,
            raw_output=record.raw_output,
            parse_error=record.parse_error,
            error=record.error,
            usage=Usage.from_dict(record.usage),
            cost_usd=record.cost_usd,
            image_cost_usd=record.image_cost_usd,
            cached=record.cached,
            latency_s=record.latency_s,
            record=record,
        )

    def _open_cache(self) -> ResponseCache | None:
        """The response cache, opened on the judge's loop (where it is used), or None when
        it is off or the judge's answers are not cached."""
        from mmjudge.engine.response_cache import ResponseCache

        judge = self._context.judge
        if self._cache is None and self.config.runner.cache and judge and judge.cacheable:
            self._cache = ResponseCache(self._cache_path)
        return self._cache

    async def _aclose(self) -> None:
        assert self._context.judge is not None
        await self._context.judge.aclose()
        if self._cache is not None:
            self._cache.close()
            self._cache = None


def _example(
    query: str,
    fields: Mapping[str, str] | Sequence[tuple[str, str]],
    images: Sequence[str | Path],
    query_id: str,
    result_id: str,
) -> Example:
    """The item as a dataset row: images as absolute paths (relative ones against the working
    folder) or URLs, their names as given."""
    from mmjudge.data.schema import Example

    pairs = tuple(fields.items()) if isinstance(fields, Mapping) else tuple(fields)
    shown = tuple(str(image) for image in images)
    located = tuple(
        text if text.startswith(("http://", "https://")) else str(Path(text).expanduser().resolve())
        for text in shown
    )
    return Example(
        query_id=query_id,
        query=query,
        result_id=result_id,
        fields=tuple((str(name), str(value)) for name, value in pairs),
        images=located,
        image_names=shown,
    )
