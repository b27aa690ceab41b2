"""A run's agreement figures leave out the items a trained judge learnt from, which the
``trained_on`` block names."""

from __future__ import annotations

import pandas as pd
import pytest

from mmjudge.store import TrainedOn
from mmjudge.studies.run_agreement import agreement, item_keys


def rows() -> pd.DataFrame:
    # People: 0 1 0 1. The judge: right on a and b (the items it learnt), wrong on c and d.
    return pd.DataFrame(
        {
            "query_id": ["q1", "q1", "q2", "q2"],
            "result_id": ["a", "b", "c", "d"],
            "label": [0.0, 1.0, 1.0, 0.0],
            "error": [None, None, None, None],
            "human:ann": [0.0, 1.0, 0.0, 1.0],
        }
    )


def test_the_items_it_learnt_are_left_out_of_kappa() -> None:
    # All four: agreement 2/4, chance 1/2 (each side gives 0 and 1 half the time): κ = 0.
    everything = agreement(rows(), [0, 1], 1.0)
    assert everything.n_scored == 4
    assert everything.value("kappa") == pytest.approx(0.0)
    # c and d only: agreement 0, chance 1/2: κ = (0 - 0.5) / (1 - 0.5) = -1.
    held_out = agreement(rows(), [0, 1], 1.0, leave_out=frozenset({"q1\ta", "q1\tb"}))
    assert held_out.n_scored == 2 and held_out.n_queries == 1
    assert held_out.value("kappa") == pytest.approx(-1.0)


def test_item_keys_are_the_manifests_keys() -> None:
    assert item_keys(rows()) == ["q1\ta", "q1\tb", "q2\tc", "q2\td"]
    assert item_keys(rows().iloc[:0]) == []


def block() -> TrainedOn:
    return TrainedOn(
        manifest="judges/fashion/distilled.json",
        source="results/source",
        teacher="humans",
        dataset="demo_fashion",
        base="all-MiniLM-L6-v2",
        seed=3,
        epochs_done=2,
        n_trained=5,
        held_out_vs_teacher="0.41 [0.30, 0.52] on 12 items",
        items=["q1\ta", "q1\tb", "q9\tz"],
    )


def test_the_block_keeps_the_cells_own_training_items() -> None:
    found = block().among(item_keys(rows()))
    assert found.items == ["q1\ta", "q1\tb"]
    assert found.scope(2) == "κ on 2 items it was not trained on; 2 training items left out"
    assert found.provenance().startswith("trained on 5 items of demo_fashion graded by humans")
