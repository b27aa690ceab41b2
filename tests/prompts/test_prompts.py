"""Prompt variants: every shipped prompt config renders for every modality, deterministically,
asks for the answer format its parser reads, and the wordings differ only in wording."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from mmjudge.config import N_WORDINGS, DatasetConfig, ModalityConfig, PromptConfig
from mmjudge.data.loading import load_dataset
from mmjudge.data.schema import Example
from mmjudge.engine.cell import typed_config
from mmjudge.errors import ConfigError
from mmjudge.locations import CONFIG_DIR
from mmjudge.prompts import render
from mmjudge.prompts.parsing import parse_confidence, parse_grade
from tests.helpers import compose_config, compose_option

PROMPTS = sorted(p.stem for p in (CONFIG_DIR / "prompt").glob("*.yaml"))
MODALITIES = ("text", "mm", "image")
SHIPPED = {
    "default",
    "no_role",
    "guidelines",
    "aspects",
    "terse",
    "raters3",
    "paraphrase1",
    "paraphrase2",
    "confidence",
}

DEFAULT_TEXT = """\
You are checking results from a search engine. For each one, decide how well it satisfies \
the person who typed the query, as a careful human assessor would.

About the collection: Clothing products from an online fashion shop; each result is one product.

Use this relevance scale:
0 = not relevant: wrong kind of garment, or it misses what the query asks for
1 = partly relevant: the right or a close kind of garment, but a colour or pattern the query \
names is off
2 = relevant: the right kind of garment with every colour and pattern the query names

Grade 1 is only for a partial match, where some of what the query asks for is there and some \
is not. Use it sparingly: if the result plainly fits or plainly misses, give 2 or 0.

Query: red striped t-shirt

The result, described by its catalogue fields:
name: Soft-touch Flared Skirt
colour: Red
pattern: Checked
description: A soft-touch A-line skirt in red with a small woven check. Made from a \
breathable linen blend.

Reply with the grade alone on the first line, as a single number from 0 to 2. On the next \
line, explain your grade in one or two sentences."""


@dataclass
class Setup:
    """Every prompt and modality config composed once (composing is the slow part)."""

    example: Example
    dataset: DatasetConfig
    prompts: dict[str, PromptConfig]
    modalities: dict[str, ModalityConfig]


@pytest.fixture(scope="module")
def configs() -> Setup:
    cfg = typed_config(compose_config())
    return Setup(
        example=next(iter(load_dataset(cfg.dataset))),
        dataset=cfg.dataset,
        prompts={n: typed_config(compose_option("prompt", n)).prompt for n in PROMPTS},
        modalities={m: typed_config(compose_option("modality", m)).modality for m in MODALITIES},
    )


def rendered(setup: Setup, prompt: str, modality: str, **changes: Any) -> str:
    """The prompt ``prompt`` (with ``changes`` to its config) for the first demo item."""
    config = dataclasses.replace(setup.prompts[prompt], **changes)
    n_images = 0 if modality == "text" else 1
    return render(
        setup.example, setup.modalities[modality], config, setup.dataset, n_images=n_images
    ).text


def test_every_variant_is_shipped_with_its_file_name_as_id(configs) -> None:
    assert set(PROMPTS) >= SHIPPED
    for name, config in configs.prompts.items():
        assert config.id == name


@pytest.mark.parametrize("modality", MODALITIES)
@pytest.mark.parametrize("prompt", PROMPTS)
def test_every_variant_renders_deterministically(configs, prompt: str, modality: str) -> None:
    text = rendered(configs, prompt, modality)
    assert text == rendered(configs, prompt, modality)
    assert "red striped t-shirt" in text
    assert "2 = relevant: the right kind of garment" in text
    assert "\n\n\n" not in text and text == text.strip()
    has_fields = "Soft-touch Flared Skirt" in text
    assert has_fields == (modality != "image")


def test_the_default_prompt_is_unchanged(configs) -> None:
    assert rendered(configs, "default", "text") == DEFAULT_TEXT


@pytest.mark.parametrize("modality", MODALITIES)
def test_switches_change_only_their_part(configs, modality: str) -> None:
    default = rendered(configs, "default", modality)
    no_role = rendered(configs, "no_role", modality)
    assert "careful human assessor" in default and "careful human assessor" not in no_role
    assert "About the collection" not in no_role
    guided = rendered(configs, "guidelines", modality)
    assert "Guidelines for this collection:\nJudge the garment type first" in guided
    terse = rendered(configs, "terse", modality)
    assert "explain" in default and "explain" not in terse
    assert terse.endswith("as a single number from 0 to 2.")
    assert "sparingly" not in rendered(configs, "default", modality, strictness_note=False)


@pytest.mark.parametrize("modality", MODALITIES)
def test_aspect_variant_asks_for_aspects_then_overall(configs, modality: str) -> None:
    text = rendered(configs, "aspects", modality)
    intent, trust, overall = (text.index(s) for s in ("intent: N", "trust: N", '"overall: N"'))
    assert intent < trust < overall
    assert "Reply with the grade alone" not in text
    assert ("with the image" in text) == (modality == "mm")
    if modality == "image":
        assert "how clearly and faithfully the image shows the item" in text
    answer = "intent: 2\ntrust: 0\noverall: 1\nRight garment, wrong colour."
    assert parse_grade(answer, [0, 1, 2]).label == 1


@pytest.mark.parametrize("modality", MODALITIES)
def test_raters_variant_asks_for_each_rater_then_final(configs, modality: str) -> None:
    text = rendered(configs, "raters3", modality)
    assert "Imagine 3 assessors" in text and '"rater 1: N", "rater 2: N"' in text
    assert '"final: N"' in text and text.index("rater 1") < text.index('"final: N"')
    five = rendered(configs, "raters3", modality, raters=5)
    assert "Imagine 5 assessors" in five
    answer = "rater 1: 2\nrater 2: 2\nrater 3: 1\nfinal: 1\nTwo were generous."
    parsed = parse_grade(answer, [0, 1, 2])
    assert parsed.label == 1 and parsed.explanation == "Two were generous."


def test_confidence_variant_asks_for_a_confidence_line(configs) -> None:
    text = rendered(configs, "confidence", "mm")
    assert '"confidence: C"' in text and "1 (a guess) to 5 (certain)" in text
    assert parse_confidence("2\nBecause.\nconfidence: 4") == 4


@pytest.mark.parametrize("modality", MODALITIES)
def test_paraphrases_reword_the_same_design(configs, modality: str) -> None:
    texts = [rendered(configs, p, modality) for p in ("default", "paraphrase1", "paraphrase2")]
    assert len(set(texts)) == 3
    for text in texts:
        for line in ("0 = not relevant", "1 = partly relevant", "2 = relevant"):
            assert line in text
        assert ("colour: Red" in text) == (modality != "image")
        assert "Clothing products from an online fashion shop" in text
    # the sentences themselves are new: no sentence of the standard wording survives,
    # apart from the dataset's own text, the query and the result's fields
    own = {line for line in texts[0].splitlines() if line and " = " not in line}
    own -= {line for line in texts[0].splitlines() if ": " in line and line[0].islower()}
    for other in texts[1:]:
        assert not own & set(other.splitlines())
    # every wording renders every variant
    variants: list[dict[str, Any]] = [
        {"aspects": True},
        {"raters": 4},
        {"confidence": True},
        {"explanation": False},
    ]
    for p in range(N_WORDINGS):
        for variant in variants:
            text = rendered(configs, "default", modality, paraphrase=p, **variant)
            assert text.strip()


def test_unknown_paraphrase_or_rater_count_is_a_config_error(configs) -> None:
    with pytest.raises(ConfigError, match=r"prompt\.paraphrase=3 is not a shipped wording"):
        rendered(configs, "default", "text", paraphrase=N_WORDINGS)
    with pytest.raises(ConfigError, match=r"prompt\.raters=0"):
        rendered(configs, "default", "text", raters=0)
