"""Typed ``model.options``: every judge declares what it reads; anything else fails early."""

from __future__ import annotations

import pytest

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.http import HTTPOptions
from mmjudge.judges.lexical import LexicalOptions
from mmjudge.judges.openai import OpenAIOptions
from mmjudge.judges.options import JudgeOptions


def model(**options: object) -> ModelConfig:
    return ModelConfig(name="m", provider="openai", model_id="gpt-4o", options=dict(options))


def test_declared_options_are_read_with_their_types() -> None:
    parsed = OpenAIOptions.parse(model(reasoning_effort="minimal", http_client="httpx"))
    assert parsed == OpenAIOptions(reasoning_effort="minimal", http_client="httpx")
    assert LexicalOptions.parse(model(k1="1.5")).k1 == 1.5


@pytest.mark.parametrize(
    ("options_class", "given", "message"),
    [
        (OpenAIOptions, {"reasoning_efort": "low"}, r"\['reasoning_efort'\] .* not openai options"),
        (HTTPOptions, {"max_tokens_param": "x"}, r"not judge options; use: http_client"),
        (JudgeOptions, {"anything": 1}, r"not judge options; it takes none"),
        (LexicalOptions, {"k1": "high"}, r"model\.options\.k1='high' for 'm' must be a number"),
        (LexicalOptions, {"b": [1]}, r"model\.options\.b=\[1\] for 'm' must be a number"),
    ],
)
def test_unknown_names_and_bad_values_fail_in_one_line(
    options_class: type[JudgeOptions], given: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        options_class.parse(model(**given))
    assert "\n" not in str(caught.value)
