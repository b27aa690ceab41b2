"""One sweep cell, start to end: dataset → prompts + images → runner → records → summary."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.config.names import cell_display_name, cell_prompt_id
from mmjudge.costs.calls import CallPricer
from mmjudge.costs.ledger import batch_factor
from mmjudge.costs.output_tokens import output_tokens
from mmjudge.costs.sheets import price_for
from mmjudge.data.leniency import new_cell_warnings
from mmjudge.data.schema import Example
from mmjudge.data.survey import (
    DatasetSurvey,
    check_html_fields,
    unserved,
    unserved_by_config,
)
from mmjudge.engine.batch import BatchRunner
from mmjudge.engine.concurrency import calls_in_flight, first_line, fit_open_files
from mmjudge.engine.earlier import earlier_runs
from mmjudge.engine.event_loop import run_on_fast_loop
from mmjudge.engine.examples import ExampleStream
from mmjudge.engine.images_pool import PREPARE_AHEAD
from mmjudge.engine.interrupt import signal_name, signal_number_of, stop_signals
from mmjudge.engine.per_entry import EntryCollector
from mmjudge.engine.policy import ItemCall, Outcome, RunStats
from mmjudge.engine.progress import Progress
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.engine.stop_line import stop_line
from mmjudge.engine.survey_ahead import sdk_warmer, survey_while
from mmjudge.engine.sync import Runner
from mmjudge.engine.work import (
    CellContext,
    Requests,
    build_work,
    cached_output_tokens,
    image_pool,
    sample_of,
)
from mmjudge.errors import (
    BudgetExceeded,
    ConfigError,
    FatalProviderError,
    Interrupted,
    MMJudgeError,
)
from mmjudge.images import ImageCache
from mmjudge.judges.base import JudgeAPI, check_batch_judge
from mmjudge.judges.registry import endpoint_override, judge_class
from mmjudge.keyguard import check_config, redact_text, resolved_config
from mmjudge.locations import resolve_path
from mmjudge.prompts import instruction_language
from mmjudge.prompts.parsing import parse_grade
from mmjudge.records import Forecast, JudgmentRecord
from mmjudge.store import CellInfo, RunSummary, appending_rows, judgments_path, keep_finished_rows
from mmjudge.store.batches import STATE_FILE
from mmjudge.store.forecast import CellForecast, TextCut, write_forecast
from mmjudge.store.lock import run_folder_lock
from mmjudge.store.log import say
from mmjudge.store.rows import SAMPLES
from mmjudge.testbank import grading as bank_grading
from mmjudge.testbank.derive import check_bank_prompt


def typed_config(cfg: DictConfig | SweepConfig) -> SweepConfig:
    """The typed config, its values checked (:meth:`SweepConfig.validate`)."""
    if isinstance(cfg, SweepConfig):
        obj = cfg
    else:
        try:
            typed = OmegaConf.to_object(cfg)
        except ValueError as error:  # a node's own check (images: ImageSettings) refused it
            raise ConfigError(str(error)) from None
        assert isinstance(typed, SweepConfig)
        obj = typed
    obj.validate()
    prompt_id = cell_prompt_id(obj.prompt.id, obj.prompt.language)
    if prompt_id != obj.prompt.id:
        # The two languages of one prompt are two cells: ids, rows and folders tell them apart.
        obj.prompt = dataclasses.replace(obj.prompt, id=prompt_id)
    if obj.prompt.bank is not None:
        check_bank_prompt(obj.prompt)
    return obj


def skip_reason(cfg: SweepConfig, judge: type[JudgeAPI]) -> str | None:
    """Why this cell cannot run, known before the dataset is read: a judge that cannot see
    images asked to look at them, or a dataset configured to show none."""
    refusal = judge.refusal(cfg.model, cfg.modality.name, cfg.modality.include_image)
    if refusal is not None:
        return refusal
    bank_reason = bank_grading.skip_reason(cfg.model.provider, cfg.prompt.bank)
    if bank_reason is not None:
        return bank_reason
    return unserved_by_config(cfg.modality, cfg.dataset)


def run_cell(
    raw_cfg: DictConfig | SweepConfig, run_dir: Path, *, secrets_checked: bool = False
) -> RunSummary | CellForecast:
    """Run one cell and write ``judgments.jsonl`` and ``summary.json`` into ``run_dir``.

    The config is checked for secrets first, unless the caller has just done that
    (``secrets_checked``: the sweep's :func:`~mmjudge.keyguard.keep_run_config`)."""
    cfg = typed_config(raw_cfg)
    new_cell_warnings()
    if not secrets_checked:
        source = raw_cfg if isinstance(raw_cfg, DictConfig) else OmegaConf.structured(cfg)
        problem = check_config(source)
        if problem:
            raise ConfigError(problem)
    endpoint_override(cfg.model)  # a base URL that cannot work is refused before anything runs
    run_dir.mkdir(parents=True, exist_ok=True)
    judge_cls = judge_class(cfg.model)
    examples = ExampleStream(cfg)
    try:
        with run_folder_lock(run_dir):  # one process at a time, whatever cache each uses
            return _checked_cell(cfg, raw_cfg, run_dir, judge_cls, examples)
    finally:
        examples.close()


def _checked_cell(
    cfg: SweepConfig,
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    judge_cls: type[JudgeAPI],
    examples: ExampleStream,
) -> RunSummary | CellForecast:
    """The cell from its dataset check on (see :func:`run_cell`)."""
    run_id = run_dir.name
    cache_path = resolve_path(cfg.paths.response_cache)
    warm = sdk_warmer(judge_cls, cfg, cache_path)
    counts, reason = _survey_or_skip(cfg, judge_cls, examples, warm)
    if reason is not None or counts is None:
        judgments_path(run_dir).touch()
        return write_cell_summary(cfg, raw_cfg, run_dir, skipped=reason)
    price = price_for(cfg.pricing, cfg.model)
    bank = bank_grading.load_cell_bank(cfg)
    # The judge (and its key) only now: a skipped cell needs neither.
    judge = None if cfg.runner.dry_run else judge_cls(cfg.model)
    grading = judge.check_scale(list(cfg.dataset.scale.grades)) if judge is not None else None
    extra: dict[str, Any] = {"grading": grading} if grading else {}
    if bank is not None:
        extra["testbank"] = bank_grading.bank_summary(bank, cfg.prompt, cfg.dataset.scale.grades)
    context = CellContext(
        cfg=cfg,
        run_id=run_id,
        run_dir=run_dir,
        judge=judge,
        price=price,
        image_settings=cfg.images,
        image_cache=ImageCache(resolve_path(cfg.paths.image_cache)),
        bank=bank,
    )
    context.output = output_tokens(
        cfg, cached_output_tokens(context, examples, judge_cls, cache_path)
    )
    total = counts.items
    if cfg.runner.dry_run:
        return _dry_run(context, examples, run_dir)
    return _judge_cell(context, raw_cfg, run_dir, examples, total, extra)


def _judge_cell(
    context: CellContext,
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    examples: Iterable[Example],
    total: int,
    extra: dict[str, Any],
) -> RunSummary:
    """Judge the cell's pending items, then write its summary, whichever way it ended."""
    cfg = context.cfg
    records_path = judgments_path(run_dir)
    done = keep_finished_rows(run_dir)
    if cfg.runner.samples > 1:
        done |= keep_finished_rows(run_dir, SAMPLES)
    name = cell_display_name(
        cfg.dataset.name, cfg.model.name, cfg.modality.name, cfg.prompt.id, cfg.perturb.name
    )
    progress = Progress(
        name,
        total - len(done),
        cfg.runner.progress,
    )
    stats = earlier_runs(run_dir)  # the budget and the possibly billed sends span the runs
    stop: MMJudgeError | None = None
    try:
        run_on_fast_loop(_run(context, examples, done, records_path, progress, stats))
    except (BudgetExceeded, FatalProviderError, Interrupted) as error:
        # The cell stopped after calls began: keep what was judged and say why it stopped.
        stop = error
    except KeyboardInterrupt as error:
        number = signal_number_of(error)
        stop = Interrupted(f"stopped by {signal_name(number)}", number)
    except MMJudgeError as error:
        # A setting or key found wrong as the calls were about to start.
        _summary(context, raw_cfg, run_dir, stats, total, error, extra)
        raise
    return _summary(context, raw_cfg, run_dir, stats, total, stop, extra)


def _summary(
    context: CellContext,
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    stats: RunStats,
    n_items: int,
    stop: BaseException | None,
    extra: dict[str, Any],
) -> RunSummary:
    forecast = dataclasses.replace(stats.forecast, output_basis=context.output.basis)
    if context.cfg.runner.mode == "batch":
        # At batch prices, like the calls it forecasts.
        forecast = _batch_forecast(forecast, _batch_discount(context))
    return write_cell_summary(
        context.cfg,
        raw_cfg,
        run_dir,
        stop=stop,
        calls=stats.calls,
        grading=extra.get("grading"),
        testbank=extra.get("testbank"),
        forecast=forecast,
        n_items=n_items,
    )


def cell_info(cfg: SweepConfig) -> CellInfo:
    """Which cell ``cfg`` runs, as its summary names it."""
    url = endpoint_override(cfg.model)
    return CellInfo(
        dataset=cfg.dataset.name,
        model=cfg.model.name,
        model_id=cfg.model.model_id,
        provider=cfg.model.provider,
        endpoint=None if url is None else redact_text(url),
        modality=cfg.modality.name,
        prompt_id=cfg.prompt.id,
        pricing_sheet=cfg.pricing.date,
        grades=list(cfg.dataset.scale.grades),
        perturb=cfg.perturb.name,
    )


def write_cell_summary(
    cfg: SweepConfig, raw_cfg: DictConfig | SweepConfig, run_dir: Path, **parts: Any
) -> RunSummary:
    """Score the cell's rows and write its ``summary.json`` (``parts``: see
    :func:`mmjudge.engine.summarise.summarise_run`)."""
    # Tables and statistics load only now, after the last call.
    from mmjudge.engine.summarise import summarise_run

    return summarise_run(
        run_dir,
        cell_info(cfg),
        relevant_from=cfg.dataset.scale.relevant_from,
        config=resolved_config(raw_cfg),
        max_error_rate=cfg.runner.max_error_rate,
        max_unparseable_rate=cfg.runner.max_unparseable_rate,
        **parts,
    )


def _survey_or_skip(
    cfg: SweepConfig,
    judge_cls: type[JudgeAPI],
    examples: ExampleStream,
    warm: Callable[[], None] | None,
) -> tuple[DatasetSurvey | None, str | None]:
    """The dataset's counts, or why the cell cannot run.

    The whole dataset is validated here, before the first paid call: a bad line fails, and a
    modality the dataset cannot serve at all skips the cell. The examples are streamed again
    for the calls, so memory stays flat however large the dataset is. ``warm`` (the judge's
    SDK import) runs meanwhile, on another core where it can
    (:mod:`~mmjudge.engine.survey_ahead`).
    """
    reason = skip_reason(cfg, judge_cls)
    if reason is not None:
        return None, reason
    # Where the check reads the items as the loader gives them, its child goes on to prepare
    # them for the calls (mmjudge/engine/feed.py).
    reads_prepared = examples.check_reads_prepared()
    feed = examples.take_feed if cfg.runner.mode == "sync" and not reads_prepared else None
    counts = survey_while(examples.survey, examples, cfg, warm, feed)
    check_html_fields(counts, cfg.dataset)
    return counts, unserved(counts, cfg.modality, cfg.dataset)


def _dry_run(context: CellContext, examples: Iterable[Example], run_dir: Path) -> CellForecast:
    """Forecast the cell without calling anything; writes ``forecast.json``."""
    forecast = Forecast(output_basis=context.output.basis)
    prepared = DatasetSurvey()  # what the text cap cuts, counted on the prepared items

    def counted() -> Iterator[Example]:
        for example in examples:
            prepared.add(example)
            yield example

    with image_pool(context) as pool:
        for item in build_work(context, counted(), set(), pool):
            if item.request is not None:
                forecast.add(item.expected())
    cfg = context.cfg
    factor = _batch_discount(context)
    planned = CellForecast(
        dataset=cfg.dataset.name,
        model=cfg.model.name,
        model_id=cfg.model.model_id,
        modality=cfg.modality.name,
        prompt_id=cfg.prompt.id,
        pricing_sheet=cfg.pricing.date,
        sync=forecast,
        batch=_batch_forecast(forecast, factor),
        batch_discount=factor,
        text_cut=TextCut(cfg.dataset.max_text_tokens, prepared.truncated, prepared.tokens_removed),
        perturb=cfg.perturb.name,
    )
    write_forecast(run_dir, planned)
    return planned


def _batch_discount(context: CellContext) -> float:
    """The fraction of the list price this model costs through a batch API."""
    return batch_factor(context.price, context.cfg.pricing.batch_discount)


def _batch_forecast(forecast: Forecast, factor: float) -> Forecast:
    """A forecast at batch prices (the discount scales every bucket alike)."""
    return dataclasses.replace(
        forecast, usd=forecast.usd * factor, image_usd=forecast.image_usd * factor
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
    try:
        with (
            stop_signals(asyncio.get_running_loop(), _stop_handler(runner, context)),
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
            collector = EntryCollector()
            async for answer in outcomes:
                outcome = collector.add(answer)
                if outcome is None:
                    continue  # more calls of this result's bank to come
                record = judgment_record(context, outcome)
                sample = sample_of(outcome.item.key)
                if sample:
                    write_sample(record, sample)
                else:
                    write(record)
                progress.update(0.0 if record.cached else record.cost_usd)
    finally:
        progress.close()
        await context.judge.aclose()
        if cache is not None:
            cache.close()


def _sample_rows(run_dir: Path, samples: int) -> contextlib.AbstractContextManager[Any]:
    """The writer of ``samples.jsonl`` (nothing to write, and no file, with one sample)."""
    if samples == 1:
        return contextlib.nullcontext(None)
    return appending_rows(run_dir, SAMPLES)


def _sync_runner(context: CellContext, cache: ResponseCache | None, stats: RunStats) -> Runner:
    """The runner for ``runner.mode=sync``; says first how many calls will be in flight."""
    assert context.judge is not None
    cfg = context.cfg
    in_flight = fit_open_files(calls_in_flight(cfg.runner, cfg.model))
    say(first_line(in_flight, cfg.model), context.run_dir)
    return Runner(
        context.judge,
        cfg.model,
        cfg.runner,
        cache=cache,
        price=_pricer(context),
        stats=stats,
        claims=cache.claims(cfg.runner.claim_ttl_s) if cache is not None else None,
        seed=cfg.seed,
        concurrency=in_flight.calls,
    )


def _ahead(runner: Runner) -> int:
    """Items whose images are prepared ahead of their calls: enough to refill every slot
    twice over, so the calls never wait for an image the pool could have had ready."""
    return 2 * runner.concurrency + PREPARE_AHEAD


def _stop_handler(runner: Runner | BatchRunner, context: CellContext) -> Callable[[int], None]:
    """What Ctrl-C and SIGTERM do while the cell is judging: tell the runner, say so once."""
    cfg = context.cfg

    def on_stop(number: int) -> None:
        if not runner.request_stop(number):
            return
        line = stop_line(
            number,
            batch=cfg.runner.mode == "batch",
            grace_s=cfg.runner.grace_s,
            in_flight=runner.in_flight,
            run_dir=context.run_dir,
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
        discount=_batch_discount(context),
        stats=stats,
        seed=cfg.seed,
    )


def _pricer(context: CellContext) -> CallPricer:
    """Prices each answer once, for the runner's spend and the answer's row."""
    return CallPricer(context.price, context.cfg.model, context.cfg.pricing.batch_discount)


class Graded(NamedTuple):
    """What an answer says: its grade and explanation, why none could be read, and the test
    bank's fields of the row (empty without a bank)."""

    label: int | None
    explanation: str | None
    parse_error: str | None
    bank_fields: dict[str, Any]


def item_call(outcome: Outcome) -> ItemCall:
    """The item an outcome's row is about (a result's entry calls are gathered into one
    outcome first, :class:`~mmjudge.engine.per_entry.EntryCollector`)."""
    call = outcome.item.context
    if not isinstance(call, ItemCall):
        raise TypeError(f"{outcome.item.key}: a row is made from an item's call, not {call!r}")
    return call


def graded_answer(context: CellContext, outcome: Outcome) -> Graded:
    """The grade read from an outcome's answer, directly or through the bank's entries."""
    cfg = context.cfg
    example = item_call(outcome).example
    response = outcome.response
    label = explanation = parse_error = None
    bank_fields: dict[str, Any] = {}
    if context.bank is not None:
        bank_fields["bank_version"] = context.bank.version
    if response is not None and context.bank is not None:
        entries = context.bank.for_query(example.query_id)
        graded = bank_grading.grade_answer(
            response.text, entries, cfg.prompt, list(cfg.dataset.scale.grades)
        )
        label, explanation, parse_error = graded.label, graded.explanation, graded.parse_error
        bank_fields.update(entry_grades=graded.entry_grades, spans=graded.spans)
    elif response is not None:
        label, explanation, parse_error = parse_grade(response.text, list(cfg.dataset.scale.grades))
    if response is not None and response.stop_reason == "refusal" and label is None:
        parse_error = "the model refused to answer"
    return Graded(label, explanation, parse_error, bank_fields)


def judgment_record(context: CellContext, outcome: Outcome) -> JudgmentRecord:
    """The row of one outcome: its grade read from the answer (or the bank's entries),
    usage and cost as priced, and any error redacted."""
    cfg = context.cfg
    example, image_hashes = item_call(outcome)
    request = outcome.item.request
    response = outcome.response
    label, explanation, parse_error, bank_fields = graded_answer(context, outcome)
    usage: dict[str, int] = {}
    cost = image_cost = 0.0
    if response is not None:
        priced = outcome.priced
        usage = priced.usage.to_dict()
        cost, image_cost = priced.total_usd, priced.image_usd
    return JudgmentRecord(
        run_id=context.run_id,
        dataset=cfg.dataset.name,
        query_id=example.query_id,
        result_id=example.result_id,
        modality=cfg.modality.name,
        provider=cfg.model.provider,
        model=cfg.model.name,
        prompt_id=cfg.prompt.id,
        prompt_hash=None if request is None else request.prompt_hash(),
        image_sha256s=list(image_hashes),
        raw_output=response.text if response is not None else None,
        label=label,
        explanation=explanation,
        parse_error=parse_error,
        human_labels=dict(example.labels),
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cost_usd=cost,
        latency_s=round(outcome.latency_s, 6),
        cached=outcome.cached,
        # A provider or gateway may echo what it was sent (a key included) in its error.
        error=None if outcome.error is None else redact_text(outcome.error),
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        usage=usage,
        image_cost_usd=image_cost,
        truncated=example.truncated,
        batch=bool(response is not None and response.batch),
        resent=outcome.resent,
        possibly_billed=outcome.possibly_billed,
        possibly_billed_usd=outcome.possibly_billed_usd,
        response_model=(response.model or None) if response is not None else None,
        system_fingerprint=None if response is None else response.system_fingerprint,
        instructions=(
            instruction_language(example, cfg.prompt, cfg.dataset)
            if cfg.prompt.language == "data"
            else None
        ),
        **bank_fields,
    )
