"""Synthetic sweeps with known properties, for trying the report without calling any model,
for its tests and for its scale benchmark.

A synthetic dataset is written in mmjudge's canonical JSONL layout (with small generated
images), so the report can read its texts back like any other dataset. Each fake judge
gives the human consensus grade with a chosen probability (per dataset if wanted) and a
random other grade otherwise; its cost per judgment is fixed. Run directories hold
``judgments.jsonl`` rows with the fields of :class:`mmjudge.records.JudgmentRecord` and a
``summary.json`` written by the real :func:`mmjudge.summary.write_summary`.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.records import SCHEMA_VERSION

COLOURS = ("red", "blue", "green", "black", "white", "yellow")
GARMENTS = ("t-shirt", "dress", "skirt", "trousers", "jacket", "shorts")


@dataclass(frozen=True)
class FakeDataset:
    """A dataset of ``n_queries × results_per_query`` items graded by a few annotators."""

    name: str
    n_queries: int = 30
    results_per_query: int = 10
    annotators: tuple[str, ...] = ("annotator_a", "annotator_b")
    human_agreement: float = 0.85
    """Chance an annotator gives the true grade (else a neighbouring one)."""
    grades: tuple[int, ...] = (0, 1, 2)
    images: int = 6
    """Distinct small images to generate and share among the items (0 for none)."""
    description: str = "A {colour} {garment} made from soft cotton."
    """Result description; ``{colour}`` and ``{garment}`` are filled in per item."""
    seed: int = 0


@dataclass(frozen=True)
class FakeJudge:
    """A judge that agrees with the human consensus with probability ``accuracy``."""

    model: str
    modality: str = "text"
    accuracy: float | Mapping[str, float] = 0.8
    """One probability, or one per dataset name."""
    usd_per_judgment: float = 0.0
    image_share: float = 0.0
    """Part of the cost due to images."""
    unparseable: float = 0.0
    """Share of answers with no grade."""
    prompt_id: str = "default"
    explanation: str = "The result {verdict} what the query asks for."
    input_tokens: int = 300
    output_tokens: int = 30
    image_tokens: int = 0
    model_id: str | None = None
    """The provider's model name (default: ``<model>-synthetic``)."""
    provider: str = "synthetic"

    def accuracy_on(self, dataset: str) -> float:
        if isinstance(self.accuracy, Mapping):
            return float(self.accuracy.get(dataset, 0.0))
        return float(self.accuracy)


@dataclass
class SyntheticSweep:
    root: Path
    datasets: dict[str, Path] = field(default_factory=dict)
    runs: list[Path] = field(default_factory=list)


def _seed(*parts: object) -> int:
    return zlib.crc32("\x1f".join(str(p) for p in parts).encode("utf-8"))


def true_grades(dataset: FakeDataset) -> np.ndarray:
    rng = np.random.default_rng(_seed("truth", dataset.name, dataset.seed))
    n = dataset.n_queries * dataset.results_per_query
    return rng.choice(np.asarray(dataset.grades), size=n, p=_grade_weights(len(dataset.grades)))


def _grade_weights(k: int) -> np.ndarray:
    weights = np.linspace(1.4, 0.7, k)
    return np.asarray(weights / weights.sum())


def human_grades(dataset: FakeDataset) -> dict[str, np.ndarray]:
    truth = true_grades(dataset)
    grades = np.asarray(dataset.grades)
    out = {}
    for name in dataset.annotators:
        rng = np.random.default_rng(_seed("human", dataset.name, name, dataset.seed))
        position = np.searchsorted(grades, truth)
        step = rng.choice([-1, 1], size=truth.size)
        moved = np.clip(position + step, 0, grades.size - 1)
        keep = rng.random(truth.size) < dataset.human_agreement
        out[name] = np.where(keep, truth, grades[moved])
    return out


def write_dataset(directory: Path, dataset: FakeDataset) -> Path:
    """Write ``items.jsonl`` (and images) under ``directory``; returns it."""
    directory.mkdir(parents=True, exist_ok=True)
    images = []
    if dataset.images:
        from PIL import Image

        (directory / "images").mkdir(exist_ok=True)
        for i in range(dataset.images):
            name = f"images/img{i:02d}.png"
            rgb = ((i * 70) % 256, (i * 130 + 60) % 256, (i * 200 + 120) % 256)
            img = Image.new("RGB", (64, 80), rgb)
            for x in range(8, 56):
                img.putpixel((x, 40), (255, 255, 255))
            img.save(directory / name)
            images.append(name)
    humans = human_grades(dataset)
    k = dataset.results_per_query
    with (directory / "items.jsonl").open("w", encoding="utf-8") as handle:
        for q in range(dataset.n_queries):
            query = f"{COLOURS[q % len(COLOURS)]} {GARMENTS[q % len(GARMENTS)]}"
            for r in range(k):
                i = q * k + r
                colour, garment = COLOURS[(q + r) % len(COLOURS)], GARMENTS[(q * r) % 6]
                row: dict[str, Any] = {
                    "query_id": f"q{q:05d}",
                    "query": query,
                    "result_id": f"r{i:07d}",
                    "fields": {
                        "name": f"{colour.title()} {garment}",
                        "description": dataset.description.format(colour=colour, garment=garment),
                    },
                    "labels": {name: int(humans[name][i]) for name in dataset.annotators},
                }
                if images:
                    row["images"] = [images[i % len(images)]]
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return directory


def judge_labels(dataset: FakeDataset, judge: FakeJudge) -> np.ndarray:
    """The fake judge's grades (``nan`` where it gave none)."""
    from mmjudge.metrics import consensus

    reference = consensus(human_grades(dataset))
    grades = np.asarray(dataset.grades, dtype=float)
    parts: tuple[str, ...] = ("judge", dataset.name, judge.model, judge.modality)
    if judge.prompt_id != "default":  # another prompt is another draw of the same judge
        parts += (judge.prompt_id,)
    rng = np.random.default_rng(_seed(*parts))
    right = rng.random(reference.size) < judge.accuracy_on(dataset.name)
    shift = rng.integers(1, grades.size, size=reference.size)
    position = np.searchsorted(grades, reference)
    wrong = grades[(position + shift) % grades.size]
    labels = np.where(right, reference, wrong)
    labels[rng.random(reference.size) < judge.unparseable] = np.nan
    return labels


def write_judgments(path: Path, dataset: FakeDataset, judge: FakeJudge, run_id: str) -> int:
    """Write the cell's rows; returns how many."""
    labels = judge_labels(dataset, judge)
    humans = human_grades(dataset)
    names = list(dataset.annotators)
    rng = np.random.default_rng(_seed("latency", dataset.name, judge.model, judge.modality))
    latency = rng.gamma(2.0, 0.4, size=labels.size)
    image_cost = judge.usd_per_judgment * judge.image_share
    k = dataset.results_per_query
    with_image = judge.modality != "text"
    with path.open("w", encoding="utf-8") as handle:
        for i, label in enumerate(labels.tolist()):
            grade = None if label != label else int(label)
            agree = grade is not None and grade == int(humans[names[0]][i])
            explanation = judge.explanation.format(verdict="matches" if agree else "misses")
            image_tokens = judge.image_tokens if with_image else 0
            row = {
                "run_id": run_id,
                "dataset": dataset.name,
                "query_id": f"q{i // k:05d}",
                "result_id": f"r{i:07d}",
                "modality": judge.modality,
                "provider": judge.provider,
                "model": judge.model,
                "prompt_id": judge.prompt_id,
                "prompt_hash": None,
                "image_sha256s": ["0" * 64] if with_image else [],
                "raw_output": f"{grade}\n{explanation}" if grade is not None else "no grade",
                "label": grade,
                "explanation": explanation if grade is not None else None,
                "parse_error": None if grade is not None else "no grade in the answer",
                "human_labels": {n: int(humans[n][i]) for n in names},
                "input_tokens": judge.input_tokens + image_tokens,
                "output_tokens": judge.output_tokens,
                "cost_usd": judge.usd_per_judgment,
                "latency_s": round(float(latency[i]), 4),
                "cached": False,
                "error": None,
                "timestamp": "2026-01-01T00:00:00+00:00",
                "usage": {
                    "input_tokens": judge.input_tokens + image_tokens,
                    "output_tokens": judge.output_tokens,
                    "cached_input_tokens": 0,
                    "cache_write_tokens": 0,
                    "reasoning_tokens": 0,
                    "image_tokens": image_tokens,
                },
                "image_cost_usd": image_cost if with_image else 0.0,
                "truncated": False,
                "schema_version": SCHEMA_VERSION,
            }
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return int(labels.size)


def sweep_config(dataset: FakeDataset, dataset_dir: Path, judge: FakeJudge) -> Any:
    """A :class:`mmjudge.config.SweepConfig` for one synthetic cell."""
    from mmjudge.config import (
        DatasetConfig,
        ModalityConfig,
        ModelConfig,
        PricingConfig,
        PromptConfig,
        RunnerConfig,
        ScaleConfig,
        SweepConfig,
    )

    model_id = judge.model_id or f"{judge.model}-synthetic"
    return SweepConfig(
        model=ModelConfig(
            name=judge.model,
            provider=judge.provider,
            model_id=model_id,
            supports_images=True,
        ),
        modality=ModalityConfig(
            name=judge.modality,
            include_text=judge.modality != "image",
            include_image=judge.modality != "text",
        ),
        dataset=DatasetConfig(
            name=dataset.name,
            loader="jsonl",
            path=str(dataset_dir),
            description="Synthetic clothing results.",
            scale=ScaleConfig(
                grades=list(dataset.grades),
                meanings={g: f"grade {g}" for g in dataset.grades},
                relevant_from=dataset.grades[len(dataset.grades) // 2],
            ),
            annotators=list(dataset.annotators),
        ),
        prompt=PromptConfig(id=judge.prompt_id),
        pricing=PricingConfig(
            date="2026-10-31",
            sources=["synthetic prices"],
            models={model_id: {"input": 1.0, "output": 4.0}},
        ),
        runner=RunnerConfig(progress=False, report=False),
    )


def write_sweep(
    root: Path,
    datasets: Sequence[FakeDataset],
    judges: Sequence[FakeJudge],
    *,
    skipped: Sequence[tuple[str, FakeJudge, str]] = (),
    dataset_root: Path | None = None,
) -> SyntheticSweep:
    """A sweep directory with one run per dataset × judge, plus skipped cells given as
    (dataset name, judge, reason). Datasets are written under ``dataset_root`` (default:
    ``root/../datasets``)."""
    from mmjudge.summary import write_summary

    root.mkdir(parents=True, exist_ok=True)
    data_root = dataset_root or root.parent / "datasets"
    out = SyntheticSweep(root)
    by_name = {d.name: d for d in datasets}
    for dataset in datasets:
        out.datasets[dataset.name] = write_dataset(data_root / dataset.name, dataset)
    cells: list[tuple[FakeDataset, FakeJudge, str | None]] = [
        (d, j, None) for d in datasets for j in judges
    ]
    cells += [(by_name[name], j, reason) for name, j, reason in skipped]
    for dataset, judge, reason in cells:
        run_id = f"{dataset.name}.{judge.model}.{judge.modality}.{judge.prompt_id}"
        run_dir = root / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg = sweep_config(dataset, out.datasets[dataset.name], judge)
        if reason is None:
            write_judgments(run_dir / "judgments.jsonl", dataset, judge, run_id)
        else:
            (run_dir / "judgments.jsonl").write_text("", encoding="utf-8")
        write_summary(run_dir, cfg, cfg, skipped=reason)
        out.runs.append(run_dir)
    return out


# --------------------------------------------------------------------------- a realistic sweep


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
    (:func:`mmjudge.panels.build_default_ensembles`) when ``ensembles`` is true."""
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
        from mmjudge.panels import build_default_ensembles

        sweep.runs += build_default_ensembles(root)
    return sweep
