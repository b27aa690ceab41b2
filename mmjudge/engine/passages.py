"""The outcome of a call about several results of one query (``prompt.passages_per_call``)
turned into one outcome per result, for its row.

Each result gets the grade its marker gives (:func:`~mmjudge.prompts.passages.
parse_passages`) and its share of the call's usage and dollars
(:func:`~mmjudge.costs.split.split_priced`: its listing's part of the input and an equal part
of the rest; the shares add up to the call exactly); the
sends that may have been billed without an answer, and the lost sends resent, go with the
first result that gets a row. A result the answer left without a grade, where it graded
others, is asked again on its own: its row waits for that second call, whose grade it takes,
with the call's share plus the second call in its usage and cost. An answer that grades no
result is unreadable as a whole, as an unreadable answer about one result is: no result is
asked again. A failed call is an error row for each result (retried on resume).

The calls hold only results without a row (:mod:`mmjudge.engine.work`), and a call's rows
are written together, so a resumed run sends no result that has one.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from mmjudge.config import SweepConfig
from mmjudge.costs.calls import UNPRICED, PricedCall
from mmjudge.costs.sheets import ModelPrice, price_for
from mmjudge.costs.split import split_priced
from mmjudge.engine.policy import ItemCall, Outcome, Passage, PassagesCall, WorkItem
from mmjudge.errors import ConfigError
from mmjudge.judges.registry import facts, is_free
from mmjudge.prompts.parsing import ParsedGrade
from mmjudge.prompts.passages import parse_passages


class Split(NamedTuple):
    """A call's outcome shared out: the outcomes whose rows can be written now, and the
    results to ask again on their own."""

    outcomes: list[Outcome]
    """One per result of the call with a row to write, in the order shown."""
    again: list[WorkItem]
    """The results the answer left without a grade, each its own work item carrying its
    place and share (:class:`~mmjudge.engine.policy.Passage`)."""


class PassageSplitter:
    """Shares out the outcomes of calls about several results (any other outcome passes
    through as it is)."""

    def __init__(self, price: ModelPrice, grades: tuple[int, ...]) -> None:
        self.price = price
        self.grades = grades

    def split(self, outcome: Outcome) -> Split:
        """``outcome`` as one outcome per result (itself for a call about one result)."""
        call = outcome.item.context
        if isinstance(call, ItemCall) and call.passage is not None:
            return Split([_with_share(outcome, call.passage)], [])
        if not isinstance(call, PassagesCall):
            return Split([outcome], [])
        size = len(call.singles)
        response = outcome.response
        shares = [UNPRICED] * size
        grades: tuple[ParsedGrade | None, ...] = (None,) * size
        some_read = False
        if response is not None:
            shares = split_priced(outcome.priced, size, self.price, call.weights)
            read = parse_passages(response.text, size, self.grades)
            some_read = read.any_read
            grades = read.grades if some_read else _unreadable(read.grades)
        outcomes: list[Outcome] = []
        again: list[WorkItem] = []
        first = True  # the call's lost and possibly billed sends go on its first row
        for position, (single, share, grade) in enumerate(
            zip(call.singles, shares, grades, strict=True), start=1
        ):
            ask_again = some_read and grade is not None and grade.label is None
            passage = Passage(
                call.call_id, position, size, None if ask_again else grade, share, ask_again
            )
            item = _member(single, passage)
            if ask_again:
                again.append(item)
                continue
            # Its row records the prompt the call sent (the model read it among the others).
            item = dataclasses.replace(item, request=outcome.item.request)
            outcomes.append(_member_outcome(outcome, item, share, first))
            first = False
        return Split(outcomes, again)


def _unreadable(grades: tuple[ParsedGrade, ...]) -> tuple[ParsedGrade, ...]:
    """The grades of an answer that graded no result: each result's reason, said to be the
    whole answer's (no result is asked again)."""
    return tuple(
        ParsedGrade(None, g.explanation, f"the answer grades none of its results: {g.error}")
        for g in grades
    )


def _member(single: WorkItem, passage: Passage) -> WorkItem:
    """A result's own work item, carrying where it stood in the call."""
    call = single.context
    assert isinstance(call, ItemCall)
    return dataclasses.replace(single, context=call._replace(passage=passage))


def _member_outcome(outcome: Outcome, item: WorkItem, share: PricedCall, extras: bool) -> Outcome:
    """The outcome of one result of a call: the call's answer (or error), its share."""
    return Outcome(
        item=item,
        response=outcome.response,
        error=outcome.error,
        cached=outcome.cached,
        attempts=outcome.attempts,
        latency_s=outcome.latency_s,
        resent=outcome.resent if extras else 0,
        priced=share,
        possibly_billed=outcome.possibly_billed if extras else 0,
        possibly_billed_usd=outcome.possibly_billed_usd if extras else 0.0,
    )


def _with_share(outcome: Outcome, passage: Passage) -> Outcome:
    """The outcome of a result asked again on its own, with its share of the first call
    added to its usage and cost (an answer from the response cache included)."""
    own = outcome.priced if outcome.response is not None else UNPRICED
    share = passage.share
    priced = PricedCall(
        share.usage + own.usage,
        share.total_usd + own.total_usd,
        share.image_usd + own.image_usd,
    )
    return dataclasses.replace(outcome, priced=priced)


def passages_refusal(cfg: SweepConfig) -> str | None:
    """Why a cell cannot show several results per call, known from its config; None when it
    can (or shows one). A judge that runs here reads each result's fields, not the prompt.
    (Whether its calls' pictures fit one request is
    :func:`~mmjudge.engine.passage_calls.pictures_refusal`'s, for any
    number of results per call.)"""
    size = cfg.prompt.passages_per_call
    if size == 1:
        return None
    if is_free(cfg.model):
        return (
            f"prompt.passages_per_call={size}: the {cfg.model.name} judge grades one result at "
            "a time; use prompt.passages_per_call=1 with it"
        )
    if _priced_per_judgment(cfg):
        return (
            f"prompt.passages_per_call={size}: '{cfg.model.name}' is priced per judgment "
            "(its sheet entry's judgments_per_s), which the ledger charges once per call; "
            "use prompt.passages_per_call=1 with it, or price it per token"
        )
    if (
        cfg.prompt.answer_format == "structured"
        and facts(cfg.model.provider).structured_output is None
    ):
        return (
            f"prompt.answer_format=structured: provider '{cfg.model.provider}' has no "
            "structured output mmjudge sends; use prompt.answer_format=lines (or auto)"
        )
    return None


def _priced_per_judgment(cfg: SweepConfig) -> bool:
    """Whether the cell's sheet prices its judge per judgment rather than per token."""
    try:
        return price_for(cfg.pricing, cfg.model).per_judgment > 0
    except ConfigError:  # a judge without a price stops the run elsewhere, in its own words
        return False
