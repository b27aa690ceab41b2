"""Forecasts: calls, tokens and dollars of a cell before any call is made.

Text tokens are counted with tiktoken (exact for OpenAI models, estimated for others; see
:mod:`mmjudge.costs.tokens`), image tokens with the price sheet's image rule, and output tokens per
call come from :mod:`mmjudge.costs.output_tokens` (the forecast names their basis).
"""

from __future__ import annotations

from mmjudge.config import ModelConfig
from mmjudge.costs.image_tokens import image_tokens
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import FREE, ModelPrice
from mmjudge.costs.tokens import count_tokens
from mmjudge.judges.registry import facts, token_counting
from mmjudge.prompts.passages import answer_schema
from mmjudge.records import Forecast, JudgeRequest, Usage, canonical_json

#: Tokens the chat format adds around the messages (role markers and separators).
MESSAGE_OVERHEAD_TOKENS = 7


def forecast_text(system: str | None, prompt: str) -> str:
    """The text whose tokens a call's forecast counts: the system message and the prompt."""
    return (system or "") + "\n" + prompt


def forecast_call(
    request: JudgeRequest,
    model: ModelConfig,
    price: ModelPrice,
    output_tokens: float,
    usage: Usage | None = None,
) -> Forecast:
    """Expected usage and cost of one call; ``usage``: what the judge's every call reports,
    known from its config (:meth:`mmjudge.judges.base.JudgeAPI.usage_per_call`), priced as
    it is."""
    if price is FREE:  # a free judge (see price_for)
        return Forecast(calls=1)
    if usage is not None:
        known = cost_of(usage, price)
        return Forecast(
            calls=1,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            usd=known.total_usd,
            exact_text_tokens=True,
        )
    text = forecast_text(request.system, request.prompt)
    structured = 0
    if request.answer is not None:  # the schema is read too, with what the provider adds
        text += "\n" + canonical_json(answer_schema(request.answer))
        structured = facts(model.provider).structured_prompt_tokens
    counted = count_tokens(text, model.model_id, token_counting(model.provider, model.model_id))
    images = sum(
        image_tokens(price.image_rule, image.width, image.height, model.image_detail)
        for image in request.images
    )
    usage = Usage(
        input_tokens=counted.tokens + MESSAGE_OVERHEAD_TOKENS + structured + images,
        # A mean per call, not always whole; prices are linear in it.
        output_tokens=output_tokens,  # type: ignore[arg-type]
        image_tokens=images,
    )
    cost = cost_of(usage, price)
    return Forecast(
        calls=1,
        input_tokens=usage.input_tokens,
        image_tokens=images,
        output_tokens=output_tokens,
        usd=cost.total_usd,
        image_usd=cost.image_usd,
        exact_text_tokens=counted.exact,
    )
