"""``prompt.bank_calls=entry``: one call per (result, entry), gathered into one row per result.

Each call shows one entry, labelled with its place in the query's bank (``E3``), so the
answers of a result's calls, joined, read like one answer about the whole bank and are graded
by the same rule. The row's usage, latency and resent count are the sums over its calls; it
counts as cached only when every call came from the cache; a failed call makes the row an
error row (its other calls are in the cache, so a rerun pays only for the failed one).
"""

from __future__ import annotations

import dataclasses

from mmjudge.costs.calls import UNPRICED, PricedCall
from mmjudge.engine.policy import EntryCall, ItemCall, Outcome, WorkItem
from mmjudge.records import Forecast, Usage


class EntryCollector:
    """Gathers the outcomes of a result's entry calls into one outcome for its row."""

    def __init__(self) -> None:
        self._parts: dict[str, dict[int, Outcome]] = {}

    def add(self, outcome: Outcome) -> Outcome | None:
        """The result's merged outcome once its last call is in, else None."""
        call = outcome.item.context
        if not isinstance(call, EntryCall):
            return outcome
        key = call.request.item_key
        parts = self._parts.setdefault(key, {})
        parts[call.position] = outcome
        if len(parts) < call.n_calls:
            return None
        del self._parts[key]
        return merge([parts[i] for i in sorted(parts)], call)


def merge(outcomes: list[Outcome], call: EntryCall) -> Outcome:
    forecast = Forecast()
    for outcome in outcomes:
        forecast.add(outcome.item.forecast)
    item = WorkItem(
        key=call.request.item_key,
        request=call.request,
        forecast=forecast,
        context=ItemCall(call.example, tuple(image.sha256 for image in call.request.images)),
    )
    cached = all(o.cached for o in outcomes)
    attempts = sum(o.attempts for o in outcomes)
    latency = sum(o.latency_s for o in outcomes)
    resent = sum(o.resent for o in outcomes)
    maybe = sum(o.possibly_billed for o in outcomes)
    maybe_usd = sum(o.possibly_billed_usd for o in outcomes)
    failed = next((o for o in outcomes if o.response is None), None)
    if failed is not None:
        error = failed.error or "an entry call failed"
        return Outcome(
            item, None, error, cached, attempts, latency, resent, UNPRICED, maybe, maybe_usd
        )
    responses = [o.response for o in outcomes if o.response is not None]
    usage = Usage()
    for response in responses:
        usage = usage + response.usage
    merged = dataclasses.replace(
        responses[0],
        text="\n".join(r.text.strip() for r in responses),
        usage=usage,
        raw_usage={"calls": [r.raw_usage for r in responses]},
        latency_s=sum(r.latency_s for r in responses),
        batch=all(r.batch for r in responses),
    )
    priced = PricedCall(
        sum((o.priced.usage for o in outcomes), Usage()),
        sum(o.priced.total_usd for o in outcomes),
        sum(o.priced.image_usd for o in outcomes),
    )
    return Outcome(item, merged, None, cached, attempts, latency, resent, priced, maybe, maybe_usd)
