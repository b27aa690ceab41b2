"""A run's summary reads only the columns it needs (no answer texts), and its numbers are
those of the whole rows."""

from __future__ import annotations

import json
from pathlib import Path

from mmjudge.costs.run_dollars import cost_figures
from mmjudge.store import load_judgments, row_figures
from mmjudge.store.rows import SUMMARY_COLUMNS
from mmjudge.studies.run_agreement import agreement


def _row(i: int) -> dict[str, object]:
    answered = i % 11 != 0
    return {
        "query_id": f"q{i % 13}",
        "result_id": f"r{i}",
        "raw_output": f"{i % 3}\nBecause {'words ' * (i % 40)}" if answered else None,
        "explanation": "Because" if answered else None,
        "label": (None if i % 17 == 0 else i % 3) if answered else None,
        "parse_error": "no grade" if answered and i % 17 == 0 else None,
        "error": None if answered else f"RateLimitError: slow down ({i})",
        "human_labels": {"a": i % 3, **({"b": (i // 2) % 3} if i % 5 else {})},
        "input_tokens": 100 + i,
        "output_tokens": 5 + i % 4,
        "cost_usd": 1e-5 * (i % 7),
        "image_cost_usd": 1e-6 * (i % 3),
        "latency_s": 0.1 + (i % 9) / 10,
        "cached": i % 4 == 0,
        "truncated": i % 6 == 0,
        "resent": int(i % 23 == 0),
        "usage": {"image_tokens": i % 5},
    }


def test_the_summary_columns_give_the_numbers_of_whole_rows(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    rows = [_row(i) for i in range(400)]
    rows.append(rows[3])  # an item written twice (a resumed run)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    whole = load_judgments(path)
    slim = load_judgments(path, keep=SUMMARY_COLUMNS)
    assert "raw_output" not in slim and "explanation" not in slim
    assert row_figures(slim) == row_figures(whole)
    assert cost_figures(slim) == cost_figures(whole)
    assert agreement(slim, [0, 1, 2], 1.0) == agreement(whole, [0, 1, 2], 1.0)
    assert agreement(whole, [0, 1, 2], 1.0).n > 0
