"""Provider prompt caching: whether a cell's requests offer their static part to the
provider's cache, and what that is expected to save.

A judge prompt starts with the part every item of a cell shares (instructions, the grade
scale, guidelines: :attr:`mmjudge.prompts.RenderedPrompt.static_chars`), then the query and
the result. A provider keeps such a leading part once it has seen it and bills later calls
that start with it at its cache-read price:

* **marked** (Anthropic): the request marks where the part ends (``cache_control``); the
  first call writes it (1.25x the input price for five minutes, 2x for an hour), later calls
  read it (0.1x). A marked request with images shows the part first and its images after
  it, so the images of one item never stand between the part and the cache.
* **automatic** (OpenAI): prefixes of 1,024 tokens and more are kept without a mark, at no
  write charge; mmjudge adds a routing key per query (``prompt_cache_key``).

Either way nothing is kept below the model's minimum (``model.prompt_cache_min_tokens``), so
the plan says so and the requests go out unmarked.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from typing import NamedTuple

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.costs.forecast import MESSAGE_OVERHEAD_TOKENS, forecast_text
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import ModelPrice
from mmjudge.costs.tokens import count_tokens
from mmjudge.judges.registry import describe, token_counting
from mmjudge.records import Forecast, PromptCacheMark, Usage

#: ``JudgeDescriptor.prompt_cache`` of a provider whose requests mark the cached part.
MARKED = "marked"
#: ``JudgeDescriptor.prompt_cache`` of a provider that caches long prefixes on its own.
AUTOMATIC = "automatic"
#: An automatic cache keeps prefixes in steps of this many tokens past the minimum.
AUTOMATIC_STEP_TOKENS = 128


class CachePlan(NamedTuple):
    """Whether one cell's requests offer their static part to the provider's cache."""

    style: str
    """``marked``, ``automatic``, or ``""`` where nothing is cached."""
    prefix_tokens: int
    """Tokens of the shared leading part (system message and static prompt text)."""
    skipped: str
    """Why a provider that caches prompts is offered nothing, in words, for the forecast to
    tell (``""`` when it is offered the part, when ``runner.prompt_cache=off`` and when the
    provider has no cache mmjudge arranges)."""

    @property
    def cached(self) -> bool:
        """True when the part is offered to the cache."""
        return bool(self.style)


def plan_prompt_cache(
    runner: RunnerConfig,
    model: ModelConfig,
    system: str | None,
    prefix: str,
) -> CachePlan:
    """The cache plan of requests whose shared leading part is ``system`` and ``prefix``: the
    forecast's (it counts the part's tokens against the model's minimum)."""
    style, skipped = _offer(runner, model, bool(prefix))
    if not style:
        return CachePlan("", 0, skipped)
    minimum = model.prompt_cache_min_tokens
    assert minimum is not None  # _offer offers nothing without one
    tokens = prefix_tokens(system, prefix, model.provider, model.model_id)
    if tokens < minimum:
        return CachePlan(
            "",
            tokens,
            f"the shared part is {tokens:,} tokens, below {model.model_id}'s minimum of "
            f"{minimum:,}",
        )
    return CachePlan(style, tokens, "")


@functools.lru_cache(maxsize=256)
def prefix_tokens(system: str | None, prefix: str, provider: str, model_id: str) -> int:
    """Tokens of the shared leading part, counted as a forecast counts a call (memoised: every
    item of a cell has the same part)."""
    text = forecast_text(system, prefix)
    counted = count_tokens(text, model_id, token_counting(provider, model_id))
    return counted.tokens + MESSAGE_OVERHEAD_TOKENS


def _offer(runner: RunnerConfig, model: ModelConfig, has_prefix: bool) -> tuple[str, str]:
    """The cache style a cell's requests offer their shared part to, before any token is
    counted, and why none where none (``""`` when the provider has no cache mmjudge arranges
    or ``runner.prompt_cache=off``)."""
    facts = describe(model.provider)
    style = (facts.prompt_cache if facts is not None else None) or ""
    if runner.prompt_cache == "off" or not style:
        return "", ""
    if model.prompt_cache_min_tokens is None:
        return "", f"model '{model.name}' sets no prompt_cache_min_tokens"
    if not has_prefix:
        return "", "the prompt has no part shared by every item"
    return style, ""


def cache_mark(
    runner: RunnerConfig, model: ModelConfig, prefix_chars: int, query: str
) -> PromptCacheMark | None:
    """The mark a request carries: None where its shared part is offered to no cache.

    Decided without counting tokens, so that a cell whose answers all come from the response
    cache never loads a tokenizer. A part shorter than the model's minimum is marked all the
    same: both providers then simply cache nothing, at no charge (the forecast, which counts
    the tokens, says caching is skipped)."""
    style, _ = _offer(runner, model, prefix_chars > 0)
    if not style:
        return None
    key = hashlib.sha256(query.encode("utf-8")).hexdigest()[:32]
    return PromptCacheMark(prefix_chars=prefix_chars, ttl=runner.prompt_cache_ttl, key=key)


def expected_read_tokens(plan: CachePlan, minimum: int) -> int:
    """Input tokens a call under ``plan`` is expected to read from the cache once the shared
    part is in it: all of it where the request marks it; where the provider caches on its
    own, the minimum and then whole steps of :data:`AUTOMATIC_STEP_TOKENS` (OpenAI's rule)."""
    if not plan.cached:
        return 0
    if plan.style == AUTOMATIC:
        steps = (plan.prefix_tokens - minimum) // AUTOMATIC_STEP_TOKENS
        return minimum + steps * AUTOMATIC_STEP_TOKENS
    return plan.prefix_tokens


def with_prompt_cache(
    forecast: Forecast, plan: CachePlan | None, price: ModelPrice, minimum: int | None
) -> Forecast:
    """One call's forecast with what the prompt cache is expected to save.

    The forecast is the steady state: every call reads the shared part from the cache. The
    one write that fills the cache (the first call of a cell, and again each time the cache
    lapses: five minutes, or an hour, without a call) is left out; against a cell's
    hundreds of calls it is a fraction of a call.
    """
    if plan is None or forecast.usd == 0:
        return forecast
    if not plan.cached or minimum is None:
        return dataclasses.replace(forecast, prompt_cache=plan.skipped)
    read = min(expected_read_tokens(plan, minimum), forecast.input_tokens - forecast.image_tokens)
    usage = Usage(
        input_tokens=forecast.input_tokens,
        # A mean per call, not always whole; prices are linear in it.
        output_tokens=forecast.output_tokens,  # type: ignore[arg-type]
        cached_input_tokens=read,
        image_tokens=forecast.image_tokens,
    )
    cost = cost_of(usage, price)
    return dataclasses.replace(
        forecast,
        usd=cost.total_usd,
        image_usd=cost.image_usd,
        cached_input_tokens=read,
        cache_saved_usd=forecast.usd - cost.total_usd,
    )
