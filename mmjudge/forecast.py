"""Forecasts: calls, tokens and dollars of a cell before any call is made.

Text tokens are counted with tiktoken (exact for OpenAI models, estimated for others; see
:mod:`mmjudge.tokens`), image tokens with the price sheet's image rule, and output tokens per
call come from :mod:`mmjudge.output_tokens` (the forecast names their basis).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from mmjudge.config import ModelConfig
from mmjudge.ledger import LOCAL_PROVIDERS, ModelPrice, cost_of, image_tokens
from mmjudge.records import JudgeRequest, Usage
from mmjudge.tokens import count_tokens

#: Tokens the chat format adds around the messages (role markers and separators).
MESSAGE_OVERHEAD_TOKENS = 7


@dataclass
class Forecast:
    """Expected totals for a set of calls."""

    calls: int = 0
    input_tokens: int = 0
    """All input tokens, image tokens included."""
    image_tokens: int = 0
    output_tokens: float = 0
    """Expected output tokens (a per-call mean times the calls, so not always whole)."""
    usd: float = 0.0
    image_usd: float = 0.0
    exact_text_tokens: bool = True
    """False when text tokens were estimated (no offline tokenizer for the model)."""
    output_basis: str = ""
    """Where the output tokens per call come from (cached answers, the answer format, or
    ``runner.forecast_output_tokens``)."""

    def add(self, other: Forecast) -> None:
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.image_tokens += other.image_tokens
        self.output_tokens += other.output_tokens
        self.usd += other.usd
        self.image_usd += other.image_usd
        self.exact_text_tokens = self.exact_text_tokens and other.exact_text_tokens

    @property
    def usd_per_million(self) -> float:
        return self.usd / self.calls * 1e6 if self.calls else 0.0

    def to_dict(self) -> dict[str, float | int | bool | str]:
        data: dict[str, float | int | bool | str] = asdict(self)
        data["output_tokens"] = round(self.output_tokens)
        data["usd_per_million"] = self.usd_per_million
        return data


def forecast_call(
    request: JudgeRequest,
    model: ModelConfig,
    price: ModelPrice,
    output_tokens: float,
    *,
    batch: bool = False,
    batch_discount: float = 0.5,
) -> Forecast:
    """Expected usage and cost of one call."""
    if model.provider in LOCAL_PROVIDERS:
        return Forecast(calls=1)
    text = (request.system or "") + "\n" + request.prompt
    counted = count_tokens(text, model.model_id, model.provider)
    images = sum(
        image_tokens(price.image_rule, image.width, image.height, model.image_detail)
        for image in request.images
    )
    usage = Usage(
        input_tokens=counted.tokens + MESSAGE_OVERHEAD_TOKENS + images,
        # A mean per call, not always whole; prices are linear in it.
        output_tokens=output_tokens,  # type: ignore[arg-type]
        image_tokens=images,
    )
    cost = cost_of(usage, price, batch=batch, sheet_batch_discount=batch_discount)
    return Forecast(
        calls=1,
        input_tokens=usage.input_tokens,
        image_tokens=images,
        output_tokens=output_tokens,
        usd=cost.total_usd,
        image_usd=cost.image_usd,
        exact_text_tokens=counted.exact,
    )
