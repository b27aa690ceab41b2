"""The free lexical judge: cut points given or derived for any scale, checked in one line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from mmjudge.config import ModelConfig
from mmjudge.engine.cell import run_cell
from mmjudge.errors import ConfigError
from mmjudge.judges.cut_points import spread
from mmjudge.judges.lexical import LexicalJudge, bm25_overlap
from mmjudge.records import JudgeRequest
from tests.helpers import compose_config, compose_option


def lexical(thresholds: list[float] | None = None, **options: Any) -> LexicalJudge:
    model = ModelConfig(name="lex", provider="lexical", model_id="lexical-bm25")
    model.thresholds = thresholds or []
    model.options = options
    return LexicalJudge(model)


def grade(judge: LexicalJudge, query: str, text: str, grades: tuple[int, ...]) -> int:
    request = JudgeRequest(
        item_key="k", prompt="", query=query, fields=(("name", text),), grades=grades
    )
    response = asyncio.run(judge.generate(request))
    return int(response.text.split("\n", 1)[0])


@pytest.mark.parametrize(
    ("n_grades", "expected"),
    [(1, []), (2, [0.5]), (3, [0.3, 0.7]), (4, [0.3, 0.5, 0.7]), (5, [0.3, 0.4333, 0.5667, 0.7])],
)
def test_spread_splits_the_span_into_equal_steps(n_grades: int, expected: list[float]) -> None:
    assert spread((0.3, 0.7), n_grades) == pytest.approx(expected, abs=1e-4)


def test_shipped_config_keeps_the_three_grade_cut_points_and_derives_the_others() -> None:
    judge = LexicalJudge(compose_option("model", "lexical").model)
    assert judge.cut_points([0, 1, 2]).values == [0.3, 0.7]  # the demo's result is unchanged
    assert judge.cut_points([0, 1, 2, 3]).values == pytest.approx([0.3, 0.5, 0.7])
    assert judge.cut_points([1, 2]).values == pytest.approx([0.5])
    (cuts,) = judge.check_scale([0, 1, 2, 3]).values()
    assert cuts.values == pytest.approx([0.3, 0.5, 0.7])
    assert cuts.source == "derived from model.options.score_span=[0.3, 0.7] for 4 grades"
    assert list(judge.check_scale([0, 1, 2, 3])) == ["text"]


def test_grades_follow_the_scale_of_the_request() -> None:
    judge = lexical()
    exact = bm25_overlap("red dress", "red dress", 1.2, 0.75, 20)
    assert exact > 0.7
    assert grade(judge, "red dress", "red dress", (0, 1, 2, 3)) == 3
    assert grade(judge, "red dress", "red dress", (1, 2, 3, 4)) == 4
    assert grade(judge, "red dress", "garden hose", (0, 1, 2, 3)) == 0
    assert grade(judge, "red dress", "garden hose", (1, 2)) == 1


def test_given_thresholds_are_used_and_checked_against_the_scale() -> None:
    judge = lexical([0.2, 0.5, 0.8])
    assert judge.check_scale([0, 1, 2, 3])["text"].source == "given in model.thresholds"
    with pytest.raises(ConfigError) as error:
        judge.check_scale([0, 1, 2])
    message = str(error.value)
    assert "\n" not in message
    assert "model.thresholds=[0.2, 0.5, 0.8] for 'lex' has 3 cut points" in message
    assert "scale [0, 1, 2] needs 2" in message


@pytest.mark.parametrize(
    ("thresholds", "options", "message"),
    [
        ([0.7, 0.3], {}, "must increase strictly"),
        (None, {"score_span": [0.7, 0.3]}, "must increase strictly"),
        (None, {"score_span": [0.3]}, "must be two numbers"),
        (None, {"scor_span": [0.3, 0.7]}, "not lexical options"),
    ],
)
def test_bad_settings_fail_in_one_line(
    thresholds: list[float] | None, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match="'lex'") as error:
        lexical(thresholds, **options)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_a_four_grade_dataset_runs_without_overrides(tmp_path: Path) -> None:
    """A TREC-shaped dataset graded 0-3 with the shipped lexical config (no thresholds)."""
    data = tmp_path / "trec"
    data.mkdir()
    (data / "queries.tsv").write_text("q1\tred dress\nq2\tgarden hose\n")
    docs = [("d1", "red dress"), ("d2", "red shirt"), ("d3", "garden hose reel"), ("d4", "hat")]
    (data / "docs.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "title": "", "text": t}) + "\n" for d, t in docs)
    )
    (data / "qrels.txt").write_text("q1 0 d1 3\nq1 0 d2 1\nq2 0 d3 2\nq2 0 d4 0\n")
    cfg = compose_config(
        [
            "dataset=trec_example",
            f"dataset.path={data}",
            "model=lexical",
            f"paths.results={tmp_path / 'results'}",
            "runner.progress=false",
        ]
    )
    summary = run_cell(cfg, tmp_path / "run")
    assert summary.n_judgments == 4 and summary.n_errors == 0
    assert summary.grading is not None
    assert summary.grading.by_modality["text"].cut_points == [0.3, 0.5, 0.7]
    labels = {
        row["result_id"]: row["label"]
        for row in map(json.loads, (tmp_path / "run" / "judgments.jsonl").read_text().splitlines())
    }
    assert labels["d1"] == 3 and labels["d4"] == 0
