"""A cell's work: a work item per example, with its request (prompt and images) and the
call's forecast, built without side effects, and built again by key when the batch runner
resubmits some."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from mmjudge.config import SweepConfig
from mmjudge.costs.forecast import forecast_call
from mmjudge.costs.sheets import ModelPrice
from mmjudge.data.loading import load_dataset, sampled_queries
from mmjudge.data.schema import Example
from mmjudge.errors import ImageError
from mmjudge.images import ImageCache, ImageSettings, preprocess_image
from mmjudge.judges.base import JudgeAPI
from mmjudge.prompts import render
from mmjudge.records import EncodedImage, Forecast, JudgeRequest
from mmjudge.running.policy import WorkItem
from mmjudge.testbank import grading as bank_grading
from mmjudge.testbank.bank import Bank
from mmjudge.testbank.per_entry import EntryCall


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
    bank: Bank | None = None
    """The test bank the cell grades against (``prompt.bank``), or None."""


class ExampleStream:
    """Re-iterable view of a dataset's examples, read from disk on each pass.

    A query sample (``dataset.sample_queries``) is drawn once, on the first pass, and kept
    for every later one.
    """

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg

    @functools.cached_property
    def queries(self) -> frozenset[str] | None:
        return sampled_queries(self.cfg.dataset, self.cfg.seed)

    def __iter__(self) -> Iterator[Example]:
        return load_dataset(self.cfg.dataset, seed=self.cfg.seed, queries=self.queries)


@dataclass
class Requests:
    """The cell's work items, built from its examples (see :func:`_work`); the batch runner
    builds some again by key to resubmit them."""

    context: CellContext
    examples: Iterable[Example]
    done: set[str]

    def __iter__(self) -> Iterator[WorkItem]:
        return build_work(self.context, self.examples, self.done)

    def only(self, keys: set[str]) -> Iterator[WorkItem]:
        return build_work(self.context, (e for e in self.examples if e.key in keys), set())


def build_work(
    context: CellContext, examples: Iterable[Example], done: set[str]
) -> Iterator[WorkItem]:
    """A work item per example not in ``done`` (per entry of its bank with
    ``prompt.bank_calls=entry``): its request and the call's forecast, or the error that keeps
    it from being sent. No side effects."""
    cfg = context.cfg
    for example in examples:
        if example.key in done:
            continue
        request, error = _request(context, example)
        output_tokens = cfg.runner.forecast_output_tokens
        if context.bank is not None:
            request, problem = _bank_request(context, example, request)
            error = error or problem
            output_tokens = bank_grading.output_tokens(len(request.entries), cfg.prompt.spans)
            if error is None and cfg.prompt.bank_calls == "entry":
                yield from _entry_items(context, example, request)
                continue
        expected = Forecast()
        if error is None:
            expected = forecast_call(request, cfg.model, context.price, output_tokens)
        yield WorkItem(
            key=example.key,
            request=None if error else request,
            error=error,
            forecast=expected,
            context=(example, tuple(image.sha256 for image in request.images)),
        )


def _request(context: CellContext, example: Example) -> tuple[JudgeRequest, str | None]:
    """The example's request (prompt and images), and what keeps it from being sent."""
    cfg = context.cfg
    images: list[EncodedImage] = []
    error = None
    if cfg.modality.include_image:
        if not example.images:
            error = f"result '{example.result_id}' has no image for modality '{cfg.modality.name}'"
        for path, name in zip(example.images, example.image_names, strict=True):
            try:
                images.append(
                    preprocess_image(
                        path, context.image_settings, context.image_cache, display_source=name
                    )
                )
            except ImageError as exc:
                error = str(exc)
                break
    rendered = render(example, cfg.modality, cfg.prompt, cfg.dataset, n_images=len(images))
    text_only = cfg.modality.include_text and not cfg.modality.include_image
    if error is None and text_only and not rendered.fields:
        error = f"result '{example.result_id}' has no text fields for modality 'text'"
    request = JudgeRequest(
        item_key=example.key,
        prompt=rendered.text,
        system=rendered.system,
        images=tuple(images),
        query=example.query,
        fields=rendered.fields,
        grades=tuple(cfg.dataset.scale.grades),
    )
    return request, error


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
        expected = forecast_call(
            single,
            cfg.model,
            context.price,
            bank_grading.output_tokens(1, cfg.prompt.spans),
        )
        yield WorkItem(
            key=single.item_key,
            request=single,
            forecast=expected,
            context=EntryCall(example, request, len(entries), position),
        )
