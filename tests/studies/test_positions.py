"""κ by place in the call, on hand-made rows: a place where the judge always agrees with the
person, one where it always says the opposite, the lone results and a resumed row."""

from __future__ import annotations

import pandas as pd
import pytest

from mmjudge.studies.positions import call_positions

GRADES = [0, 1, 2]


def frame(rows: list[tuple[str, str, int, int, int | None, int | None, bool]]) -> pd.DataFrame:
    """Rows of (query, result, judge's grade, person's grade, place, call size, asked again)."""
    data = pd.DataFrame(
        rows,
        columns=[
            "query_id",
            "result_id",
            "label",
            "human:a",
            "call_position",
            "call_size",
            "reasked",
        ],
    )
    data["error"] = None
    for name in ("label", "human:a", "call_position", "call_size"):
        data[name] = pd.array(data[name].tolist(), dtype="Int64")
    return data


def test_each_place_is_scored_on_its_own_rows() -> None:
    rows = []
    for n, q in enumerate(["q1", "q2", "q3", "q4"]):
        truth = n % 2  # 0, 1, 0, 1
        rows.append((q, "a", truth, truth, 1, 2, False))  # R1: always right
        rows.append((q, "b", 1 - truth, truth, 2, 2, n == 0))  # R2: always the opposite
        rows.append((q, "c", 2, 0, None, None, False))  # a lone result, sent alone
    rows.append(("q1", "a", 1 - 0, 0, 1, 2, False))  # a resumed row first, then...
    rows.append(("q1", "a", 0, 0, 1, 2, False))  # ...its last row, which counts
    block = call_positions(frame(rows), GRADES, relevant_from=1)
    assert block is not None
    assert block.calls == 4 and block.results_per_call == 2.0 and block.reasked == 1
    first, second = block.by_position
    assert (first.position, first.n, second.position, second.n) == (1, 4, 2, 4)
    assert first.kappa.estimate == pytest.approx(1.0)
    assert second.kappa.estimate == pytest.approx(-1.0)


def test_a_run_of_single_calls_has_no_block() -> None:
    rows = [("q1", "a", 1, 1, None, None, False), ("q1", "b", 0, 0, None, None, False)]
    assert call_positions(frame(rows), GRADES, relevant_from=1) is None
    assert call_positions(pd.DataFrame({"label": [1]}), GRADES, relevant_from=1) is None
