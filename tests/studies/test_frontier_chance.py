"""``mmjudge frontier`` and ``mmjudge select`` name no judge that may be no better than chance,
and show chance (κ 0) and the human–human κ beside the κ they print."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.cli import frontier as frontier_command
from mmjudge.cli import select as select_command
from mmjudge.store import completed_runs
from mmjudge.studies.frontier import frontier_answer
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

TREC = FakeDataset("trec_dl_2019", n_queries=49, images=0)
#: Both right less often than a coin over three grades: κ intervals below or around 0.
AT_RANDOM = [
    FakeJudge("gpt4o_mini", accuracy=0.3, usd_per_judgment=0.0001),
    FakeJudge("coin", accuracy=1 / 3, usd_per_judgment=0.0002),
]


@pytest.fixture(scope="module")
def chance_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chance") / "sweep"
    write_sweep(root, [TREC], AT_RANDOM)
    return root


def test_frontier_names_no_judge_when_none_beats_chance(
    chance_sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (found,) = frontier_answer(completed_runs(chance_sweep), n_boot=200)
    assert found.best.above_chance is False and found.best.kappa.low < 0
    assert found.answer is None
    assert found.chance == 0.0 and found.human_kappa.low > 0.5
    assert frontier_command.main([str(chance_sweep), "--n-boot", "200"]) == 0
    out = capsys.readouterr().out
    assert "cheapest as good" not in out and "best single judge" not in out
    assert "no judge on this dataset agrees with people better than chance" in out
    assert "chance 0.000, humans 0." in out
    assert frontier_command.main([str(chance_sweep), "--n-boot", "200", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["datasets"][0]["answer"] is None


def test_frontier_still_answers_above_chance(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    write_sweep(
        root,
        [FakeDataset("shop", n_queries=20, images=0)],
        [
            FakeJudge("strong", accuracy=0.95, usd_per_judgment=0.001),
            FakeJudge("weak", accuracy=0.9),
        ],
    )
    (found,) = frontier_answer(completed_runs(root), n_boot=200)
    assert found.best.above_chance is True
    assert found.answer is not None and found.answer.above_chance is True
    assert "chance 0.000, humans" in frontier_command.format_table([found])


def test_select_says_when_the_chosen_judge_is_at_chance(
    chance_sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert select_command.main([str(chance_sweep), "--splits", "50", "--format", "json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["datasets"]
    assert result["at_chance_rate"] > 0.5 and result["human_kappa"]["low"] > 0.5
    assert select_command.main([str(chance_sweep), "--splits", "50"]) == 0
    out = capsys.readouterr().out
    assert "chance 0.000, humans 0." in out
    assert "held-out κ is 0 or below (chance) in" in out
