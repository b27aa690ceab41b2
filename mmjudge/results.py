"""Read saved run outputs back: judgment rows into a data frame, summaries, sweep layouts."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

JUDGMENTS = "judgments.jsonl"
SUMMARY = "summary.json"

#: Columns kept from each row (everything the metrics and report need; not raw prompts).
COLUMNS = (
    "dataset",
    "query_id",
    "result_id",
    "modality",
    "provider",
    "model",
    "prompt_id",
    "label",
    "explanation",
    "raw_output",
    "parse_error",
    "error",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "image_cost_usd",
    "latency_s",
    "cached",
    "truncated",
    "resent",
)


def iter_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a judgments file, skipping a partial last line left by a killed run."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def load_judgments(path: Path) -> pd.DataFrame:
    """One row per judgment; human grades become ``human:<annotator>`` columns and image
    tokens an ``image_tokens`` column."""
    columns: dict[str, list[Any]] = {name: [] for name in COLUMNS}
    columns["image_tokens"] = []
    humans: dict[str, list[Any]] = {}
    if not path.exists():  # a run stopped before its first judgment
        path = Path(os.devnull)
    for n, row in enumerate(iter_rows(path)):
        for name in COLUMNS:
            columns[name].append(row.get(name))
        columns["image_tokens"].append((row.get("usage") or {}).get("image_tokens", 0))
        for annotator, grade in (row.get("human_labels") or {}).items():
            values = humans.get(annotator)
            if values is None:  # first grade from this annotator: pad the rows before it
                values = humans[annotator] = [None] * n
            values.append(grade)
        for values in humans.values():
            if len(values) < n + 1:
                values.append(None)
    frame = pd.DataFrame(columns)
    for annotator, values in sorted(humans.items()):
        frame[f"human:{annotator}"] = pd.array(values, dtype="Int64")
    frame["label"] = pd.array(frame["label"].tolist(), dtype="Int64")
    for name in ("input_tokens", "output_tokens", "image_tokens"):
        frame[name] = frame[name].fillna(0).astype(np.int64)
    for name in ("cost_usd", "image_cost_usd", "latency_s"):
        frame[name] = frame[name].fillna(0.0).astype(np.float64)
    frame["cached"] = frame["cached"].fillna(False).astype(bool)
    frame["truncated"] = frame["truncated"].fillna(False).astype(bool)
    frame["resent"] = frame["resent"].fillna(0).astype(np.int64)
    return frame


def annotators(frame: pd.DataFrame) -> list[str]:
    return [c.split(":", 1)[1] for c in frame.columns if c.startswith("human:")]


def read_summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / SUMMARY).read_text(encoding="utf-8")))


def run_dirs(root: Path) -> list[Path]:
    """Run directories at or below ``root`` (a run, a sweep, or a folder of sweeps)."""
    if (root / SUMMARY).is_file():
        return [root]
    return sorted(p.parent for p in root.rglob(SUMMARY))
