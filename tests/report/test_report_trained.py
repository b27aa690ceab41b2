"""A trained judge's cell: its κ leaves out the items it learnt from — in its summary, in the
report (which computes κ again from the labels when its bootstrap differs from the run's) and
in ``mmjudge frontier`` — and the report shows where the judge comes from."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from mmjudge import metrics
from mmjudge.report.build import build_report
from mmjudge.store import TrainedOn, completed_runs, read_summary
from mmjudge.studies.reference_grades import own_score
from tests.fake_runs import make_run

GRADES = [0, 1, 2]
KEYS = [(f"q{q}", f"d{d}") for q in range(8) for d in range(5)]
TRUTH = {key: (int(key[0][1:]) + int(key[1][1:])) % 3 for key in KEYS}
#: The judge learnt the first three queries' items.
TRAINED = [key for key in KEYS if key[0] in ("q0", "q1", "q2")]


def student() -> dict[tuple[str, str], int | None]:
    """Right on every item it learnt; on the others, one grade too high on every other item."""
    return {
        key: TRUTH[key] if key in TRAINED or i % 2 else min(TRUTH[key] + 1, 2)
        for i, key in enumerate(KEYS)
    }


def trained_on() -> TrainedOn:
    return TrainedOn(
        manifest="judges/toy/distilled.json",
        source="results/toy-source",
        teacher="humans",
        dataset="toy",
        base="all-MiniLM-L6-v2",
        seed=7,
        epochs_done=3,
        n_trained=len(TRAINED),
        held_out_vs_teacher="0.50 [0.40, 0.60] on 25 items",
        held_out_vs_people="0.45 [0.35, 0.55] on 25 items",
        items=[f"{q}\t{r}" for q, r in TRAINED] + ["elsewhere\tx"],
    )


@pytest.fixture()
def sweep(tmp_path: Path) -> Path:
    human = {key: {"x": TRUTH[key]} for key in KEYS}
    folder = tmp_path / "sweep"
    make_run(folder, "student", student(), human, model="student", trained_on=trained_on())
    make_run(folder, "other", dict(TRUTH), human, model="other")
    return folder


def held_out_kappa() -> float:
    """Cohen's κ on the 25 items of q3…q7, by the reference implementation."""
    rest = [key for key in KEYS if key not in TRAINED]
    labels = student()
    return float(
        metrics.cohen_kappa(
            [float(TRUTH[k]) for k in rest], [float(labels[k]) for k in rest], GRADES
        )
    )


def test_the_summary_scores_only_the_items_it_did_not_learn(sweep: Path) -> None:
    summary = read_summary(sweep / "student")
    assert summary.trained_on is not None
    assert len(summary.trained_on.items) == 15  # this cell's; the other key is elsewhere
    assert summary.metrics.n_scored == 25
    assert summary.metrics.value("kappa") == pytest.approx(held_out_kappa())
    assert held_out_kappa() < 0.9  # on all 40 items it would read higher


def test_frontier_scores_it_on_the_same_items(sweep: Path) -> None:
    run = next(r for r in completed_runs(sweep) if r.summary.cell.model == "student")
    score = own_score(run, n_boot=0, seed=0, level=0.95)
    assert score.n_items == 25
    assert score.kappa.estimate == pytest.approx(held_out_kappa())


def test_the_report_says_what_its_kappa_is_on_and_where_it_comes_from(
    sweep: Path, tmp_path: Path
) -> None:
    out = build_report(sweep, tmp_path / "reports", n_boot=50)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Judges you trained" in page
    assert "κ on 25 items it was not trained on; 15 training items left out" in page
    for fact in ("results/toy-source", "all-MiniLM-L6-v2", "0.45 [0.35, 0.55] on 25 items"):
        assert fact in page
    with (out / "judges.csv").open(encoding="utf-8") as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    assert float(rows["student"]["kappa"]) == pytest.approx(held_out_kappa(), abs=1e-3)


def test_comparisons_and_selection_leave_its_training_items_out(sweep: Path) -> None:
    from mmjudge.studies.reference_grades import compare_runs
    from mmjudge.studies.selection import selection_study

    runs = {r.summary.cell.model: r for r in completed_runs(sweep)}
    paired = compare_runs(runs["student"], runs["other"], n_boot=20, seed=0, level=0.95)
    assert paired is not None and paired.n_items == 25  # of the 40 both graded
    study = selection_study([runs["student"], runs["other"]], splits=5, seed=0)
    assert study.n_items == 25


def test_a_prediction_powered_estimate_leaves_its_training_items_out(
    sweep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``mmjudge estimate SWEEP_DIR --judge student``: the judge's labels and the people's are
    read on the 25 items it did not learn (a judge right on every item it learnt would
    otherwise make the correction look smaller than it is), and the table says so."""
    from mmjudge.api.sweep_labels import sweep_labels
    from mmjudge.cli.estimate import main

    labels = sweep_labels(sweep, "student")
    judged = {(q, d) for q, docs in labels.judge.qrels.items() for d in docs}
    graded = {(q, d) for q, docs in labels.human.qrels.items() for d in docs}
    assert judged == graded == set(KEYS) - set(TRAINED)
    assert labels.left_out == len(TRAINED)
    assert sweep_labels(sweep, "other").left_out == 0
    # the name frontier and agree print picks the same judge
    shown = {r.summary.cell.model: r.name for r in completed_runs(sweep)}["student"]
    assert sweep_labels(sweep, shown).left_out == len(TRAINED)
    assert main([str(sweep), "--judge", "student", "--labelled", "10"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"left out: {len(TRAINED)} items the trained judge learnt from")
    assert "10 of 25 human labels used" in out
