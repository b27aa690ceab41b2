"""Training's helpers that need no torch: the cut points fitted on the training pairs, the
targets, the base checkpoint's check, and what the command prints at the end."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mmjudge.cli.distill import summary
from mmjudge.distill import Distilled, Trained
from mmjudge.distill.pairs import Pair
from mmjudge.distill.train import base_source, cut_points, targets
from mmjudge.errors import MMJudgeError
from mmjudge.judges.distilled_folder import KappaFigure
from tests.judges.test_distilled_folder import manifest


def test_cut_points_give_the_training_pairs_the_teachers_shares() -> None:
    scores = [0.6, 0.1, 0.4, 0.2, 0.5, 0.3]
    taught = [2, 0, 1, 0, 2, 1]
    # two pairs below grade 1 and four below grade 2: half-way between the 2nd and 3rd lowest
    # scores, and between the 4th and 5th
    assert cut_points(scores, taught, [0, 1, 2]) == [0.25, 0.45]


def test_tied_scores_still_give_increasing_cut_points() -> None:
    cuts = cut_points([0.5, 0.5, 0.5], [0, 1, 2], [0, 1, 2])
    assert cuts[0] == 0.5 and cuts[1] > cuts[0]


def test_a_grade_nobody_was_taught_sits_outside_the_scores() -> None:
    # no grade 0 among the taught: every pair lies at or above the first cut point
    cuts = cut_points([0.2, 0.8], [1, 2], [0, 1, 2])
    assert cuts[0] < 0.2 and 0.2 < cuts[1] < 0.8


def test_targets_are_places_on_the_scale() -> None:
    pairs = [Pair("q", str(g), "q", "t", g, float(g), float("nan")) for g in (0, 1, 2, 3)]
    assert targets(pairs, [3, 2, 1, 0]) == [0.0, 1 / 3, 2 / 3, 1.0]


def test_a_base_that_is_not_a_checkpoint_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(MMJudgeError, match="not a local model folder") as caught:
        base_source(str(tmp_path))
    assert "\n" not in str(caught.value)
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    assert base_source(str(tmp_path)) == str(tmp_path)


def test_the_command_prints_the_held_out_figures(tmp_path: Path) -> None:
    held = manifest().held_out
    written = manifest(
        held_out=dataclasses.replace(held, source_vs_people=KappaFigure(0.7, 0.6, 0.8, 12, 2))
    )
    text = summary(Distilled(tmp_path, written, Trained(2, 1.5, True)))
    assert text.splitlines() == [
        f"{tmp_path}: trained on 2 pairs of demo_fashion graded by gpt4o_mini, 2 epochs in "
        "1.5 s (stopped: kept epoch 2 of 3)",
        "held out: 12 items of 2 queries, never trained on",
        "  κ trained judge vs gpt4o_mini: 0.50 [0.25, 0.75] on 12 items",
        "  κ trained judge vs people: undefined on 12 items",
        "  κ gpt4o_mini vs people: 0.70 [0.60, 0.80] on 12 items",
        f"run it: mmjudge sweep model=distilled model.options.path={tmp_path}",
    ]
