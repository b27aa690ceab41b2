"""``mmjudge plan --format json``: one typed record, printed by one writer and read back by one
reader; a plan the last release printed (layout 1) still reads, and prints again in this
layout with every figure it had."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.errors import MMJudgeError
from mmjudge.store.plan_file import plan_json, read_plan

#: A plan as the last release printed it (layout 1, no version key): two judges with a budget
#: split, and the best against the runner-up.
LAST_RELEASE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "plans" / "without_version.json"
)


def test_a_plan_the_last_release_printed_reads_and_prints_again_with_its_figures(
    tmp_path: Path,
) -> None:
    plan = read_plan(LAST_RELEASE)
    (dataset,) = plan.datasets
    assert dataset.dataset == "toy" and dataset.target_half_width == 0.05
    assert (dataset.cost_per_label, dataset.budget, dataset.n_boot) == (0.5, 100.0, 1000)
    big, mid = dataset.judges
    assert big.judge == "big/default/text" and big.needed_items == 484 and big.needs_more_queries
    assert big.budget_split is not None and big.budget_split.judge_only_labels == 1801
    assert mid.usd == 222.5 and mid.more_items == 445
    separation = dataset.separation
    assert separation is not None and separation.runner_up == "mid/default/text"
    assert not separation.separated and separation.needed_queries == 198
    # layout 1's half-widths were the query bootstrap's; it had no jackknife or refusals
    assert big.half_width == big.bootstrap_half_width == 0.07093956828306686
    assert separation.bootstrap_half_width == separation.half_width == 0.10883319406408115
    assert big.standard_error is None and big.degrees_of_freedom is None
    assert dataset.too_small is None and big.too_small is None and separation.too_small is None
    assert dataset.plan_confidence is None and big.budget_split.too_small is None
    assert separation.needed_items_central is None and separation.n_items == 180
    printed = json.loads(plan_json(plan))
    assert printed["schema_version"] == 2
    old = json.loads(LAST_RELEASE.read_text(encoding="utf-8"))["datasets"][0]
    new = printed["datasets"][0]
    pairs = [(old, new), (old["separation"], new["separation"])]
    for was, now in zip(old["judges"], new["judges"], strict=True):
        pairs += [(was, now), (was["budget_split"], now["budget_split"])]
    for was, now in pairs:  # every figure it had, as it was
        assert {k: now[k] for k in _figures(was)} == _figures(was)
    assert new["judges"][0]["bootstrap_half_width"] == old["judges"][0]["half_width"]
    assert new["too_small"] is None and new["judges"][0]["budget_split"]["too_small"] is None
    again = tmp_path / "plan.json"
    again.write_text(plan_json(plan), encoding="utf-8")
    assert read_plan(again) == plan


def test_undefined_figures_print_as_null_and_a_plan_without_a_budget_has_no_split(
    tmp_path: Path,
) -> None:
    data = json.loads(LAST_RELEASE.read_text(encoding="utf-8"))
    judge = data["datasets"][0]["judges"][0]
    del judge["budget_split"]
    judge.update(kappa=None, needed_items=None, usd=None)
    data["datasets"][0]["separation"] = None
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    plan = read_plan(path)
    first = plan.datasets[0].judges[0]
    assert first.kappa is None and first.needed_items is None and first.budget_split is None
    printed = json.loads(plan_json(plan))["datasets"][0]
    assert "budget_split" not in printed["judges"][0] and printed["separation"] is None
    assert printed["judges"][0]["kappa"] is None


def test_a_file_that_is_not_a_plan_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text("[", encoding="utf-8")
    with pytest.raises(MMJudgeError, match="cannot be read as a plan"):
        read_plan(path)
    path.write_text('{"schema_version": 7, "datasets": []}', encoding="utf-8")
    with pytest.raises(MMJudgeError, match="not a plan this version of mmjudge reads"):
        read_plan(path)


def _figures(block: dict) -> dict:
    """A block's own figures (not the blocks inside it)."""
    return {k: v for k, v in block.items() if not isinstance(v, dict | list)}
