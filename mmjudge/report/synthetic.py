"""Synthetic run folders with known properties, for trying the report without calling any
model, for the tests and for the benchmarks: whole sweeps of judges that agree with the
assessors with a chosen probability (:func:`write_sweep`), or one run with exactly the labels
a test gives (:func:`write_run`). Both write rows of :class:`mmjudge.records.JudgmentRecord`
and the summary of the real :func:`mmjudge.running.cell.write_cell_summary`.

A synthetic dataset is written in mmjudge's canonical JSONL layout (with small generated
images), so the report can read its texts back like any other dataset. Each fake judge
gives the human consensus grade with a chosen probability (per dataset if wanted) and a
random other grade otherwise; its cost per judgment is fixed. Run directories hold
``judgments.jsonl`` rows with the fields of :class:`mmjudge.records.JudgmentRecord` and a
``summary.json`` written by the real :func:`mmjudge.running.cell.write_cell_summary`.
"""

from __future__ import annotations

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
    from mmjudge.agreement.metrics import consensus

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


def sweep_config(
    dataset: FakeDataset,
    dataset_dir: Path,
    judge: FakeJudge,
    relevant_from: int | None = None,
) -> Any:
    """A :class:`mmjudge.config.SweepConfig` for one synthetic cell (``relevant_from``:
    default, the middle grade of the scale)."""
    from mmjudge.config import (
        DatasetConfig,
        ModalityConfig,
        ModelConfig,
        PathsConfig,
        PricingConfig,
        PromptConfig,
        ReportConfig,
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
                relevant_from=dataset.grades[len(dataset.grades) // 2]
                if relevant_from is None
                else relevant_from,
            ),
            annotators=list(dataset.annotators),
        ),
        prompt=PromptConfig(id=judge.prompt_id),
        pricing=PricingConfig(
            date="2026-10-31",
            sources=["synthetic prices"],
            models={model_id: {"input": 1.0, "output": 4.0}},
        ),
        runner=RunnerConfig(progress=False),
        paths=PathsConfig(),
        report=ReportConfig(build=False),
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
    from mmjudge.running.cell import write_cell_summary

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
        write_cell_summary(cfg, cfg, run_dir, skipped=reason)
        out.runs.append(run_dir)
    return out


Key = tuple[str, str]


def write_run(
    root: Path,
    name: str,
    labels: Mapping[Key, int | None],
    human: Mapping[Key, Mapping[str, int]],
    *,
    dataset: str = "toy",
    model: str = "m",
    prompt_id: str = "default",
    modality: str = "text",
    cost: float | Mapping[Key, float] = 0.0,
    image_cost: float | Mapping[Key, float] = 0.0,
    latency: float = 0.5,
    grades: tuple[int, ...] = (0, 1, 2),
    relevant_from: int = 1,
    raw_output: Mapping[Key, str] | None = None,
    errors: Mapping[Key, str] | None = None,
    image_hashes: Mapping[Key, list[str]] | None = None,
    max_unparseable_rate: float | None = None,
) -> Path:
    """A finished run ``root/name`` judging exactly ``labels`` (None: unparseable) of the
    (query id, result id) items whose assessors' grades ``human`` gives; per-item cost, image
    cost, raw output, error and image hashes where given. Its status follows from its rows
    as a real run's does (``max_unparseable_rate``: the runner's setting, default as
    shipped)."""
    from mmjudge.running.cell import write_cell_summary

    given = {
        "cost": cost,
        "image_cost": image_cost,
        "latency": latency,
        "raw_output": raw_output or {},
        "errors": errors or {},
        "image_hashes": image_hashes or {},
    }
    run_dir = root / name
    run_dir.mkdir(parents=True)
    lines = [
        _record(name, dataset, model, prompt_id, modality, key, label, human[key], given).to_json()
        for key, label in labels.items()
    ]
    (run_dir / "judgments.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assessors = tuple(sorted({a for grades_of in human.values() for a in grades_of}))
    cfg = sweep_config(
        FakeDataset(dataset, grades=grades, annotators=assessors, images=0),
        root / "datasets" / dataset,
        FakeJudge(model, modality=modality, prompt_id=prompt_id, model_id=model, provider="fake"),
        relevant_from=relevant_from,
    )
    if max_unparseable_rate is not None:
        cfg.runner.max_unparseable_rate = max_unparseable_rate
    write_cell_summary(cfg, cfg, run_dir)
    return run_dir


def _record(
    run_id: str,
    dataset: str,
    model: str,
    prompt_id: str,
    modality: str,
    key: Key,
    label: int | None,
    human: Mapping[str, int],
    given: Mapping[str, Any],
) -> Any:
    """One row of :func:`write_run`, as a :class:`mmjudge.records.JudgmentRecord`."""
    from mmjudge.records import JudgmentRecord

    error = given["errors"].get(key)
    cost, image_cost = given["cost"], given["image_cost"]
    return JudgmentRecord(
        run_id=run_id,
        dataset=dataset,
        query_id=key[0],
        result_id=key[1],
        modality=modality,
        provider="fake",
        model=model,
        prompt_id=prompt_id,
        prompt_hash="h",
        image_sha256s=list(given["image_hashes"].get(key, [])),
        raw_output=given["raw_output"].get(key, None if label is None else str(label)),
        label=label,
        explanation=None,
        parse_error=None if label is not None or error else "no grade found",
        human_labels=dict(human),
        input_tokens=100,
        output_tokens=10,
        cost_usd=cost[key] if isinstance(cost, Mapping) else cost,
        latency_s=given["latency"],
        cached=False,
        error=error,
        timestamp="2026-01-01T00:00:00+00:00",
        usage={"input_tokens": 100, "output_tokens": 10, "image_tokens": 5},
        image_cost_usd=image_cost[key] if isinstance(image_cost, Mapping) else image_cost,
    )
