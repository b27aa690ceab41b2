"""A cell's work: a work item per example, with its request (prompt and images) and a way
to forecast its call, built without side effects, and built again by key when the batch runner
resubmits some.

Images are prepared in worker threads (:mod:`mmjudge.engine.images_pool`) a window ahead of
their calls, never on the event loop; a call is forecast only when the runner is about to make
it, so answers from the cache are never tokenised.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mmjudge.config import SweepConfig
from mmjudge.costs.forecast import forecast_call
from mmjudge.costs.output_tokens import ANSWER_FORMAT, OutputTokens
from mmjudge.costs.prompt_cache import CachePlan, cache_mark, plan_prompt_cache, with_prompt_cache
from mmjudge.costs.sheets import ModelPrice
from mmjudge.data.schema import Example
from mmjudge.engine.images_pool import PREPARE_AHEAD, ImagePool, prepared_async, prepared_sync
from mmjudge.engine.passage_calls import CallFiller, passage_call
from mmjudge.engine.policy import EntryCall, ItemCall, WorkItem
from mmjudge.errors import ImageError
from mmjudge.images import ImageCache, ImageSettings, preprocess_image
from mmjudge.judges.base import JudgeAPI
from mmjudge.perturb import perturb_example, perturb_images
from mmjudge.prompts import RenderedPrompt
from mmjudge.prompts.shapes import PromptRenderer
from mmjudge.records import EncodedImage, Forecast, JudgeRequest, Usage
from mmjudge.speed import Speed
from mmjudge.testbank import grading as bank_grading
from mmjudge.testbank.bank import Bank


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
    speed: Speed
    """Whether the run uses the speed machinery (read once, where the run started)."""
    bank: Bank | None = None
    """The test bank the cell grades against (``prompt.bank``), or None."""
    output: OutputTokens = field(default_factory=lambda: OutputTokens(0.0, ""))
    """Output tokens per call for the forecast, and their basis."""
    run_dir: Path | None = None
    """The run folder, whose ``sweep.log`` keeps the cell's console lines (None: no log)."""
    resume_setting: str | None = None
    """The command's setting that finds the run folder again (see
    :func:`mmjudge.engine.stop_line.stop_line`), or None."""
    usage_per_call: Usage | None = None
    """The usage every call of the judge reports, known from its config
    (:meth:`~mmjudge.judges.base.JudgeAPI.usage_per_call`); None: counted per request."""


@dataclass
class Requests:
    """The cell's work items, built from its examples (see :func:`build_work`); the batch
    runner builds some again by key to resubmit them. Images are prepared in ``pool`` when
    one is given."""

    context: CellContext
    examples: Iterable[Example]
    done: set[str]
    pool: ImagePool | None = None

    def __iter__(self) -> Iterator[WorkItem]:
        return build_work(self.context, self.examples, self.done, self.pool)

    def only(self, keys: set[str]) -> Iterator[WorkItem]:
        """The work of the examples ``keys`` name (a sample's key names its example): every
        sample of each; the caller keeps the ones it asked for."""
        if self.context.cfg.prompt.passages_per_call > 1:
            # A call's key names no example: the calls are built again as they first were.
            return build_work(self.context, self.examples, self.done, self.pool)
        examples = {item_of(key) for key in keys}
        chosen = (e for e in self.examples if e.key in examples)
        return build_work(self.context, chosen, set(), self.pool)

    async def prepared_ahead(self, ahead: int) -> AsyncIterator[WorkItem]:
        """The items for the event loop: images prepared in the pool ``ahead`` items before
        their calls, and waiting for them leaves the loop free for the calls in flight."""
        assert self.pool is not None
        prompts = PromptRenderer(
            self.context.cfg.modality, self.context.cfg.prompt, self.context.cfg.dataset
        )
        samples = self.context.cfg.runner.samples
        pending = (e for e in self.examples if is_pending(e.key, self.done, samples))
        if self.context.cfg.prompt.passages_per_call > 1:
            async for item in self._calls_ahead(prompts, pending, ahead):
                yield item
            return
        async for example, prepared in prepared_async(self.pool, pending, ahead):
            images = prepared.images
            if images and self.context.cfg.perturb.kind == "inject_image":
                # Drawing into pictures is CPU work: off the loop, where the calls wait.
                images = await asyncio.to_thread(attacked_images, self.context, example, images)
            items = _items(self.context, prompts, example, images, prepared.error)
            for item in _not_done(items, self.done, samples):
                yield item

    async def _calls_ahead(
        self, prompts: PromptRenderer, pending: Iterator[Example], ahead: int
    ) -> AsyncIterator[WorkItem]:
        """The calls about several results each (``prompt.passages_per_call``), their
        pictures prepared in the pool ``ahead`` results before their calls fill."""
        assert self.pool is not None
        filler = _filler(self.context, prompts)
        async for example, prepared in prepared_async(self.pool, pending, ahead):
            for item in filler.add(example, prepared.images, prepared.error):
                yield item
        for item in filler.rest():
            yield item


def build_work(
    context: CellContext,
    examples: Iterable[Example],
    done: set[str],
    pool: ImagePool | None = None,
) -> Iterator[WorkItem]:
    """A work item per example not in ``done`` (per entry of its bank with
    ``prompt.bank_calls=entry``): its request and how to forecast its call, or the error that
    keeps it from being sent. Images are prepared in ``pool`` when given (a window ahead),
    else one by one in this thread. No side effects."""
    cfg = context.cfg
    prompts = PromptRenderer(cfg.modality, cfg.prompt, cfg.dataset)
    if cfg.prompt.passages_per_call > 1:
        yield from _passage_calls(context, prompts, examples, done, pool)
        return
    samples = cfg.runner.samples
    pending = (example for example in examples if is_pending(example.key, done, samples))
    if cfg.modality.include_image and pool is not None:
        for example, prepared in prepared_sync(pool, pending, PREPARE_AHEAD):
            images = attacked_images(context, example, prepared.images)
            items = _items(context, prompts, example, images, prepared.error)
            yield from _not_done(items, done, samples)
        return
    for example in pending:
        images, error = _images_here(context, example)
        images = attacked_images(context, example, images)
        yield from _not_done(_items(context, prompts, example, images, error), done, samples)


def _not_done(items: Iterator[WorkItem], done: set[str], samples: int) -> Iterator[WorkItem]:
    """The items of a pending example still to judge: all of them with one sample (the
    example is pending), else the samples not judged yet."""
    if samples == 1:
        return items
    return (item for item in items if item.key not in done)


def sample_key(key: str, sample: int) -> str:
    """The work item key of one sample of an item (``runner.samples``): the item's own key
    for sample 0, ``<key><TAB>#<sample>`` for the repeats."""
    return key if sample == 0 else f"{key}\t#{sample}"


def sample_of(key: str) -> int:
    """The sample number a work item key names (0 for a key without one)."""
    head, _, tail = key.rpartition("\t#")
    return int(tail) if head and tail.isdigit() else 0


def item_of(key: str) -> str:
    """The item's own key from the key of one of its samples (itself for sample 0)."""
    head, _, tail = key.rpartition("\t#")
    return head if head and tail.isdigit() else key


def is_pending(key: str, done: set[str], samples: int) -> bool:
    """True while some sample of the item ``key`` is not judged yet."""
    if samples == 1:
        return key not in done
    return any(sample_key(key, sample) not in done for sample in range(samples))


def _sampled(item: WorkItem, samples: int) -> Iterator[WorkItem]:
    """The item, then its repeats for ``runner.samples`` (each request numbered, so each
    answer is cached apart)."""
    yield item
    for sample in range(1, samples):
        request = item.request
        if request is not None:
            request = dataclasses.replace(
                request, sample=sample, item_key=sample_key(request.item_key, sample)
            )
        # A repeat reads what its first reads: the same forecast.
        yield dataclasses.replace(item, key=sample_key(item.key, sample), request=request)


def attacked_images(
    context: CellContext, example: Example, images: tuple[EncodedImage, ...]
) -> tuple[EncodedImage, ...]:
    """The prepared pictures of ``example`` with the cell's perturbation drawn into them
    (``perturb=inject_image``); as they are otherwise."""
    cfg = context.cfg
    grades = tuple(cfg.dataset.scale.grades)
    return perturb_images(images, cfg.perturb, cfg.seed, example.key, grades, cfg.images.quality)


def _images_here(
    context: CellContext, example: Example
) -> tuple[tuple[EncodedImage, ...], str | None]:
    """An example's images prepared in this thread, and the first error preparing them."""
    if not context.cfg.modality.include_image:
        return (), None
    images: list[EncodedImage] = []
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
    """One example's work, each item once per sample (``runner.samples``)."""
    samples = context.cfg.runner.samples
    items = _items_once(context, prompts, example, images, error)
    if samples == 1:
        return items
    return (repeat for item in items for repeat in _sampled(item, samples))


def _items_once(
    context: CellContext,
    prompts: PromptRenderer,
    example: Example,
    images: tuple[EncodedImage, ...],
    error: str | None,
) -> Iterator[WorkItem]:
    """One example's work: its request, or the error that keeps it from being sent (one
    item per bank entry with ``prompt.bank_calls=entry``)."""
    item, _rendered = _single(context, prompts, example, images, error)
    if isinstance(item, WorkItem):
        yield item
    else:
        yield from item


def _single(
    context: CellContext,
    prompts: PromptRenderer,
    example: Example,
    images: tuple[EncodedImage, ...],
    error: str | None,
) -> tuple[WorkItem | Iterator[WorkItem], RenderedPrompt]:
    """One example's work item (its entries' items with ``prompt.bank_calls=entry``) and
    the prompt rendered for it."""
    cfg = context.cfg
    if cfg.modality.include_image and not example.images:
        error = f"result '{example.result_id}' has no image for modality '{cfg.modality.name}'"
    if cfg.perturb.kind != "none":
        # The pictures were attacked where they were prepared (attacked_images).
        example = perturb_example(example, cfg.perturb, cfg.seed, tuple(cfg.dataset.scale.grades))
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
            return _entry_items(context, example, request), rendered
    elif rendered.static_chars:
        mark = cache_mark(cfg.runner, cfg.model, rendered.static_chars, request.query)
        request = request if mark is None else dataclasses.replace(request, cache_mark=mark)
    static_chars = rendered.static_chars if context.bank is None else 0
    item = WorkItem(
        key=example.key,
        request=None if error else request,
        error=error,
        context=ItemCall(example, tuple(image.sha256 for image in request.images)),
        estimate=None
        if error
        else functools.partial(forecast_item, context, request, static_chars),
    )
    return item, rendered


def _passage_calls(
    context: CellContext,
    prompts: PromptRenderer,
    examples: Iterable[Example],
    done: set[str],
    pool: ImagePool | None = None,
) -> Iterator[WorkItem]:
    """``prompt.passages_per_call`` above 1: the results of each query in calls of up to
    that many (:class:`CallFiller`), their images prepared in ``pool`` a window ahead when
    given, else one by one in this thread."""
    pending = (example for example in examples if example.key not in done)
    filler = _filler(context, prompts)
    if pool is not None:
        for example, prepared in prepared_sync(pool, pending, PREPARE_AHEAD):
            yield from filler.add(example, prepared.images, prepared.error)
    else:
        for example in pending:
            yield from filler.add(example, *_images_here(context, example))
    yield from filler.rest()


def _filler(context: CellContext, prompts: PromptRenderer) -> CallFiller:
    """The cell's filler of calls, each result's item built as one result's is."""

    def member(
        example: Example, images: tuple[EncodedImage, ...], error: str | None
    ) -> tuple[WorkItem, RenderedPrompt]:
        images = attacked_images(context, example, images)
        item, rendered = _single(context, prompts, example, images, error)
        assert isinstance(item, WorkItem)  # no bank with several results per call
        return item, rendered

    estimate = functools.partial(forecast_item, context)
    return CallFiller(
        context.cfg.prompt.passages_per_call,
        member,
        functools.partial(passage_call, context.cfg, estimate=estimate),
    )


def forecast_item(
    context: CellContext, request: JudgeRequest, static_chars: int = 0, results: int = 1
) -> Forecast:
    """The forecast of one call: its input tokens counted, its output tokens expected (from
    the answer format: one answer's for each of the ``results`` it judges; a figure set or
    learnt from cached answers is the call's), its shared part (its first
    ``static_chars`` characters) read from the provider's prompt cache where the cell's plan
    caches it."""
    cfg = context.cfg
    plan: CachePlan | None = None
    if static_chars:
        plan = plan_prompt_cache(
            cfg.runner, cfg.model, request.system, request.prompt[:static_chars]
        )
    output = _expected_output_tokens(context, request)
    if context.output.basis == ANSWER_FORMAT:
        output *= results  # the format's estimate is one result's answer
    forecast = forecast_call(request, cfg.model, context.price, output, context.usage_per_call)
    if results > 1:
        forecast.judgments = results
    if context.usage_per_call is not None:
        return forecast
    return with_prompt_cache(forecast, plan, context.price, cfg.model.prompt_cache_min_tokens)


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
            estimate=functools.partial(forecast_item, context, single),
        )


@contextlib.contextmanager
def image_pool(context: CellContext) -> Iterator[ImagePool | None]:
    """Worker threads preparing the cell's images (None for a cell without images)."""
    if not context.cfg.modality.include_image:
        yield None
        return
    pool = ImagePool(context.image_settings, context.image_cache)
    try:
        yield pool
    finally:
        pool.close()
