"""The rows of a cell: each outcome turned into its judgment record, its grade read from the
answer (directly or through the test bank's entries), priced and redacted."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple

from mmjudge.engine.policy import ItemCall, Outcome
from mmjudge.engine.work import (
    CellContext,
)
from mmjudge.keyguard import redact_text
from mmjudge.prompts import instruction_language
from mmjudge.prompts.parsing import parse_grade
from mmjudge.records import JudgmentRecord
from mmjudge.testbank import grading as bank_grading


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
    elif (
        response is not None
        and (passage := item_call(outcome).passage) is not None
        and not passage.asked_again
        and passage.grade is not None
    ):  # the call's answer graded it (or said why not); asked again: that answer's grade
        label, explanation, parse_error = passage.grade
    elif response is not None:
        label, explanation, parse_error = parse_grade(response.text, list(cfg.dataset.scale.grades))
    if response is not None and response.stop_reason == "refusal" and label is None:
        parse_error = "the model refused to answer"
    return Graded(label, explanation, parse_error, bank_fields)


def judgment_record(context: CellContext, outcome: Outcome) -> JudgmentRecord:
    """The row of one outcome: its grade read from the answer (or the bank's entries),
    usage and cost as priced, and any error redacted."""
    cfg = context.cfg
    call = item_call(outcome)
    example, image_hashes, passage = call.example, call.image_hashes, call.passage
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
        call_id=None if passage is None else passage.call_id,
        call_position=None if passage is None else passage.position,
        call_size=None if passage is None else passage.size,
        reasked=passage is not None and passage.asked_again,
        **bank_fields,
    )
