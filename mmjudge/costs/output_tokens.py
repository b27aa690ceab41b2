"""Output tokens per call for forecasts: learnt from answers already paid for, or from the
answer the prompt asks for.

In order of preference:

1. ``runner.forecast_output_tokens`` when the user sets it;
2. the mean output tokens of this cell's answers already in the response cache (the same
   model, prompt and items: a sample of the cell's first requests is looked up);
3. an estimate from the prompt's answer format: a grade alone is a couple of tokens, an
   explanation, aspect grades, several simulated raters and a confidence each add theirs;
   with several results per call, each result's grade under its marker (and its reason where
   ``prompt.passage_reasons`` asks for one), the call's answer being that times its results.

The forecast names the basis it used (``output_basis``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from mmjudge.config import PromptConfig, SweepConfig

#: Requests of a cell looked up in the response cache to learn from (images cost more to
#: prepare, so fewer of them).
SAMPLE_TEXT = 200
SAMPLE_IMAGES = 32

#: Tokens of each part of an answer, for the format-based estimate: a grade with its line
#: break, a one-sentence explanation, the aspect lines, each extra rater's line, a confidence.
GRADE_TOKENS = 2
EXPLANATION_TOKENS = 25
ASPECT_TOKENS = 10
RATER_TOKENS = 6
CONFIDENCE_TOKENS = 5
#: Tokens of one result's grade in an answer about several results: its marker, the
#: separator and the grade, as a line (``R3: 2``) or a JSON member (``"R3": 2,``).
PASSAGE_GRADE_TOKENS = 5


ANSWER_FORMAT = "the prompt's answer format"
"""The basis named when no figure was set and no answer is in the cache."""


class OutputTokens(NamedTuple):
    """Output tokens per call and where the figure comes from."""

    tokens: float
    basis: str


def from_answer_format(prompt: PromptConfig) -> OutputTokens:
    """The estimate from what the prompt asks the judge to write: for a prompt about several
    results (``prompt.passages_per_call``), one result's part of the answer."""
    if prompt.passages_per_call > 1:
        reason = EXPLANATION_TOKENS if prompt.passage_reasons else 0
        return OutputTokens(float(PASSAGE_GRADE_TOKENS + reason), ANSWER_FORMAT)
    tokens = GRADE_TOKENS
    if prompt.explanation:
        tokens += EXPLANATION_TOKENS
    if prompt.aspects:
        tokens += ASPECT_TOKENS
    if prompt.raters > 1:
        tokens += RATER_TOKENS * prompt.raters
    if prompt.confidence:
        tokens += CONFIDENCE_TOKENS
    return OutputTokens(float(tokens), ANSWER_FORMAT)


def from_cached_answers(counts: Iterable[int]) -> OutputTokens | None:
    """The mean of the output tokens of cached answers; None without any."""
    seen = list(counts)
    if not seen:
        return None
    mean = sum(seen) / len(seen)
    return OutputTokens(mean, f"cached answers to this cell ({len(seen)} looked at)")


def output_tokens(cfg: SweepConfig, cached: Iterable[int]) -> OutputTokens:
    """Output tokens per call for ``cfg``'s cell; ``cached``: the output tokens of its
    answers found in the response cache (consumed only when the user set no figure)."""
    if cfg.runner.forecast_output_tokens is not None:
        return OutputTokens(
            float(cfg.runner.forecast_output_tokens),
            f"runner.forecast_output_tokens={cfg.runner.forecast_output_tokens}",
        )
    return from_cached_answers(cached) or from_answer_format(cfg.prompt)
