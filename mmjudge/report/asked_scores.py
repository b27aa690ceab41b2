"""The report's scores on a dataset without grades of its own whose judges a race scored on the
people's grades it asked for (``race.labels=ask``).

Such a dataset has no consensus to score a cell against, so every κ the report's main part
shows (the chart, the frontier, the answers, the dataset's table) comes from the asked grades
instead, each weighted 1/π, through :class:`~mmjudge.studies.reference_grades.AskedGrades`:
a cell's κ is the weighted κ with its interval
(:func:`~mmjudge.studies.asked_agreement.judge_kappas`), two cells are compared by the
weighted paired difference (:func:`~mmjudge.studies.asked_agreement.paired_difference`).
Nothing is computed here: this only finds the grades, reads the cells' runs back and hands
the results on in the report's own types. Where the dataset has grades of its own
(:func:`~mmjudge.studies.asked_agreement.has_dataset_grades`), they are the reference and
this gives None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmjudge.metrics import catalogue, scoring
from mmjudge.store import SavedRun, load_run
from mmjudge.studies.asked_agreement import asked_reference
from mmjudge.studies.reference_grades import AskedGrades, grades_for


@dataclass(frozen=True)
class AskedScores:
    """The asked grades one dataset's cells are scored against, with the cells' runs."""

    grades: AskedGrades
    """The race's asked grades, read weighted 1/π."""
    folder: Path
    """The race's folder that holds them."""
    runs: dict[str, SavedRun]
    """Each cell's run read back, by its run folder (as :attr:`Cell.run_dir` names it)."""
    not_pooled: tuple[Path, ...] = ()
    """Other race folders among the cells' that asked grades of their own, not read: each
    race drew its grades with its own probabilities, and the report scores against one
    draw."""

    @property
    def line(self) -> str:
        """How the grades were drawn and are read (:meth:`AskedDraw.line`), and, where the
        cells come from several races that asked for grades, which race's grades these are."""
        if not self.not_pooled:
            return self.grades.line
        others = ", ".join(folder.name for folder in self.not_pooled)
        return (
            f"{self.grades.line}, in the race folder {self.folder.name} (the grades the race "
            f"folder{'s' * (len(self.not_pooled) > 1)} {others} asked for are not pooled with "
            "them: each race drew its own with its own probabilities)"
        )

    def score(self, run_dir: str) -> scoring.JudgeScore:
        """The cell's κ over the asked items it graded, weighted 1/π, with its interval, as
        the report's score: the headline measure alone (the other measures need every
        item's grade and are left missing)."""
        own = self.grades.own(self.runs[run_dir], 0)
        return scoring.JudgeScore(
            n_items=own.n_items,
            n_queries=own.n_queries,
            n_off_scale=0,
            values={catalogue.HEADLINE: own.kappa},
        )

    def compare(self, a: str, b: str) -> scoring.PairedComparison | None:
        """κ(a) − κ(b) on the asked items both cells graded, weighted 1/π (None without a
        shared item)."""
        return self.grades.compare(self.runs[a], self.runs[b], 0)


def asked_scores(run_dirs: Sequence[str]) -> AskedScores | None:
    """The asked grades a dataset's cells (``run_dirs``, judges first) are scored against:
    those of the first race folder among the cells' folders that asked for grades (the
    others named in the line the page shows), where the dataset has no grade of its own;
    None otherwise (the report then scores against the dataset's consensus, as without a
    race)."""
    folders = [
        folder
        for folder in dict.fromkeys(Path(run_dir).parent for run_dir in run_dirs)
        if asked_reference(folder) is not None
    ]
    if not folders:
        return None
    first, *others = folders
    runs = {run_dir: load_run(Path(run_dir)) for run_dir in run_dirs}
    chosen = grades_for(first, list(runs.values()), seed=scoring.SEED, level=scoring.LEVEL)
    if not isinstance(chosen.grades, AskedGrades):
        return None  # the dataset's own grades are the better reference
    return AskedScores(chosen.grades, first, runs, tuple(others))
