"""``mmjudge plan --format json``: one typed record, printed by one writer and read back by one
reader; a plan the last release printed still reads, and prints again as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.errors import MMJudgeError
from mmjudge.store.plan_file import plan_json, read_plan

#: A plan as the last release printed it (no version key): two judges with a budget split,
#: and the best against the runner-up.
LAST_RELEASE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "plans" / "without_version.json"
)


def test_a_plan_the_last_release_printed_reads_and_prints_again_as_it_was(tmp_path: Path) -> None:
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
    printed = json.loads(plan_json(plan))
    assert printed == {**json.loads(LAST_RELEASE.read_text(encoding="utf-8")), "schema_version": 1}
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
