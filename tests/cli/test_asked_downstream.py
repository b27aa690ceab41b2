"""The commands that read a race's folder, on a race that asked people for grades as it went
(``race.labels=ask``) over a copy of the demo without grades: ``frontier`` and ``agree`` give
each judge's κ from the asked grades weighted 1/π (computed here by hand from the files), not
the unweighted κ; ``estimate`` weights its correction by 1/π; ``plan`` refuses in one line.
Over a copy with the demo's grades, the dataset's grades are read and the commands say so."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import mmjudge
from mmjudge.cli import agree, estimate, frontier, plan
from mmjudge.store.asked_grades import AskedGrade, read_asked_grades, write_asked_grades
from mmjudge.store.race_file import read_race_file
from tests.api.test_race_asked_grades import shop_dataset
from tests.helpers import isolated_overrides
from tests.studies.test_asked_agreement import weighted_kappa

pytestmark = pytest.mark.slow  # each test reads a race run in the module's fixture

JUDGES = ("careful", "hasty", "coin")


def ask_race(root: Path, *, with_grades: bool) -> Path:
    """A race of the demo's three replay judges with ``race.labels=ask``, its grades answered by
    a file of the demo's consensus grades, over a copy of the demo (without its grades unless
    ``with_grades``); its folder."""
    qrels = shop_dataset(root, with_grades=with_grades)
    judges = ",".join(f"pkg://mmjudge/datasets/demo_fashion/judges/{n}.jsonl" for n in JUDGES)
    result = mmjudge.run_race(
        [
            "dataset=shop",
            "model=replay",
            f"model.options.qrels={judges}",
            "race.round_items=40",
            "race.labels=ask",
            f"race.label_oracle={qrels}",
            "report.build=false",
            *(f"{k}={v}" for k, v in isolated_overrides(root).items()),
        ],
        config_dir=root / "conf",
        sweep_dir=root / "race",
    )
    assert result.outcome is not None
    return root / "race"


@pytest.fixture(scope="module")
def unlabelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ask_race(tmp_path_factory.mktemp("unlabelled"), with_grades=False)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ask_race(tmp_path_factory.mktemp("labelled"), with_grades=True)


def judge_grades(folder: Path, judge: str) -> dict[tuple[str, str], float]:
    """A judge's grades, read from its run folder's rows."""
    (run,) = folder.glob(f"shop.replay-{judge}.*")
    rows = [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]
    return {
        (r["query_id"], r["result_id"]): float(r["label"])
        for r in rows
        if r["label"] is not None and r["error"] is None
    }


def by_hand(folder: Path, judge: str, weighted: bool = True) -> float:
    """The judge's κ over the asked items it graded, each weighted 1/π (or 1)."""
    asked = read_asked_grades(folder)
    grades = judge_grades(folder, judge)
    person = [float(a.grade) for a in asked if a.grade is not None]
    theirs = [grades.get((a.query_id, a.result_id), math.nan) for a in asked]
    weights = [1.0 / a.probability if weighted else 1.0 for a in asked]
    return weighted_kappa(person, theirs, weights)


def shown(value: float) -> str:
    return f"{value:.3f}"


def test_frontier_scores_each_judge_on_the_asked_grades_weighted(
    unlabelled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    race = read_race_file(unlabelled)
    assert race is not None and race.outcome is not None
    assert frontier.main([str(unlabelled), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    total = len(read_asked_grades(unlabelled))
    assert (
        f"grades: human grades asked adaptively by the race (asked_grades.json): {total} grades "
        f"over {len(race.rounds)} rounds, each weighted 1/π" in out
    )
    careful = by_hand(unlabelled, "careful")
    assert f"best single judge   replay-careful/default/text  κ {shown(careful)} [" in out
    assert "the design's linearised error, each item weighted 1/π" in out
    for judge in JUDGES:
        kappa = by_hand(unlabelled, judge)
        pattern = rf"replay-{judge}/default/text\s+single"
        row = next(line for line in out.splitlines() if re.search(pattern, line))
        assert f"  {shown(kappa)}  " in row  # its κ on the items it shares with the best
    # the careful judge is right nearly everywhere, so weighting hardly moves its κ; the
    # others' unweighted κ (over a sample rich in their mistakes) is far below
    for judge in ("hasty", "coin"):
        plain = by_hand(unlabelled, judge, weighted=False)
        assert by_hand(unlabelled, judge) - plain > 0.03
        assert f"  {shown(plain)}  " not in out
    assert frontier.main([str(unlabelled), "--format", "json", "--n-boot", "50"]) == 0
    (answer,) = json.loads(capsys.readouterr().out)["datasets"]
    assert answer["weighted"] is True and answer["not_read"] is None
    assert answer["best"]["kappa"]["estimate"] == pytest.approx(careful)


def test_agree_on_the_folder_gives_the_same_weighted_kappas(
    unlabelled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert agree.main([str(unlabelled)]) == 0
    out = capsys.readouterr().out
    assert "each weighted 1/π, its inclusion probability" in out
    for judge in JUDGES:
        row = next(line for line in out.splitlines() if f"replay-{judge}/" in line)
        assert re.search(rf"\s{re.escape(shown(by_hand(unlabelled, judge)))} \[", row), row
        if judge != "careful":  # weighting hardly moves the careful judge's κ
            assert f" {shown(by_hand(unlabelled, judge, weighted=False))} [" not in row
    assert agree.main([str(unlabelled), "--runs", str(unlabelled)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mmjudge agree: --runs with ") and "asked adaptively" in line
    assert agree.main([str(unlabelled), "some.qrels", "--panel", "majority"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "is a folder" in line and "RUN_QRELS, --panel do not apply" in line


def test_estimate_weights_the_correction_by_inclusion_probability(
    unlabelled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(unlabelled), "--judge", "replay-hasty", "--format", "json"]
    assert estimate.main(argv) == 0
    found = json.loads(capsys.readouterr().out)
    assert "asked adaptively" in found["grades"]
    hasty = judge_grades(unlabelled, "hasty")
    asked = {(a.query_id, a.result_id): a for a in read_asked_grades(unlabelled)}
    keys = [key for key in hasty if key in asked]
    assert found["items"] == len(hasty) and found["labelled"] == len(keys)
    y = np.asarray([asked[k].grade for k in keys], dtype=float)
    yhat = np.asarray([hasty[k] for k in keys])
    w = np.asarray([1.0 / asked[k].probability for k in keys])
    mean = next(e for e in found["estimates"] if e["name"] == "mean grade")
    # the human-only mean: the asked grades weighted 1/π (not their plain mean)
    assert mean["human_only"]["estimate"] == pytest.approx((w * y).sum() / w.sum())
    assert abs(mean["human_only"]["estimate"] - y.mean()) > 0.05
    # PPI++ in the active-inference form: the judge on every item, plus the correction on
    # the asked items weighted 1/π
    lam = mean["ppi"]["lam"]
    judged = np.asarray(list(hasty.values()))
    expected = lam * judged.mean() + (w * (y - lam * yhat)).sum() / w.sum()
    assert mean["ppi"]["estimate"] == pytest.approx(expected)
    assert estimate.main([str(unlabelled), "--judge", "replay-hasty", "--labelled", "20"]) == 2
    assert "which are read weighted 1/π without --labelled" in capsys.readouterr().err
    assert estimate.main([str(unlabelled), "--judge", "replay-hasty", "--runs", "x"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mmjudge estimate: --runs with ") and "top ten" in line


def test_estimate_refuses_while_the_race_waits_on_a_rounds_grades(
    unlabelled: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "race"
    shutil.copytree(unlabelled, folder)
    kept = read_asked_grades(folder)
    race = read_race_file(folder)
    assert race is not None
    waiting = AskedGrade(len(race.rounds) + 1, "q01", "p999", 0.5, None)
    write_asked_grades(folder, [*kept, waiting])
    assert estimate.main([str(folder), "--judge", "replay-hasty"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "the race waits for 1 grades of its next round" in line


def test_plan_refuses_in_one_line_and_points_at_the_weighted_kappas(
    unlabelled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert plan.main([str(unlabelled)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "asked adaptively by its race" in line and "uniformly drawn pilot" in line
    assert f"mmjudge frontier {unlabelled}" in line


def test_with_the_datasets_own_grades_those_are_read_and_the_commands_say_so(
    labelled: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert read_asked_grades(labelled)
    assert frontier.main([str(labelled), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "grades: human grades from the dataset (the annotators' consensus)" in out
    assert "grades the race asked for are not read: the dataset's own grades" in out
    assert "paired bootstrap over" in out
    assert agree.main([str(labelled), "--n-boot", "50"]) == 0
    assert "are not read" in capsys.readouterr().out
    assert plan.main([str(labelled), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "grades: the dataset's own; the " in out and "grades the race asked for" in out
    argv = [str(labelled), "--judge", "replay-hasty", "--labelled", "20"]
    assert estimate.main(argv) == 0
    out = capsys.readouterr().out
    assert "grades: the dataset's own; the " in out and "20 of 80 human labels used" in out
