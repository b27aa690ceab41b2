"""One sweep cell, start to end: dataset → prompts + images → runner → records → summary."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mmjudge import PROJECT_ROOT
from mmjudge.batch import STATE_FILE, BatchRunner, batch_discount, check_judge, check_settings
from mmjudge.cache import ResponseCache, request_key
from mmjudge.concurrency import calls_in_flight, first_line, fit_open_files
from mmjudge.config import SweepConfig
from mmjudge.data.schema import Example, load_dataset, sampled_queries
from mmjudge.data.survey import (
    DatasetSurvey,
    check_html_fields,
    survey,
    unserved,
    unserved_by_config,
)
from mmjudge.errors import (
    BudgetExceeded,
    ConfigError,
    FatalProviderError,
    ImageError,
    Interrupted,
    MMJudgeError,
)
from mmjudge.forecast import Forecast, forecast_call
from mmjudge.images import ImageCache, ImageSettings, preprocess_image
from mmjudge.images_pool import PREPARE_AHEAD, ImagePool, prepared_async, prepared_sync
from mmjudge.interrupt import signal_name, signal_number_of, stop_signals
from mmjudge.keyguard import check_config, redact_text
from mmjudge.ledger import ModelPrice, cost_of, image_tokens, price_for
from mmjudge.output_tokens import (
    ANSWER_FORMAT,
    SAMPLE_IMAGES,
    SAMPLE_TEXT,
    OutputTokens,
    output_tokens,
)
from mmjudge.parsing import parse_grade
from mmjudge.prompt_shapes import PromptRenderer
from mmjudge.providers.base import JudgeAPI
from mmjudge.providers.registry import judge_class
from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse, JudgmentRecord
from mmjudge.runner import (
    Outcome,
    Progress,
    Runner,
    RunStats,
    WorkItem,
    check_reliability_settings,
)
from mmjudge.testbank import grading as bank_grading
from mmjudge.testbank.bank import Bank
from mmjudge.testbank.per_entry import EntryCall, EntryCollector

JUDGMENTS = "judgments.jsonl"
SUMMARY = "summary.json"


def resolve_path(value: str) -> Path:
    """A config path: absolute as given, relative ones against the project root."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else PROJECT_ROOT / path


def typed_config(cfg: DictConfig | SweepConfig) -> SweepConfig:
    """The typed config, its values checked (:meth:`SweepConfig.validate`)."""
    if isinstance(cfg, SweepConfig):
        obj = cfg
    else:
        typed = OmegaConf.to_object(cfg)
        assert isinstance(typed, SweepConfig)
        obj = typed
    obj.validate()
    return obj


@dataclass
class CellContext:
    """Everything one cell needs, built once before any example is read."""

    cfg: SweepConfig
    run_id: str
    judge: JudgeAPI | None
    """None in a dry run, which needs no key."""
    price: ModelPrice
    image_settings: ImageSettings
    image_cache: ImageCache
    forecast: Forecast
    """Accumulates the expected usage of every item whose call is forecast."""
    bank: Bank | None = None
    """The test bank the cell grades against (``prompt.bank``), or None."""
    output: OutputTokens = field(default_factory=lambda: OutputTokens(0.0, ""))
    """Output tokens per call for the forecast, and their basis."""


def write_summary(run_dir: Path, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """:func:`mmjudge.summary.write_summary`, imported when a run ends: it needs pandas,
    which the first call should not wait for."""
    from mmjudge.summary import write_summary as write

    return write(run_dir, *args, **kwargs)


def skip_reason(cfg: SweepConfig, judge: type[JudgeAPI]) -> str | None:
    """Why this cell cannot run, known before the dataset is read: a judge that cannot see
    images asked to look at them, or a dataset configured to show none."""
    if cfg.modality.name not in judge.modalities:
        accepted = ", ".join(judge.modalities)
        return (
            f"judge '{cfg.model.name}' ({cfg.model.provider}) does not accept modality "
            f"'{cfg.modality.name}' (accepts: {accepted})"
        )
    if cfg.modality.include_image and not cfg.model.supports_images:
        return f"model '{cfg.model.name}' does not accept images (supports_images: false)"
    bank_reason = bank_grading.skip_reason(cfg.model.provider, cfg.prompt.bank)
    if bank_reason is not None:
        return bank_reason
    return unserved_by_config(cfg.modality, cfg.dataset)


def run_cell(raw_cfg: DictConfig | SweepConfig, run_dir: Path) -> dict[str, Any]:
    """Run one cell and write ``judgments.jsonl`` and ``summary.json`` into ``run_dir``."""
    cfg = typed_config(raw_cfg)
    source = raw_cfg if isinstance(raw_cfg, DictConfig) else OmegaConf.structured(cfg)
    problem = check_config(source)
    if problem:
        raise ConfigError(problem)
    check_reliability_settings(cfg.runner)
    run_dir.mkdir(parents=True, exist_ok=True)
    run_id = run_dir.name
    judge_cls = judge_class(cfg.model)
    records_path = run_dir / JUDGMENTS
    examples = _ExampleStream(cfg)
    counts, reason = _survey_or_skip(cfg, judge_cls, examples)
    if reason is not None or counts is None:
        records_path.touch()
        return write_summary(run_dir, cfg, raw_cfg, skipped=reason)
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
        judge=judge,
        price=price,
        image_settings=_image_settings(cfg),
        image_cache=ImageCache(resolve_path(cfg.images.cache_dir)),
        forecast=Forecast(),
        bank=bank,
    )
    context.output = output_tokens(cfg, _cached_output_tokens(context, examples, judge_cls))
    context.forecast.output_basis = context.output.basis
    total = counts.items
    if cfg.runner.dry_run:
        return _dry_run(context, examples, run_dir, counts)
    return _judge_cell(context, raw_cfg, run_dir, examples, total, extra)


def _judge_cell(
    context: CellContext,
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    examples: Iterable[Example],
    total: int,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """Judge the cell's pending items, then write its summary, whichever way it ended."""
    cfg = context.cfg
    records_path = run_dir / JUDGMENTS
    done = _finished_keys(records_path)
    progress = Progress(
        f"{cfg.dataset.name} × {cfg.model.name} × {cfg.modality.name}",
        total - len(done),
        cfg.runner.progress,
    )
    stats = RunStats()
    stop: MMJudgeError | None = None
    try:
        asyncio.run(_run(context, examples, done, records_path, progress, stats))
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
) -> dict[str, Any]:
    extra = {**extra, "forecast": context.forecast.to_dict(), "n_items": n_items}
    return write_summary(run_dir, context.cfg, raw_cfg, stats=stats, stop=stop, extra=extra)


def _survey_or_skip(
    cfg: SweepConfig, judge_cls: type[JudgeAPI], examples: Iterable[Example]
) -> tuple[DatasetSurvey | None, str | None]:
    """The dataset's counts, or why the cell cannot run.

    The whole dataset is validated here, before the first paid call: a bad line fails, and a
    modality the dataset cannot serve at all skips the cell. The examples are streamed again
    for the calls, so memory stays flat however large the dataset is.
    """
    reason = skip_reason(cfg, judge_cls)
    if reason is not None:
        return None, reason
    counts = survey(examples)
    check_html_fields(counts, cfg.dataset)
    return counts, unserved(counts, cfg.modality, cfg.dataset)


class _ExampleStream:
    """Re-iterable view of a dataset's examples, read from disk on each pass.

    A query sample (``dataset.sample_queries``) is drawn once, on the first pass, and kept
    for every later one.
    """

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg

    @functools.cached_property
    def queries(self) -> frozenset[str] | None:
        return sampled_queries(self.cfg.dataset, self.cfg.runner.seed)

    def __iter__(self) -> Iterator[Example]:
        return load_dataset(self.cfg.dataset, seed=self.cfg.runner.seed, queries=self.queries)


def _image_settings(cfg: SweepConfig) -> ImageSettings:
    try:
        return ImageSettings.from_config(cfg.images)
    except ValueError as error:
        raise ConfigError(str(error)) from None


@contextlib.contextmanager
def _image_pool(context: CellContext) -> Iterator[ImagePool | None]:
    """Worker threads preparing the cell's images (None for a cell without images)."""
    if not context.cfg.modality.include_image:
        yield None
        return
    pool = ImagePool(context.image_settings, context.image_cache)
    try:
        yield pool
    finally:
        pool.close()


def _cached_output_tokens(
    context: CellContext, examples: Iterable[Example], judge_cls: type[JudgeAPI]
) -> Iterator[int]:
    """Output tokens of the answers to a sample of this cell's first requests that are in
    the response cache (none when the cache is off or the judge's answers are not cached)."""
    cfg = context.cfg
    path = resolve_path(cfg.runner.cache_path)
    if not (cfg.runner.cache and judge_cls.cacheable and path.exists()):
        return
    limit = SAMPLE_IMAGES if cfg.modality.include_image else SAMPLE_TEXT
    quiet = dataclasses.replace(context, forecast=Forecast())
    sample = itertools.islice(examples, limit)
    cache = ResponseCache(path)
    try:
        with _image_pool(context) as pool:
            for item in _work(quiet, sample, set(), pool):
                key = None if item.request is None else request_key(cfg.model, item.request)
                hit = None if key is None else cache.get(key)
                if hit is not None:
                    yield hit.usage.output_tokens
    finally:
        cache.close()


def _dry_run(
    context: CellContext, examples: Iterable[Example], run_dir: Path, counts: DatasetSurvey
) -> dict[str, Any]:
    """Forecast the cell without calling anything; writes ``forecast.json``."""
    with _image_pool(context) as pool:
        for item in _work(context, examples, set(), pool):
            item.expected_usd()
    cfg = context.cfg
    data = {
        "status": "dry_run",
        "dataset": cfg.dataset.name,
        "model": cfg.model.name,
        "model_id": cfg.model.model_id,
        "modality": cfg.modality.name,
        "prompt_id": cfg.prompt.id,
        "pricing_sheet": cfg.pricing.date,
        "forecast": context.forecast.to_dict(),
        "batch_discount": _batch_discount(context),
        "forecast_batch": _batch_forecast(context).to_dict(),
        "text_cut": {"max_text_tokens": cfg.dataset.max_text_tokens, **counts.cut()},
    }
    (run_dir / "forecast.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def _batch_discount(context: CellContext) -> float:
    """The fraction of the list price this model costs through a batch API."""
    return batch_discount(context.price.batch_discount, context.cfg.pricing.batch_discount)


def _batch_forecast(context: CellContext) -> Forecast:
    """The cell's forecast at batch prices (the discount scales every bucket alike)."""
    factor = _batch_discount(context)
    sync = context.forecast
    return dataclasses.replace(sync, usd=sync.usd * factor, image_usd=sync.image_usd * factor)


def _finished_keys(records_path: Path) -> set[str]:
    """Keys already judged without error in this run directory; failed rows are retried.

    A run killed mid-write can leave a partial last line: it is dropped, as are error rows,
    and the file is rewritten with the complete rows only.
    """
    if not records_path.exists():
        return set()
    kept: list[str] = []
    keys: set[str] = set()
    with records_path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("error"):
                continue
            kept.append(line if line.endswith("\n") else line + "\n")
            keys.add(f"{row['query_id']}\t{row['result_id']}")
    tmp = records_path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    os.replace(tmp, records_path)
    return keys


def _work(
    context: CellContext,
    examples: Iterable[Example],
    done: set[str],
    pool: ImagePool | None = None,
) -> Iterator[WorkItem]:
    """The work items of the pending examples; images prepared in ``pool`` when given (a
    window ahead), else one by one in this thread."""
    prompts = PromptRenderer(context.cfg.modality, context.cfg.prompt, context.cfg.dataset)
    pending = (example for example in examples if example.key not in done)
    if context.cfg.modality.include_image and pool is not None:
        for example, prepared in prepared_sync(pool, pending, PREPARE_AHEAD):
            yield from _items(context, prompts, example, prepared.images, prepared.error)
        return
    for example in pending:
        images, error = _images_here(context, example)
        yield from _items(context, prompts, example, images, error)


async def _work_async(
    context: CellContext, examples: Iterable[Example], done: set[str], pool: ImagePool, ahead: int
) -> AsyncIterator[WorkItem]:
    """:func:`_work` for the event loop: images are prepared in ``pool``, ``ahead`` items
    before their calls, and waiting for them leaves the loop free for the calls in flight."""
    prompts = PromptRenderer(context.cfg.modality, context.cfg.prompt, context.cfg.dataset)
    pending = (example for example in examples if example.key not in done)
    async for example, prepared in prepared_async(pool, pending, ahead):
        for item in _items(context, prompts, example, prepared.images, prepared.error):
            yield item


def _images_here(
    context: CellContext, example: Example
) -> tuple[tuple[EncodedImage, ...], str | None]:
    """An example's images prepared in this thread (dry runs, batch resubmissions)."""
    images: list[EncodedImage] = []
    if not context.cfg.modality.include_image:
        return (), None
    for path, name in zip(example.images, example.image_names, strict=True):
        try:
            images.append(
                preprocess_image(
                    path, context.image_settings, context.image_cache, display_source=name
                )
            )
        except ImageError as exc:
            return tuple(images), str(exc)
    return tuple(images), None


def _items(
    context: CellContext,
    prompts: PromptRenderer,
    example: Example,
    images: tuple[EncodedImage, ...],
    error: str | None,
) -> Iterator[WorkItem]:
    """One example's work: its request, or the error that keeps it from being sent (one
    item per bank entry with ``prompt.bank_calls=entry``)."""
    cfg = context.cfg
    if cfg.modality.include_image and not example.images:
        error = f"result '{example.result_id}' has no image for modality '{cfg.modality.name}'"
    rendered = prompts.render(example, n_images=len(images))
    text_only = cfg.modality.include_text and not cfg.modality.include_image
    if error is None and text_only and not rendered.fields:
        error = f"result '{example.result_id}' has no text fields for modality 'text'"
    request = JudgeRequest(
        item_key=example.key,
        prompt=rendered.text,
        system=rendered.system,
        images=images,
        query=example.query,
        fields=rendered.fields,
        grades=tuple(cfg.dataset.scale.grades),
    )
    if context.bank is not None:
        request, problem = _bank_request(context, example, request)
        error = error or problem
        if error is None and cfg.prompt.bank_calls == "entry":
            yield from _entry_items(context, example, request)
            return
    yield WorkItem(
        key=example.key,
        request=None if error else request,
        error=error,
        context=(example, request),
        estimate=None if error else functools.partial(_forecast_item, context, request),
    )


def _forecast_item(context: CellContext, request: JudgeRequest) -> float:
    """Forecast one call into the cell's forecast; its expected dollars (for the budget).

    Called only for calls the runner is about to make (or every item, in a dry run), so
    answers taken from the cache are neither tokenised nor counted.
    """
    cfg = context.cfg
    item_forecast = forecast_call(
        request,
        cfg.model,
        context.price,
        _expected_output_tokens(context, request),
        batch_discount=cfg.pricing.batch_discount,
    )
    context.forecast.add(item_forecast)
    return item_forecast.usd


def _expected_output_tokens(context: CellContext, request: JudgeRequest) -> float:
    """Output tokens expected for ``request``: the cell's learnt or configured figure; for a
    bank request without one, the estimate from the number of entries it rates."""
    if request.task == "bank" and context.output.basis == ANSWER_FORMAT:
        return bank_grading.output_tokens(len(request.entries), context.cfg.prompt.spans)
    return context.output.tokens


def _bank_request(
    context: CellContext, example: Example, request: JudgeRequest
) -> tuple[JudgeRequest, str | None]:
    """The request of a test-bank cell: the query's entries in place of a direct grade."""
    assert context.bank is not None
    cfg = context.cfg
    entries = context.bank.for_query(example.query_id)
    prompt = bank_grading.render_bank_prompt(
        kind=context.bank.kind,
        query=example.query,
        entries=entries,
        fields=request.fields,
        modality=cfg.modality,
        prompt=cfg.prompt,
        dataset=cfg.dataset,
        n_images=len(request.images),
    )
    problem = None
    if not entries:
        problem = (
            f"query '{example.query_id}' has no entries in the {context.bank.kind} test bank "
            f"(version {context.bank.version})"
        )
    bank_request = dataclasses.replace(
        request,
        prompt=prompt.text,
        system=bank_grading.SYSTEM_PROMPT,
        task="bank",
        entries=prompt.entries,
    )
    return bank_request, problem


def _entry_items(
    context: CellContext, example: Example, request: JudgeRequest
) -> Iterator[WorkItem]:
    """One work item per entry of the result's bank (``prompt.bank_calls=entry``)."""
    assert context.bank is not None
    cfg = context.cfg
    entries = context.bank.for_query(example.query_id)
    for position, entry in enumerate(entries):
        prompt = bank_grading.render_bank_prompt(
            kind=context.bank.kind,
            query=example.query,
            entries=[entry],
            fields=request.fields,
            modality=cfg.modality,
            prompt=cfg.prompt,
            dataset=cfg.dataset,
            n_images=len(request.images),
            first=position + 1,
        )
        single = dataclasses.replace(
            request,
            item_key=f"{example.key}\t{entry.id}",
            prompt=prompt.text,
            entries=prompt.entries,
        )
        yield WorkItem(
            key=single.item_key,
            request=single,
            context=EntryCall(example, request, len(entries), position),
            estimate=functools.partial(_forecast_item, context, single),
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
    check_settings(cfg.runner)
    if cfg.runner.mode == "batch":
        check_judge(context.judge, cfg.model)
    if cfg.runner.cache and context.judge.cacheable:
        cache = ResponseCache(resolve_path(cfg.runner.cache_path))
    runner: Runner | BatchRunner
    if cfg.runner.mode == "batch":
        state_path = records_path.parent / STATE_FILE
        runner = _batch_runner(context, examples, state_path, cache, stats)
    else:
        in_flight = fit_open_files(calls_in_flight(cfg.runner, cfg.model))
        print(first_line(in_flight, cfg.model), file=sys.stderr, flush=True)
        runner = Runner(
            context.judge,
            cfg.model,
            cfg.runner,
            cache=cache,
            cost_of_response=lambda response: _cost(context, response)[0],
            stats=stats,
            claims=cache.claims(cfg.runner.claim_ttl_s) if cache is not None else None,
            concurrency=in_flight.calls,
        )

    try:
        with (
            stop_signals(asyncio.get_running_loop(), _stop_handler(runner, cfg)),
            records_path.open("a", encoding="utf-8") as out,
            _image_pool(context) as pool,
        ):
            outcomes = (
                runner.run(_work(context, examples, done, pool))
                if pool is None or isinstance(runner, BatchRunner)
                else runner.run(_work_async(context, examples, done, pool, _ahead(runner)))
            )
            collector = EntryCollector()
            async for answer in outcomes:
                outcome = collector.add(answer)
                if outcome is None:
                    continue  # more calls of this result's bank to come
                record = _record(context, outcome)
                out.write(record.to_json() + "\n")
                progress.update(0.0 if record.cached else record.cost_usd)
                out.flush()
    finally:
        progress.close()
        await context.judge.aclose()
        if cache is not None:
            cache.close()
        if cfg.runner.mode == "batch":
            # The summary's forecast is then at batch prices, like the calls it forecasts.
            context.forecast = _batch_forecast(context)


def _ahead(runner: Runner) -> int:
    """Items whose images are prepared ahead of their calls: enough to refill every slot
    twice over, so the calls never wait for an image the pool could have had ready."""
    return 2 * runner.concurrency + PREPARE_AHEAD


def _stop_handler(runner: Runner | BatchRunner, cfg: SweepConfig) -> Callable[[int], None]:
    """What Ctrl-C and SIGTERM do while the cell is judging: tell the runner, say so once."""

    def on_stop(number: int) -> None:
        if not runner.request_stop(number):
            return
        if cfg.runner.mode == "batch":
            what = "no new batches; submitted ones keep running at the provider"
        else:
            what = (
                f"no new calls; waiting up to {cfg.runner.grace_s:g} s (runner.grace_s) for "
                f"the {runner.in_flight} in flight; press Ctrl-C again to stop at once"
            )
        print(f"\nmmjudge: {signal_name(number)}: {what}", file=sys.stderr)

    return on_stop


def _batch_runner(
    context: CellContext,
    examples: Iterable[Example],
    state_path: Path,
    cache: ResponseCache | None,
    stats: RunStats,
) -> BatchRunner:
    """The runner for ``runner.mode=batch``; its state lives next to the records."""
    assert context.judge is not None
    cfg = context.cfg
    # Rebuilding items to resubmit must not count them in the cell's forecast a second time.
    quiet = dataclasses.replace(context, forecast=Forecast())

    def rebuild(keys: set[str]) -> Iterator[WorkItem]:
        return _work(quiet, (example for example in examples if example.key in keys), set())

    return BatchRunner(
        context.judge,
        cfg.model,
        cfg.runner,
        state_path=state_path,
        rebuild=rebuild,
        cache=cache,
        cost_of_response=lambda response: _cost(context, response)[0],
        discount=_batch_discount(context),
        shrink=_without_image_data,
        stats=stats,
    )


def _without_image_data(item: WorkItem) -> WorkItem:
    """An item kept while its batch runs: images keep their hash and size, not their bytes.

    Records need only an image's hash and dimensions, so items waiting on a batch hold no
    encoded images, and memory does not grow with the images of every submitted request.
    """
    request = item.request
    if request is None or not request.images:
        return item
    item.expected_usd()  # forecast now: the estimate holds the request with its image bytes
    images = tuple(dataclasses.replace(image, data="") for image in request.images)
    slim = dataclasses.replace(request, images=images)
    example, _request = item.context
    return dataclasses.replace(item, request=slim, context=(example, slim))


def _cost(context: CellContext, response: JudgeResponse) -> tuple[float, float]:
    sheet = context.cfg.pricing
    total, image = cost_of(
        response.usage,
        context.price,
        batch=response.batch,
        sheet_batch_discount=sheet.batch_discount,
    )
    return total, image


def _estimated_image_tokens(context: CellContext, images: tuple[EncodedImage, ...]) -> int:
    rule = context.price.image_rule
    detail = context.cfg.model.image_detail
    return sum(image_tokens(rule, img.width, img.height, detail) for img in images)


def _record(context: CellContext, outcome: Outcome) -> JudgmentRecord:
    cfg = context.cfg
    example, request = outcome.item.context
    response = outcome.response
    label = explanation = parse_error = None
    usage: dict[str, int] = {}
    cost = image_cost = 0.0
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
        parsed = parse_grade(response.text, list(cfg.dataset.scale.grades))
        label, explanation, parse_error = parsed
    if response is not None:
        if response.stop_reason == "refusal" and label is None:
            parse_error = "the model refused to answer"
        if not response.usage.image_tokens and request.images:
            response.usage.image_tokens = _estimated_image_tokens(context, request.images)
        usage = response.usage.to_dict()
        cost, image_cost = _cost(context, response)
    return JudgmentRecord(
        run_id=context.run_id,
        dataset=cfg.dataset.name,
        query_id=example.query_id,
        result_id=example.result_id,
        modality=cfg.modality.name,
        provider=cfg.model.provider,
        model=cfg.model.name,
        prompt_id=cfg.prompt.id,
        prompt_hash=request.prompt_hash() if outcome.item.request is not None else None,
        image_sha256s=[image.sha256 for image in request.images],
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
        **bank_fields,
    )
