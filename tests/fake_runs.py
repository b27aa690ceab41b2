"""Hand-made run directories (``judgments.jsonl`` + ``summary.json``) with known contents,
for the tests of panels, cascades, selection and the frontier: written by the report's
synthetic-run writer (:func:`tests.fixtures.synthetic.write_run`), so every synthetic run
in the tests comes from one place and carries the summary real runs carry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fixtures.synthetic import Key, write_run

make_run = write_run

__all__ = ["DRY_RUN_FORECAST", "Key", "make_run", "read_rows", "read_summary"]

#: A dry run's ``forecast.json`` as the engine writes it: 3 calls, $0.50 at list prices and
#: $0.25 through a batch API.
DRY_RUN_FORECAST: dict[str, Any] = {
    "status": "dry_run",
    "dataset": "demo_fashion",
    "model": "gpt4o_mini",
    "model_id": "gpt-4o-mini-2024-07-18",
    "modality": "text",
    "prompt_id": "default",
    "pricing_sheet": "2026-10-31",
    "forecast": {
        "calls": 3,
        "input_tokens": 30,
        "image_tokens": 0,
        "output_tokens": 6,
        "usd": 0.5,
        "image_usd": 0.0,
        "exact_text_tokens": True,
        "output_basis": "",
        "usd_per_million": 0.5 / 3 * 1e6,
    },
    "batch_discount": 0.5,
    "forecast_batch": {
        "calls": 3,
        "input_tokens": 30,
        "image_tokens": 0,
        "output_tokens": 6,
        "usd": 0.25,
        "image_usd": 0.0,
        "exact_text_tokens": True,
        "output_basis": "",
        "usd_per_million": 0.25 / 3 * 1e6,
    },
    "text_cut": {"max_text_tokens": 2000, "items": 1, "tokens_removed": 30},
}


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "judgments.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))
