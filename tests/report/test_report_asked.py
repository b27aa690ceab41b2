"""The report's main part on a race that asked people for grades as it went
(``race.labels=ask``) over a copy of the demo without grades: every cell's κ and every paired
comparison comes from the asked grades weighted 1/π (the weighted κ computed by hand here,
and the one definition in :mod:`mmjudge.studies.asked_agreement`), the page says so where
it shows them, and over a copy with the demo's grades the report is the one it was before."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest

from mmjudge.report.analysis import Analysis, analyse
from mmjudge.report.build import build_report
from mmjudge.report.dataset_tables import dataset_tables
from mmjudge.report.load import cell_table
from mmjudge.store import load_run
from mmjudge.store.asked_grades import ASKED_GRADES_FILE
from mmjudge.studies.asked_agreement import (
    asked_reference,
    judge_kappas,
    paired_difference,
    run_labels,
)
from tests.cli.test_asked_downstream import ask_race, by_hand

pytestmark = pytest.mark.slow  # each test reads a race run once in the module's fixtures

N_BOOT = 50


@pytest.fixture(scope="module")
def unlabelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ask_race(tmp_path_factory.mktemp("unlabelled"), with_grades=False)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ask_race(tmp_path_factory.mktemp("labelled"), with_grades=True)


@pytest.fixture(scope="module")
def analysis(unlabelled: Path) -> Analysis:
    return analyse(cell_table(unlabelled), n_boot=N_BOOT)


@pytest.fixture(scope="module")
def page(unlabelled: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("reports")
    return build_report(unlabelled, folder, n_boot=N_BOOT, slices=["has_image"])


def judge_of(run_dir: str) -> str:
    return Path(run_dir).name.split(".")[1].removeprefix("replay-")


def test_each_cells_kappa_is_the_weighted_kappa_of_the_asked_grades(
    unlabelled: Path, analysis: Analysis, page: Path
) -> None:
    (stats,) = analysis.datasets
    reference = asked_reference(unlabelled)
    assert reference is not None and stats.asked is not None
    assert len(stats.cells) == 3
    found = judge_kappas(
        reference, [run_labels(reference, load_run(Path(c.run_dir))) for c in stats.cells]
    )
    for cell, expected in zip(stats.cells, found, strict=True):
        judge = judge_of(cell.run_dir)
        assert cell.kappa == expected.kappa  # the one definition, interval and all
        assert cell.score is not None and cell.score.n_items == expected.n_items
        assert cell.kappa.estimate == pytest.approx(by_hand(unlabelled, judge))
        assert math.isfinite(cell.kappa.low) and cell.kappa.low < cell.kappa.estimate
        if judge != "careful":  # right nearly everywhere, weighting hardly moves its κ
            assert abs(cell.kappa.estimate - by_hand(unlabelled, judge, weighted=False)) > 0.03
    assert [judge_of(c.run_dir) for c in stats.ranked] == ["careful", "hasty", "coin"]
    assert [judge_of(c.run_dir) for c in stats.frontier_cells] == ["careful"]
    # the export the report writes carries the same κ and its interval
    with (page / "judges.csv").open(encoding="utf-8") as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    for cell in stats.cells:
        row = rows[cell.judge.model]
        assert float(row["kappa"]) == pytest.approx(cell.kappa.estimate)
        assert float(row["kappa_low"]) == pytest.approx(cell.kappa.low)
        assert float(row["kappa_high"]) == pytest.approx(cell.kappa.high)
        assert row["kappa_linear"] == ""  # needs every item's grade: left out


def test_the_best_is_compared_with_the_others_by_the_weighted_paired_difference(
    unlabelled: Path, analysis: Analysis
) -> None:
    (stats,) = analysis.datasets
    reference = asked_reference(unlabelled)
    assert reference is not None
    best = stats.ranked[0]
    assert len(stats.best_vs_others) == 2
    for comparison in stats.best_vs_others:
        assert comparison.a is best
        expected = paired_difference(
            reference,
            run_labels(reference, load_run(Path(best.run_dir))),
            run_labels(reference, load_run(Path(comparison.b.run_dir))),
        )
        assert comparison.paired == expected
        assert comparison.kappa_a - comparison.kappa_b == pytest.approx(comparison.difference)
        assert comparison.distinguishable and comparison.difference > 0


def test_the_page_says_the_kappas_come_from_the_asked_grades(
    analysis: Analysis, page: Path
) -> None:
    (stats,) = analysis.datasets
    assert stats.asked is not None
    line = stats.asked.line
    assert line.startswith("human grades asked adaptively by the race (asked_grades.json): ")
    html = (page / "index.html").read_text(encoding="utf-8").replace("&#39;", "'")
    assert "No judge has a κ" not in html
    # the head, the answers' preamble, the chart's caption and the dataset's table
    assert html.count(line) == 4
    assert f"On <b>shop</b> every κ and Δκ below comes from the {line}" in html
    assert f"each judge's κ is against the {line}, with the delete-one jackknife's" in html
    assert "is best on shop" in html
    assert "a κ shown without an interval rests on fewer than 25 asked grades" in html
    assert "shop</a>: replay-careful · text only (free, κ 0.91)" in html
    # what needs every item's grade says there is none instead of showing numbers
    assert "No confusion matrix: the dataset holds no grade of its own" in html
    assert "humans – (the dataset holds no grade of its own: no human–human κ)" in html
    assert "<b>shop</b> holds no grade of its own, only the grades a race asked for" in html
    assert "To separate" not in html and "The labels there are already" not in html
    assert "No slices on <b>shop</b>: it holds no grade of its own" in html
    assert "has_image=" not in html  # no slice rows against a consensus there is not
    (table,) = dataset_tables(analysis)
    assert table.grades == line and table.confusion == []


def test_with_the_datasets_own_grades_the_report_is_as_before(
    labelled: Path, tmp_path: Path
) -> None:
    """The demo's own grades are the reference: the report reads the folder as it would
    without the race's asked grades."""
    without = tmp_path / "race"
    shutil.copytree(labelled, without)
    (without / ASKED_GRADES_FILE).unlink()
    found = analyse(cell_table(labelled), n_boot=N_BOOT)
    before = analyse(cell_table(without), n_boot=N_BOOT)
    assert found.asked_lines == {} and found.datasets[0].asked is None
    (stats,), (old,) = found.datasets, before.datasets
    assert [c.kappa for c in stats.cells] == [c.kappa for c in old.cells]
    assert [c.score for c in stats.cells] == [c.score for c in old.cells]
    assert [c.paired for c in stats.best_vs_others] == [c.paired for c in old.best_vs_others]
    assert stats.human_pairs and [p.kappa for p in stats.human_pairs] == [
        p.kappa for p in old.human_pairs
    ]
    assert dataset_tables(found) == dataset_tables(before)
    html = build_report(labelled, tmp_path / "reports", n_boot=N_BOOT) / "index.html"
    text = html.read_text(encoding="utf-8")
    assert "holds no grade of its own" not in text and "No confusion matrix" not in text


def test_with_two_races_that_asked_the_page_names_whose_grades_it_reads(
    unlabelled: Path, tmp_path: Path
) -> None:
    """Cells from two race folders over the same dataset, each folder with its own asked
    grades: one race's grades are read, and the line the page shows says which and that the
    other's are not pooled."""
    second = tmp_path / "second_race"
    shutil.copytree(unlabelled, second)
    shutil.rmtree(second / "shop.replay-coin.text.default")  # that cell read from the first
    found = analyse(cell_table([unlabelled, second]), n_boot=N_BOOT)
    (stats,) = found.datasets
    assert {Path(cell.run_dir).parent for cell in stats.cells} == {unlabelled, second}
    assert stats.asked is not None
    (other,) = {unlabelled, second} - {stats.asked.folder}
    line = found.asked_lines["shop"]
    assert line.startswith("human grades asked adaptively by the race (asked_grades.json): ")
    assert line.endswith(
        f", in the race folder {stats.asked.folder.name} (the grades the race folder "
        f"{other.name} asked for are not pooled with them: each race drew its own with its "
        "own probabilities)"
    )
