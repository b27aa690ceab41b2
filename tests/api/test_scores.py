"""mmjudge.score_labels: the numbers and the text ``mmjudge agree`` prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mmjudge
from mmjudge.cli import agree
from tests.cli.test_agree import HUMAN, JUDGE_A, JUDGE_B

# The label files `mmjudge agree`'s own tests score, so both give the same figures.


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {}
    for name, text in {"human": HUMAN, "judge_a": JUDGE_A, "judge_b": JUDGE_B}.items():
        paths[name] = tmp_path / f"{name}.qrels"
        paths[name].write_text(text, encoding="utf-8")
    return paths


def command(capsys: pytest.CaptureFixture[str], *argv: object) -> str:
    assert agree.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("form", ["table", "csv", "json"])
def test_the_text_is_what_the_command_prints(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str], form: str
) -> None:
    human, a, b = files["human"], files["judge_a"], files["judge_b"]
    printed = command(capsys, human, a, b, "--format", form, "--panel", "majority")
    scores = mmjudge.score_labels(human, [a, b], panels=["majority"])
    assert scores.text(form) == printed


def test_the_rows_are_the_commands_numbers(
    files: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    human, a, b = files["human"], files["judge_a"], files["judge_b"]
    printed = json.loads(command(capsys, human, a, b, "--format", "json", "--n-boot", "50"))
    scores = mmjudge.score_labels(human, [a, b], n_boot=50)
    assert [row.as_dict() for row in scores.rows] == printed["runs"]
    assert scores.scale == [0, 1, 2, 3] and scores.relevant_from == 2.0
    judge_a = scores["judge_a"]
    assert (judge_a.n, judge_a.missing) == (10, 0)
    assert judge_a.score.accuracy == pytest.approx(0.7)  # three of ten pairs changed
    assert scores["judge_b"].missing == 2


def test_scale_and_out_of_scale_as_the_options_take_them(files: dict[str, Path]) -> None:
    stray = files["human"].with_name("stray.qrels")
    stray.write_text(JUDGE_A.replace("d1 3", "d1 5"), encoding="utf-8")
    with pytest.raises(mmjudge.MMJudgeError, match="5"):
        mmjudge.score_labels(files["human"], [stray], n_boot=0)
    dropped = mmjudge.score_labels(files["human"], [stray], n_boot=0, out_of_scale="drop")
    assert (dropped.rows[0].off_scale, dropped.rows[0].n) == (1, 9)
    wider = mmjudge.score_labels(files["human"], [stray], n_boot=0, scale="0-5")
    assert wider.scale == [0, 1, 2, 3, 4, 5] and wider.rows[0].n == 10


@pytest.mark.parametrize(
    "settings",
    [{"out_of_scale": "ignore"}, {"panels": ["vote"]}, {"scale": "zero to three"}],
)
def test_bad_settings_are_config_errors(files: dict[str, Path], settings: dict) -> None:
    with pytest.raises(mmjudge.ConfigError):
        mmjudge.score_labels(files["human"], [files["judge_a"]], **settings)


def test_an_unknown_row_or_format(files: dict[str, Path]) -> None:
    scores = mmjudge.score_labels(files["human"], [files["judge_a"]], n_boot=0)
    with pytest.raises(KeyError, match="judge_z"):
        scores["judge_z"]
    with pytest.raises(ValueError, match="xml"):
        scores.text("xml")
