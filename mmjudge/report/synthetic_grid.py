"""A synthetic sweep of the size practitioners run, for the report's tests and its benchmark:
ten judge models of five families × three modalities × three prompts × three datasets (270
cells), written with :mod:`mmjudge.report.synthetic`, plus the ensembles a real multirun
builds at its end. The judges are made to look like real ones: each family agrees with the
assessors to its own degree on each dataset, the image helps on one dataset, is needed on
another and misleads on the third, and prices run from free to thousands of dollars per
million judgments."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mmjudge.report.synthetic import FakeDataset, FakeJudge, SyntheticSweep, write_sweep


@dataclass(frozen=True)
class ModelProfile:
    """A judge model of the realistic sweep: what it costs and how well it grades."""

    name: str
    model_id: str
    provider: str
    modalities: tuple[str, ...]
    text_accuracy: Mapping[str, float]
    """Chance of giving the consensus grade from the text alone, per dataset."""
    usd_text: float = 0.0
    """Dollars per judgment for the prompt and the item's text (and the answer)."""
    usd_image: float = 0.0
    """Dollars per judgment for one image, on top of the text."""
    vision: float = 1.0
    """How much of a dataset's image effect the model gets (0: none, 1: all)."""


#: Three use cases where the image matters differently: a fashion catalogue (the photo helps),
#: captioned photos (the caption alone says little; the image is the result) and product
#: documents (the text says it all; the image alone misleads).
REALISTIC_DATASETS = (
    FakeDataset("fashion", n_queries=40, human_agreement=0.85, images=8),
    FakeDataset(
        "captions",
        n_queries=40,
        grades=(1, 2, 3, 4),
        annotators=("expert_1", "expert_2", "expert_3"),
        human_agreement=0.8,
        images=8,
        description="{colour} {garment} in a photo.",
    ),
    FakeDataset("docs", n_queries=40, grades=(0, 1, 2, 3), human_agreement=0.9, images=4),
)
#: Change in the chance of the consensus grade when the model also sees the image (``mm``)
#: or sees only the image (``image``), per dataset.
IMAGE_EFFECT = {
    "fashion": {"mm": 0.06, "image": -0.08},
    "captions": {"mm": 0.22, "image": 0.18},
    "docs": {"mm": -0.01, "image": -0.25},
}
PROMPT_EFFECT = {"default": 0.0, "aspects": 0.02, "terse": -0.03}
VISION = ("text", "mm", "image")


def _acc(fashion: float, captions: float, docs: float) -> dict[str, float]:
    return {"fashion": fashion, "captions": captions, "docs": docs}


#: Ten judges over four orders of magnitude of price: two free local baselines, an open model
#: on rented GPUs, and seven API models of three families (prices per judgment from token
#: counts typical of a short relevance prompt at the providers' list prices).
REALISTIC_MODELS = (
    ModelProfile("lexical", "lexical-bm25", "lexical", ("text",), _acc(0.5, 0.45, 0.55)),
    ModelProfile(
        "clip", "clip-ViT-B-32", "embedding", ("mm", "image"), _acc(0.55, 0.5, 0.45), vision=0.7
    ),
    ModelProfile(
        "llama3_70b",
        "meta-llama/Meta-Llama-3-70B-Instruct",
        "openai_compatible",
        ("text",),
        _acc(0.68, 0.52, 0.74),
        usd_text=0.00009,
    ),
    ModelProfile(
        "gpt4o_mini",
        "gpt-4o-mini-2024-07-18",
        "openai",
        VISION,
        _acc(0.7, 0.5, 0.72),
        usd_text=0.000105,
        usd_image=0.000425,
        vision=0.8,
    ),
    ModelProfile(
        "gpt4o", "gpt-4o-2024-05-13", "openai", VISION, _acc(0.78, 0.55, 0.8), 0.00175, 0.000212
    ),
    ModelProfile(
        "gpt41", "gpt-4.1-2025-04-14", "openai", VISION, _acc(0.8, 0.56, 0.82), 0.0014, 0.00017
    ),
    ModelProfile(
        "gpt5_mini",
        "gpt-5-mini-2025-08-07",
        "openai",
        VISION,
        _acc(0.76, 0.54, 0.79),
        0.000225,
        0.000021,
        vision=0.9,
    ),
    ModelProfile(
        "claude_sonnet45",
        "claude-sonnet-4-5-20250929",
        "anthropic",
        VISION,
        _acc(0.81, 0.57, 0.83),
        0.00225,
        0.00105,
    ),
    ModelProfile(
        "claude_haiku45",
        "claude-haiku-4-5-20251001",
        "anthropic",
        VISION,
        _acc(0.72, 0.52, 0.76),
        0.00075,
        0.00035,
        vision=0.85,
    ),
    ModelProfile(
        "gemini25_flash",
        "gemini-2.5-flash",
        "openai_compatible",
        VISION,
        _acc(0.74, 0.54, 0.77),
        0.000275,
        0.000077,
        vision=0.95,
    ),
)


def realistic_judge(profile: ModelProfile, modality: str, prompt: str) -> FakeJudge:
    """One cell's judge: the model's text accuracy moved by the image and the prompt."""
    accuracy = {
        name: min(
            0.97,
            max(
                0.3,
                base
                + profile.vision * IMAGE_EFFECT[name].get(modality, 0.0)
                + PROMPT_EFFECT.get(prompt, 0.0),
            ),
        )
        for name, base in profile.text_accuracy.items()
    }
    text = profile.usd_text * (0.6 if modality == "image" else 1.0)
    image = profile.usd_image if modality != "text" else 0.0
    total = text + image
    return FakeJudge(
        profile.name,
        modality=modality,
        accuracy=accuracy,
        usd_per_judgment=total,
        image_share=image / total if total else 0.0,
        prompt_id=prompt,
        unparseable=0.0 if total == 0 else 0.01,
        image_tokens=85 if modality != "text" else 0,
        model_id=profile.model_id,
        provider=profile.provider,
    )


def write_realistic_sweep(
    root: Path,
    *,
    n_queries: int | None = None,
    models: Sequence[ModelProfile] = REALISTIC_MODELS,
    prompts: Sequence[str] = tuple(PROMPT_EFFECT),
    ensembles: bool = True,
    dataset_root: Path | None = None,
) -> SyntheticSweep:
    """The sweep of ``models × {text, mm, image} × prompts × REALISTIC_DATASETS`` (270 cells
    with the defaults; cells a model cannot serve are written as skipped, as a real sweep
    writes them), plus the ensembles a real multirun builds at its end
    (:func:`~mmjudge.ensembles.defaults.build_default_ensembles`) when
    ``ensembles`` is true."""
    datasets = [
        d if n_queries is None else dataclasses.replace(d, n_queries=n_queries)
        for d in REALISTIC_DATASETS
    ]
    judges, skipped = [], []
    for profile in models:
        for modality in VISION:
            for prompt in prompts:
                judge = realistic_judge(profile, modality, prompt)
                if modality in profile.modalities:
                    judges.append(judge)
                    continue
                accepts = ", ".join(profile.modalities)
                reason = (
                    f"judge '{profile.name}' ({profile.provider}) does not accept modality "
                    f"'{modality}' (accepts: {accepts})"
                )
                skipped += [(d.name, judge, reason) for d in datasets]
    sweep = write_sweep(root, datasets, judges, skipped=skipped, dataset_root=dataset_root)
    if ensembles:
        from mmjudge.ensembles.defaults import build_default_ensembles

        sweep.runs += build_default_ensembles(root)
    return sweep
