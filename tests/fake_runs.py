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

__all__ = ["Key", "make_run", "read_rows", "read_summary"]


def read_rows(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "judgments.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))
