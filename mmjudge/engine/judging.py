"""The cell's judging stage: its pending items through the runner of its mode (sync or
batch), with the stop signals, the response cache and the image pool around the calls; or,
for a dry run, its forecast instead."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from mmjudge.config import SweepConfig
from mmjudge.config.names import cell_display_name
from mmjudge.costs.calls import CallPricer
from mmjudge.costs.ledger import batch_factor
from mmjudge.data.schema import Example
from mmjudge.data.survey import (
    DatasetSurvey,
)
from mmjudge.engine.batch import BatchRunner
from mmjudge.engine.concurrency import calls_in_flight, first_line, fit_open_files
from mmjudge.engine.earlier import earlier_runs
from mmjudge.engine.images_pool import PREPARE_AHEAD
from mmjudge.engine.interrupt import signal_name, signal_number_of, stop_signals
from mmjudge.engine.passages import PassageSplitter
from mmjudge.engine.per_entry import EntryCollector
from mmjudge.engine.policy import Outcome, RunStats, WorkItem
from mmjudge.engine.progress import Progress
from mmjudge.engine.record import judgment_record
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.engine.stages import JudgedCell, PreparedCell
from mmjudge.engine.stop_line import stop_line
from mmjudge.engine.sync import Runner
from mmjudge.engine.work import (
    CellContext,
    Requests,
    build_work,
    image_pool,
    sample_of,
)
from mmjudge.errors import (
    BudgetExceeded,
    FatalProviderError,
    Interrupted,
    MMJudgeError,
)
from mmjudge.judges.base import check_batch_judge
from mmjudge.locations import resolve_path
from mmjudge.records import Forecast
from mmjudge.speed.event_loop import run_on_fast_loop
from mmjudge.store import (
    appending_rows,
    judgments_path,
    keep_finished_rows,
)
from mmjudge.store.batches import STATE_FILE
from mmjudge.store.forecast_file import CellForecast, TextCut, write_forecast
from mmjudge.store.log import say
from mmjudge.store.rows import SAMPLES, RowWriter


def judge_cell(prepared: PreparedCell) -> JudgedCell:
    """Judge the cell's pending items through the runner of its mode, each outcome's row
    written as it comes (:func:`~mmjudge.engine.record.judgment_record`); whichever way
    it ended, what the summary needs of it."""
    context = prepared.context
    cfg = context.cfg
    records_path = judgments_path(prepared.run_dir)
    done = keep_finished_rows(prepared.run_dir)
    if cfg.runner.samples > 1:
        done |= keep_finished_rows(prepared.run_dir, SAMPLES)
    name = cell_display_name(
        cfg.dataset.name, cfg.model.name, cfg.modality.name, cfg.prompt.id, cfg.perturb.name
    )
    progress = Progress(name, prepared.n_items - len(done), cfg.runner.progress)
    stats = earlier_runs(prepared.run_dir)  # the budget and the possibly billed sends span runs
    stop: MMJudgeError | None = None
    refused = False
    try:
        run_on_fast_loop(
            _run(context, prepared.examples, done, records_path, progress, stats), context.speed
        )
    except (BudgetExceeded, FatalProviderError, Interrupted) as error:
        # The cell stopped after calls began: keep what was judged and say why it stopped.
        stop = error
    except KeyboardInterrupt as error:
        number = signal_number_of(error)
        stop = Interrupted(f"stopped by {signal_name(number)}", number)
    except MMJudgeError as error:
        # A setting or key found wrong as the calls were about to start.
        stop, refused = error, True
    forecast = dataclasses.replace(stats.forecast, output_basis=context.output.basis)
    if cfg.runner.mode == "batch":
        # At batch prices, like the calls it forecasts.
        forecast = batch_forecast(forecast, batch_discount(context))
    return JudgedCell(calls=stats.calls, forecast=forecast, stop=stop, refused=refused)


def forecast_cell(prepared: PreparedCell) -> CellForecast:
    """Forecast the cell without calling anything (``runner.dry_run``); writes
    ``forecast.json``."""
    context = prepared.context
    examples = prepared.examples
    run_dir = prepared.run_dir
    forecast = Forecast(output_basis=context.output.basis)
    seen = DatasetSurvey()  # what the text cap cuts, counted on the prepared items

    def counted() -> Iterator[Example]:
        for example in examples:
            seen.add(example)
            yield example

    with image_pool(context) as pool:
        for item in build_work(context, counted(), set(), pool):
            if item.request is not None:
                forecast.add(item.expected())
    cfg = context.cfg
    factor = batch_discount(context)
    planned = CellForecast(
        dataset=cfg.dataset.name,
        model=cfg.model.name,
        model_id=cfg.model.model_id,
        modality=cfg.modality.name,
        prompt_id=cfg.prompt.id,
        pricing_sheet=cfg.pricing.date,
        sync=forecast,
        batch=batch_forecast(forecast, factor),
        batch_discount=factor,
        text_cut=TextCut(cfg.dataset.max_text_tokens, seen.truncated, seen.tokens_removed),
        perturb=cfg.perturb.name,
    )
    write_forecast(run_dir, planned)
    return planned


def skipped_forecast(cfg: SweepConfig, run_dir: Path, reason: str) -> CellForecast:
    """The forecast of a cell that cannot run (no call, no cost; ``skip_reason`` says why),
    written to ``forecast.json`` as every dry run's is."""
    nothing = Forecast()
    planned = CellForecast(
        dataset=cfg.dataset.name,
        model=cfg.model.name,
        model_id=cfg.model.model_id,
        modality=cfg.modality.name,
        prompt_id=cfg.prompt.id,
        pricing_sheet=cfg.pricing.date,
        sync=nothing,
        batch=nothing,
        batch_discount=1.0,
        perturb=cfg.perturb.name,
        skip_reason=reason,
    )
    write_forecast(run_dir, planned)
    return planned


def batch_discount(context: CellContext) -> float:
    """The fraction of the list price this model costs through a batch API."""
    return batch_factor(context.price, context.cfg.pricing.batch_discount)


def batch_forecast(forecast: Forecast, factor: float) -> Forecast:
    """A forecast at batch prices (the discount scales every bucket alike)."""
    return dataclasses.replace(
        forecast,
        usd=forecast.usd * factor,
        image_usd=forecast.image_usd * factor,
        cache_saved_usd=forecast.cache_saved_usd * factor,
    )


async def _run(
    context: CellContext,
    examples: Iterable[Example],
    done: set[str],
    records_path: Path,
    progress: Progress,
    stats: RunStats,
) -> None:
    """Judge every pending example, appending records; ``stats`` is filled in place."""
    cfg = context.cfg
    cache = None
    assert context.judge is not None
    # The records file exists from here on, so the summary of a run stopped at once can read it.
    records_path.touch()
    if cfg.runner.mode == "batch":
        check_batch_judge(context.judge, cfg.model)
    if cfg.runner.cache and context.judge.cacheable:
        cache = ResponseCache(resolve_path(cfg.paths.response_cache))
    runner: Runner | BatchRunner
    if cfg.runner.mode == "batch":
        state_path = records_path.parent / STATE_FILE
        runner = _batch_runner(context, state_path, cache, stats)
    else:
        runner = _sync_runner(context, cache, stats)
    runners = [runner]  # the one a stop signal tells: the last started
    try:
        with (
            stop_signals(asyncio.get_running_loop(), _stop_handler(runners, context)),
            appending_rows(records_path.parent) as write,
            _sample_rows(records_path.parent, cfg.runner.samples) as write_sample,
            image_pool(context) as pool,
        ):
            requests = Requests(context, examples, done, pool)
            outcomes = (
                runner.run(requests)
                if pool is None or isinstance(runner, BatchRunner)
                else runner.run(requests.prepared_ahead(_ahead(runner)))
            )
            rows = _Rows(context, progress, write, write_sample)
            collector = EntryCollector()
            again: list[WorkItem] = []
            async for answer in outcomes:
                outcome = collector.add(answer)
                if outcome is not None:  # else more calls of this result's bank to come
                    again += rows.record(outcome)
            if again:
                # Results a call's answer left without a grade, each asked on its own (in
                # calls of their own whatever the mode: there are few of them).
                second = _sync_runner(context, cache, stats, quiet=True)
                runners.append(second)
                async for answer in second.run(again):
                    rows.record(answer)
    finally:
        progress.close()
        await context.judge.aclose()
        if cache is not None:
            cache.close()


class _Rows:
    """Writes the rows of the outcomes a cell's runner yields, as they come."""

    def __init__(
        self, context: CellContext, progress: Progress, write: RowWriter, samples: Any
    ) -> None:
        self.context = context
        self.progress = progress
        self.write = write
        self.samples: RowWriter | None = samples
        """The writer of ``samples.jsonl`` (None with one sample)."""
        self.splitter = PassageSplitter(context.price, tuple(context.cfg.dataset.scale.grades))

    def record(self, outcome: Outcome) -> list[WorkItem]:
        """Write the rows of ``outcome`` (one per result of a call about several, written
        together); returns the results its answer left without a grade, to ask again."""
        shared = self.splitter.split(outcome)
        records = [judgment_record(self.context, each) for each in shared.outcomes]
        if len(records) > 1:  # a call's rows: all of them or none
            self.write.together(records)
        for each, record in zip(shared.outcomes, records, strict=True):
            if len(records) == 1:
                sample = sample_of(each.item.key)
                if sample:
                    assert self.samples is not None
                    self.samples(record, sample)
                else:
                    self.write(record)
            self.progress.update(0.0 if record.cached else record.cost_usd)
        return shared.again


def _sample_rows(run_dir: Path, samples: int) -> contextlib.AbstractContextManager[Any]:
    """The writer of ``samples.jsonl`` (nothing to write, and no file, with one sample)."""
    if samples == 1:
        return contextlib.nullcontext(None)
    return appending_rows(run_dir, SAMPLES)


def _sync_runner(
    context: CellContext, cache: ResponseCache | None, stats: RunStats, *, quiet: bool = False
) -> Runner:
    """The runner for ``runner.mode=sync``; says first how many calls will be in flight (for
    a judge that is paid for: its descriptor is not
    :attr:`~mmjudge.judges.descriptor.JudgeDescriptor.free`), unless ``quiet``."""
    assert context.judge is not None
    cfg = context.cfg
    in_flight = fit_open_files(calls_in_flight(cfg.runner, cfg.model, context.judge.calls_to_fill))
    if not quiet:
        paid = not context.judge.descriptor.free
        say(first_line(in_flight, cfg.model, paid=paid), context.run_dir)
    return Runner(
        context.judge,
        cfg.model,
        cfg.runner,
        cache=cache,
        price=_pricer(context),
        stats=stats,
        claims=(
            cache.claims(cfg.runner.claim_ttl_s, folder=context.run_dir)
            if cache is not None
            else None
        ),
        seed=cfg.seed,
        concurrency=in_flight.calls,
        speed=context.speed,
    )


def _ahead(runner: Runner) -> int:
    """Items whose images are prepared ahead of their calls: enough to refill every slot
    twice over, so the calls never wait for an image the pool could have had ready."""
    return 2 * runner.concurrency + PREPARE_AHEAD


def _stop_handler(
    runners: list[Runner | BatchRunner], context: CellContext
) -> Callable[[int], None]:
    """What Ctrl-C and SIGTERM do while the cell is judging: tell the runner at work (the
    last of ``runners``), say so once."""
    cfg = context.cfg

    def on_stop(number: int) -> None:
        runner = runners[-1]
        if not runner.request_stop(number):
            return
        line = stop_line(
            number,
            batch=cfg.runner.mode == "batch",
            grace_s=cfg.runner.grace_s,
            in_flight=runner.in_flight,
            run_dir=context.run_dir,
            resume_setting=context.resume_setting,
        )
        say(f"\nmmjudge: {line}", context.run_dir)

    return on_stop


def _batch_runner(
    context: CellContext, state_path: Path, cache: ResponseCache | None, stats: RunStats
) -> BatchRunner:
    """The runner for ``runner.mode=batch``; its state lives next to the records."""
    assert context.judge is not None
    cfg = context.cfg
    return BatchRunner(
        context.judge,
        cfg.model,
        cfg.runner,
        state_path=state_path,
        cache=cache,
        price=_pricer(context),
        discount=batch_discount(context),
        stats=stats,
        seed=cfg.seed,
        speed=context.speed,
    )


def _pricer(context: CellContext) -> CallPricer:
    """Prices each answer once, for the runner's spend and the answer's row."""
    return CallPricer(context.price, context.cfg.model, context.cfg.pricing.batch_discount)
