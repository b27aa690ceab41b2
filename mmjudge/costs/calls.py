"""One answered call, priced once: the usage it is billed for and what it cost.

The runner prices each answer (a cache hit too, which is recorded at what it cost when it
was bought) the moment it has it, and the figures travel with the outcome to the row and to
the run's spend, so no later step prices the call again.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from mmjudge.config import ModelConfig
from mmjudge.costs.image_tokens import image_tokens
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import ModelPrice
from mmjudge.records import JudgeRequest, JudgeResponse, Usage


class PricedCall(NamedTuple):
    """What one answer is billed for and costs."""

    usage: Usage
    """The provider's usage, with image tokens estimated from the sheet's rule when the
    provider reports none (they are inside ``input_tokens`` either way)."""
    total_usd: float
    """Dollars for the call (at batch prices for a batch answer)."""
    image_usd: float
    """The images' share of ``total_usd``."""


#: A call that costs nothing (a test's or a free judge's).
UNPRICED = PricedCall(Usage(), 0.0, 0.0)


@dataclasses.dataclass(frozen=True)
class CallPricer:
    """Prices answers of one model under one price sheet."""

    price: ModelPrice
    """The model's prices in the sheet."""
    model: ModelConfig
    """The model (for its image detail setting)."""
    sheet_batch_discount: float = 0.5
    """The sheet's batch discount, for models whose entry gives none."""

    def __call__(self, request: JudgeRequest, response: JudgeResponse) -> PricedCall:
        usage = response.usage
        if not usage.image_tokens and request.images:
            rule, detail = self.price.image_rule, self.model.image_detail
            estimate = sum(image_tokens(rule, i.width, i.height, detail) for i in request.images)
            usage = dataclasses.replace(usage, image_tokens=estimate)
        total, image = cost_of(
            usage, self.price, batch=response.batch, sheet_batch_discount=self.sheet_batch_discount
        )
        return PricedCall(usage, total, image)
