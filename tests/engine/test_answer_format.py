"""Which calls about several results ask for a structured answer (``prompt.answer_format``):
``auto`` where the judge's provider has a structured output, never with ``lines`` or one
result per call, and ``structured`` refused in one line for a provider without one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.engine.passage_calls import structured_answer
from mmjudge.engine.passages import passages_refusal
from mmjudge.judges import registry
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.records import JudgeRequest, JudgeResponse
from tests.helpers import compose_config


class PlainJudge(JudgeAPI):
    """A paid judge whose provider takes no JSON schema."""

    descriptors = (JudgeDescriptor("plain_paid"),)

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        raise NotImplementedError


@pytest.fixture
def plain() -> Iterator[None]:
    registry.register(PlainJudge)
    try:
        yield
    finally:
        registry.unregister(PlainJudge)


def cell(*overrides: str) -> SweepConfig:
    cfg = OmegaConf.to_object(compose_config(["modality=text", *overrides]))
    assert isinstance(cfg, SweepConfig)
    return cfg


@pytest.mark.parametrize(
    ("overrides", "structured"),
    [
        (["model=gpt4o_mini", "prompt.passages_per_call=5"], True),
        (["model=claude_haiku45", "prompt.passages_per_call=5"], True),
        (["model=vllm_local", "prompt.passages_per_call=5"], True),
        (["model=gpt4o_mini", "prompt.passages_per_call=5", "prompt.answer_format=lines"], False),
        (["model=gpt4o_mini"], False),  # one result per call: the single answer, as ever
    ],
)
def test_auto_asks_for_the_structured_answer_where_the_provider_has_one(
    overrides: list[str], structured: bool
) -> None:
    cfg = cell(*overrides)
    assert structured_answer(cfg) is structured
    assert passages_refusal(cfg) is None


def test_structured_is_refused_in_one_line_for_a_provider_without_it(plain: None) -> None:
    cfg = cell("model=gpt4o_mini", "prompt.passages_per_call=5", "model.provider=plain_paid")
    assert structured_answer(cfg) is False and passages_refusal(cfg) is None
    cfg.prompt.answer_format = "structured"
    assert passages_refusal(cfg) == (
        "prompt.answer_format=structured: provider 'plain_paid' has no structured output "
        "mmjudge sends; use prompt.answer_format=lines (or auto)"
    )


def test_a_judge_priced_per_judgment_is_refused_several_results_per_call() -> None:
    """The ledger charges a price per judgment once per call, so a call about five results
    would pay for one: refused in one line until it is priced per result."""
    cfg = cell(
        "model=vllm_local",
        "prompt.passages_per_call=5",
        "model.price_key=gpu-box",
        "+pricing.models.gpu-box={gpu_hour: 0.9, judgments_per_s: 250}",
    )
    reason = passages_refusal(cfg)
    assert reason is not None and "judgments_per_s" in reason and "\n" not in reason
    cfg.prompt.passages_per_call = 1
    assert passages_refusal(cfg) is None
