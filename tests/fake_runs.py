"""Hand-made run directories (``judgments.jsonl`` + ``summary.json``) with known contents,
for the tests of panels, cascades, selection and the frontier."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmjudge.agreement.summarise import summarise_run
from mmjudge.records import JudgmentRecord
from mmjudge.runs import CellInfo

Key = tuple[str, str]


def make_run(
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
) -> Path:
    """Write a completed run ``root/name`` judging ``labels`` (None = unparseable)."""
    run_dir = root / name
    run_dir.mkdir(parents=True)
    lines = []
    for key, label in labels.items():
        item_cost = cost[key] if isinstance(cost, Mapping) else cost
        item_image = image_cost[key] if isinstance(image_cost, Mapping) else image_cost
        error = (errors or {}).get(key)
        record = JudgmentRecord(
            run_id=name,
            dataset=dataset,
            query_id=key[0],
            result_id=key[1],
            modality=modality,
            provider="fake",
            model=model,
            prompt_id=prompt_id,
            prompt_hash="h",
            image_sha256s=list((image_hashes or {}).get(key, [])),
            raw_output=(raw_output or {}).get(key, None if label is None else str(label)),
            label=label,
            explanation=None,
            parse_error=None if label is not None or error else "no grade found",
            human_labels=dict(human[key]),
            input_tokens=100,
            output_tokens=10,
            cost_usd=item_cost,
            latency_s=latency,
            cached=False,
            error=error,
            timestamp="2026-01-01T00:00:00+00:00",
            usage={"input_tokens": 100, "output_tokens": 10, "image_tokens": 5},
            image_cost_usd=item_image,
        )
        lines.append(record.to_json())
    (run_dir / "judgments.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cell = CellInfo(
        dataset=dataset,
        model=model,
        model_id=model,
        provider="fake",
        modality=modality,
        prompt_id=prompt_id,
        pricing_sheet="2026-10-31",
        grades=list(grades),
    )
    config = {"dataset": {"scale": {"relevant_from": relevant_from}}}
    summarise_run(run_dir, cell, relevant_from=relevant_from, config=config)
    return run_dir


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "judgments.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))
