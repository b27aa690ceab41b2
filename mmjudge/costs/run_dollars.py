"""A run's dollars from its rows: what its judgments cost, what it paid, per million."""

from __future__ import annotations

import math

import pandas as pd

from mmjudge.store import CostFigures


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
