"""Calls to the real provider APIs. Opt-in only: ``pytest -m live`` with the keys set.

They are left out of every other selection (see ``tests/conftest.py``) and skip without a key.
"""

from __future__ import annotations

import asyncio
import os

import pytest
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.judges.registry import create_judge
from mmjudge.prompts.parsing import parse_grade
from mmjudge.records import JudgeRequest
from tests.helpers import compose_config

pytestmark = pytest.mark.live

PROMPT = (
    "Grade how well the result matches the query on 0 (not relevant), 1 (partly), "
    "2 (relevant). Reply with the grade alone on the first line.\n\n"
    "Query: red t-shirt\nResult:\nname: Cotton T-shirt\ncolour: red"
)


@pytest.mark.parametrize(
    ("model", "key"), [("gpt4o_mini", "OPENAI_API_KEY"), ("claude3_haiku", "ANTHROPIC_API_KEY")]
)
def test_one_real_judgment(model: str, key: str) -> None:
    if not os.environ.get(key):
        pytest.skip(f"set {key} to run this live test")
    typed = OmegaConf.to_object(compose_config([f"model={model}"]))
    assert isinstance(typed, SweepConfig)
    judge = create_judge(typed.model)

    async def call() -> str:
        try:
            response = await judge.generate(JudgeRequest(item_key="live", prompt=PROMPT))
        finally:
            await judge.aclose()
        assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
        return response.text

    text = asyncio.run(call())
    assert parse_grade(text, [0, 1, 2]).label in (1, 2)
