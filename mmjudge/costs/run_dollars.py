"""A run's dollars from its rows: what its judgments cost, what it paid, per million."""

from __future__ import annotations

import math

import pandas as pd

from mmjudge.costs.calls import CallPricer
from mmjudge.costs.ledger import cost_of
from mmjudge.records import Usage
from mmjudge.store import CostFigures, PromptCacheUse


def cost_figures(frame: pd.DataFrame) -> CostFigures:
    """Dollars: total, spent in this run (cache hits are free), and per million judgments.

    ``resent_usd`` estimates what requests lost in flight by a stopped process cost: the
    provider billed them, and each is priced as the request sent again in its place. It is
    part of ``spent_usd`` but not of ``total_usd`` and the per-million figures, which price
    the judgments themselves.

    ``possibly_billed_usd`` is what sends that may have reached the provider without an
    answer may have cost (timed out or cut off after leaving; see
    :meth:`mmjudge.engine.policy.CallPolicy.possibly_billed`, which priced each row's at
    the call's forecast): a possible extra beside ``spent_usd``, not part of it. The rows hold
    only the sends of items that got a row; a run's summary takes the figure from the
    runner's count instead (:func:`mmjudge.engine.summarise.summarise_run`).
    """
    n = len(frame)
    if not n:
        return CostFigures()
    total = _exact_sum(frame["cost_usd"])
    image = _exact_sum(frame["image_cost_usd"])
    resent_usd = _exact_sum(frame["cost_usd"] * frame["resent"])
    spent = _exact_sum(frame.loc[~frame["cached"], "cost_usd"]) + resent_usd
    per_million = total / n * 1e6
    image_per_million = image / n * 1e6
    return CostFigures(
        total_usd=total,
        spent_usd=spent,
        usd_per_million=per_million,
        image_usd_per_million=image_per_million,
        text_usd_per_million=per_million - image_per_million,
        resent_requests=int(frame["resent"].sum()),
        resent_usd=resent_usd,
        possibly_billed_requests=int(_column(frame, "possibly_billed").sum()),
        possibly_billed_usd=_exact_sum(_column(frame, "possibly_billed_usd")),
    )


def _exact_sum(dollars: pd.Series) -> float:
    """The correctly rounded sum, so a run's dollars do not depend on the order its answers
    came back in (a plain float sum differs in the last digit between two orders)."""
    return math.fsum(dollars.astype(float).tolist())


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column, zeros where the rows predate it."""
    if name in frame:
        return frame[name]
    return pd.Series(0, index=frame.index)


def prompt_cache_use(frame: pd.DataFrame, pricer: CallPricer) -> PromptCacheUse | None:
    """What the provider's prompt cache did in a run, from the usage its rows report; None
    where no row read or wrote a cached token.

    The saving is each call's list price (every input token at the input price) minus its
    price with the cache's buckets, both from the ledger under the run's sheet and at the
    batch discount where the call went through a batch API, summed over the rows.
    """
    if not len(frame) or "cached_input_tokens" not in frame:
        return None
    read = int(frame["cached_input_tokens"].sum())
    written = int(frame["cache_write_tokens"].sum())
    if not read and not written:
        return None
    touched = frame[(frame["cached_input_tokens"] > 0) | (frame["cache_write_tokens"] > 0)]
    buckets = ("input_tokens", "output_tokens", "image_tokens", "cached_input_tokens")
    columns = [
        [int(value) for value in touched[name].tolist()]
        for name in (*buckets, "cache_write_tokens", "cache_write_1h_tokens")
    ]
    discount = pricer.sheet_batch_discount
    saved: list[float] = []
    for batch, (given, out, image, cached, wrote, hour) in zip(
        touched["batch"].tolist(), zip(*columns, strict=True), strict=True
    ):
        listed = Usage(input_tokens=given, output_tokens=out, image_tokens=image)
        usage = Usage(
            input_tokens=given,
            output_tokens=out,
            image_tokens=image,
            cached_input_tokens=cached,
            cache_write_tokens=wrote,
            cache_write_1h_tokens=hour,
        )
        full = cost_of(listed, pricer.price, batch=bool(batch), sheet_batch_discount=discount)
        paid = cost_of(usage, pricer.price, batch=bool(batch), sheet_batch_discount=discount)
        saved.append(full.total_usd - paid.total_usd)
    total_input = int(frame["input_tokens"].sum())
    saved_usd = math.fsum(saved)
    return PromptCacheUse(
        input_tokens=total_input,
        read_tokens=read,
        write_tokens=written,
        hit_rate=read / total_input if total_input else 0.0,
        saved_usd=saved_usd,
        saved_usd_per_million=saved_usd / len(frame) * 1e6,
    )
