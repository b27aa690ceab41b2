"""Prompts filled into a rendered shape are the same text as a full render."""

from __future__ import annotations

import itertools

import pytest
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.data.schema import Example
from mmjudge.prompts import render
from mmjudge.prompts.shapes import PromptRenderer
from tests.helpers import compose_config

EXAMPLES = [
    Example("q1", "red dress", "r1", (("name", "Wrap dress"), ("colour", "red"))),
    Example("q1", "red dress", "r2", (("name", "Shift dress"), ("colour", "crimson"))),
    Example("q2", "  navy jacket  ", "r3", (("name", "Pea coat\n\n\n\nwarm   "),)),
    Example("q3", "\nshorts {{ x }} {% if %}", "r4", (("name", "Shorts {{ grade }}"), ("c", ""))),
    Example("q4", "café crème — ü", "r5", (("name", "   "), ("colour", "cream\t"))),
    Example("q5", "boots", "r6", ()),
    Example("q6", "a\x00b", "r7", (("name", "Zero \x00 byte"),)),
    Example("q7", "tee", "r8", (("name", "Tee"), ("colour", "line one\n  \nline two"))),
    Example("q8", "tee", "r9", (("name", "Tee"), ("colour", "white"))),
    # Values that leave a filled text tidy, and values next to them that do not.
    Example("q9", "", "r10", (("name", "Tee"), ("colour", "white"))),
    Example("q10", "tee\u3000", "r11", (("name", "\u00a0Tee"), ("colour", "a\u2028b"))),
    Example("q11", "tee\r", "r12", (("name", "T\x85e"), ("colour", "w\x1ch\vi\ft"))),
    Example("q12", "tee\r\n\r\n\r\nshirt", "r13", (("name", "Tee \t x"), ("colour", "é"))),
    Example("q13", "x", "r14", (("name", "a\u2029\u2029\u2029b"), ("colour", "w"))),
]


def cell(modality: str, **prompt: object) -> SweepConfig:
    overrides = [f"modality={modality}", *(f"prompt.{k}={v}" for k, v in prompt.items())]
    cfg = OmegaConf.to_object(compose_config(overrides))
    assert isinstance(cfg, SweepConfig)
    return cfg


PROMPTS = [
    {},
    {"paraphrase": 1, "guidelines": "true", "confidence": "true"},
    {"paraphrase": 2, "aspects": "true", "raters": 3, "explanation": "false", "role": "false"},
]


@pytest.mark.parametrize(
    ("modality", "prompt"), list(itertools.product(["text", "mm", "image"], PROMPTS))
)
def test_filled_prompts_match_full_renders(modality: str, prompt: dict[str, object]) -> None:
    cfg = cell(modality, **prompt)
    renderer = PromptRenderer(cfg.modality, cfg.prompt, cfg.dataset)
    for n_images in (0, 1, 2):
        for example in EXAMPLES * 2:  # the second round fills the learnt shapes
            expected = render(example, cfg.modality, cfg.prompt, cfg.dataset, n_images=n_images)
            assert renderer.render(example, n_images) == expected, (example, n_images)
    # Every shape but the ones with placeholder bytes in their text was filled, not rendered.
    assert any(parts for parts in renderer._skeletons.values())
