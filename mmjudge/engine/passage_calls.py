"""Calls about several results of one query (``prompt.passages_per_call``): results put
into calls as their examples come (:class:`CallFiller`), and the pictures of a call's results
placed after their markers, within the provider's request size (:func:`placed_pictures`),
and the work item of each call (:func:`passage_call`). How one result's item is built and a
call forecast is :mod:`mmjudge.engine.work`'s."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Iterator
from typing import NamedTuple

from mmjudge.config import ModelConfig, SweepConfig
from mmjudge.data.schema import Example
from mmjudge.engine.policy import PassagesCall, WorkItem
from mmjudge.judges.descriptor import ImageLimits
from mmjudge.judges.registry import facts
from mmjudge.prompts import RenderedPrompt
from mmjudge.prompts.passages import call_weights, grades_answer, marker_ends, render_passages
from mmjudge.records import EncodedImage, Forecast, JudgeRequest, sha256_text

#: A result's own item and prompt from its example, its prepared pictures and the error
#: preparing them.
Member = Callable[[Example, tuple[EncodedImage, ...], str | None], tuple[WorkItem, RenderedPrompt]]
#: The forecast of a call: its request, its shared part's characters, the results it judges.
Estimate = Callable[[JudgeRequest, int, int], Forecast]
#: The items of one call about the given results of a query.
Call = Callable[[list[tuple[WorkItem, RenderedPrompt]]], Iterator[WorkItem]]


class CallFiller:
    """Puts results into calls of up to ``prompt.passages_per_call``, in the order the
    examples come (a query's results fill a call as they arrive; the last call of a query
    takes what is left), and an example that cannot be sent is its own item.

    Only the results without a row are put in calls, so no result with a row is sent again:
    a call's rows are written together (:meth:`~mmjudge.store.rows.RowWriter.together`), so a
    resumed run finds a call's results all judged or none, and builds the calls it had not
    finished as they were (the answer of one whose rows a kill kept from being written comes
    from the response cache); a race's next round puts only its new items in calls."""

    def __init__(self, size: int, member: Member, call: Call) -> None:
        self.size = size
        """``prompt.passages_per_call``."""
        self.member = member
        """A result's own item and prompt, from its example and prepared pictures."""
        self.call = call
        """The items of one call about a query's results (the call's, or the lone result's)."""
        self.filling: dict[str, list[tuple[WorkItem, RenderedPrompt]]] = {}
        """Per query: the results waiting for their call to fill."""

    def add(
        self, example: Example, images: tuple[EncodedImage, ...], error: str | None
    ) -> Iterator[WorkItem]:
        """The items ``example`` (with its prepared ``images``, or the error preparing them)
        completes: its own when it cannot be sent, its query's call when it fills it."""
        item, rendered = self.member(example, images, error)
        if item.request is None:
            yield item
            return
        call = self.filling.setdefault(example.query_id, [])
        call.append((item, rendered))
        if len(call) == self.size:
            del self.filling[example.query_id]
            yield from self.call(call)

    def rest(self) -> Iterator[WorkItem]:
        """The calls left when the examples end, each with what its query had left."""
        for call in self.filling.values():
            yield from self.call(call)
        self.filling.clear()


def structured_answer(cfg: SweepConfig) -> bool:
    """Whether a cell's calls about several results ask for a structured answer
    (``prompt.answer_format``): where set to ``structured``, or ``auto`` and its provider has
    a structured output (:attr:`~mmjudge.judges.descriptor.JudgeDescriptor.structured_output`)."""
    if cfg.prompt.passages_per_call == 1 or cfg.prompt.answer_format == "lines":
        return False
    return facts(cfg.model.provider).structured_output is not None


def passage_call(
    cfg: SweepConfig, members: list[tuple[WorkItem, RenderedPrompt]], *, estimate: Estimate
) -> Iterator[WorkItem]:
    """The work item of one call about ``members`` (results of one query), shown in an order
    drawn from the run's seed and their keys; a lone result is sent as it is. With pictures,
    each result's after its marker; a call over the provider's request size is not sent, and
    each of its results gets a row saying why."""
    if len(members) == 1:
        yield members[0][0]
        return
    order = sorted(members, key=lambda member: member[0].key)
    random.Random("\t".join([str(cfg.seed), *(item.key for item, _ in order)])).shuffle(order)
    singles = tuple(item for item, _ in order)
    call_id = sha256_text("\n".join(item.key for item in singles))[:16]
    first = singles[0].request
    assert first is not None
    shown = [rendered for _, rendered in order]
    grades, reasons = cfg.dataset.scale.grades, cfg.prompt.passage_reasons
    structured = structured_answer(cfg)
    request = dataclasses.replace(
        first,
        item_key=f"call:{call_id}",
        prompt=render_passages(
            shown,
            grades,
            reasons,
            structured,
            shows_text=cfg.modality.include_text,
            shows_image=cfg.modality.include_image,
        ),
        fields=(),
        answer=grades_answer(len(order), grades, reasons) if structured else None,
    )
    if cfg.modality.include_image:
        request, problem = placed_pictures(request, singles, shown, cfg.model)
        if problem is not None:  # the call would be refused: each result's row says why
            for single in singles:
                yield dataclasses.replace(single, request=None, error=problem, estimate=None)
            return
    static_chars = order[0][1].static_chars
    yield WorkItem(
        key=request.item_key,
        request=request,
        context=PassagesCall(call_id, singles, call_weights(shown, request.prompt, request.system)),
        estimate=functools.partial(estimate, request, static_chars, len(order)),
    )


class PlacedPictures(NamedTuple):
    """A call's request with its results' pictures placed, or why it cannot be sent."""

    request: JudgeRequest
    """The call's request, every result's pictures after its marker."""
    problem: str | None
    """Why the call would be refused (its pictures over the provider's request size); None
    when it can go."""


def placed_pictures(
    request: JudgeRequest,
    singles: tuple[WorkItem, ...],
    shown: list[RenderedPrompt],
    model: ModelConfig,
) -> PlacedPictures:
    """``request`` (the call about ``singles``, whose prompts ``shown`` it shows in that
    order) with each result's pictures placed after its marker. Their number is within the
    provider's limit (:func:`~mmjudge.engine.passages.passages_refusal` refused the cell
    otherwise); their size is known only now, and a call over the provider's request size is
    not sent."""
    images = tuple(image for single in singles if single.request for image in single.request.images)
    ends = marker_ends(request.prompt, shown)
    places = tuple(
        end
        for single, end in zip(singles, ends, strict=True)
        if single.request
        for _image in single.request.images
    )
    placed = dataclasses.replace(request, images=images, image_places=places)
    limits = image_limits(model)
    size = sum(len(image.data) for image in images)
    if limits is not None and limits.max_bytes is not None and size > limits.max_bytes:
        return PlacedPictures(
            placed,
            f"the {len(singles)} results' pictures take {size / 1e6:.1f} MB, over the "
            f"{limits.max_bytes / 1e6:g} MB of {limits.source}; use a smaller "
            "prompt.passages_per_call, or smaller pictures (images.size, images.format=jpeg)",
        )
    return PlacedPictures(placed, None)


def image_limits(model: ModelConfig) -> ImageLimits | None:
    """What one request to ``model`` may carry in pictures: its provider's stated limits
    (:attr:`~mmjudge.judges.descriptor.JudgeDescriptor.image_limits`), the count replaced by
    ``model.max_images_per_call`` where set; None where neither states one."""
    stated = facts(model.provider).image_limits
    own = model.max_images_per_call
    if own is None:
        return stated
    source = f"model.max_images_per_call of '{model.name}'"
    if stated is None:
        return ImageLimits(max_images=own, max_bytes=None, source=source)
    return dataclasses.replace(stated, max_images=own, source=source)


def pictures_refusal(cfg: SweepConfig) -> str | None:
    """Why a call about ``prompt.passages_per_call`` results, each with up to
    ``dataset.max_images`` pictures, could carry more pictures than one request to the model
    takes, or pictures too large for that many (:func:`image_limits`); None when it cannot,
    or when no limit is stated. A single result's call is checked too: with one result per
    call, ``dataset.max_images`` is what to lower."""
    limits = image_limits(cfg.model)
    if limits is None:
        return None
    size = cfg.prompt.passages_per_call
    per_result = max(cfg.dataset.max_images, 1)
    pictures = size * per_result
    said = (
        f"prompt.passages_per_call={size} with dataset.max_images={per_result} sends up to "
        if size > 1
        else f"dataset.max_images={per_result} sends up to "
    )
    if pictures > limits.max_images:
        most = limits.max_images // per_result
        change = (
            f"prompt.passages_per_call={most} or less"
            if size > 1 and most >= 1
            else f"dataset.max_images={limits.max_images} or less"
        )
        return (
            f"{said}{pictures} pictures in one call, over the {limits.max_images} of "
            f"{limits.source}; use {change}"
        )
    side = cfg.images.size  # every prepared picture is this many pixels a side
    crowd = limits.crowd
    if crowd is None or pictures <= crowd.pictures or cfg.images.encoding == "url":
        return None  # (a passed-through URL's size is not known here)
    if side <= crowd.max_side:
        return None
    most = max(crowd.pictures // per_result, 1)
    return (
        f"{said}{pictures} pictures of {side} px a side in one call, and {limits.source} "
        f"takes more than {crowd.pictures} only up to {crowd.max_side} px a side; use "
        f"images.size={crowd.max_side} or less, or prompt.passages_per_call={most} or less"
    )
