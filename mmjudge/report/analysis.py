"""The numbers behind the report: κ with bootstrap intervals per cell, the human ceiling,
paired comparisons between judges, and the cost–agreement frontier.

Everything here is computed from saved labels (see :mod:`mmjudge.report.load`) with the
definitions of :mod:`mmjudge.metrics.scoring`, the same as ``summary.json``, ``mmjudge agree`` and
``mmjudge frontier``: a cell is scored once (:func:`~mmjudge.metrics.scoring.score_judge`: κ with
its interval, weighted κ, α, accuracy on the items it graded) and every table, figure and
answer shows that one result. Two judges of a dataset are compared on the items both graded
with :func:`~mmjudge.metrics.scoring.compare_judges`; judges on different datasets (independent
samples) by whether their intervals overlap. A dataset without grades of its own is scored
on the grades a race over it asked for, if any (:mod:`mmjudge.report.asked_scores`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from mmjudge import metrics
from mmjudge.metrics import scoring
from mmjudge.metrics.scoring import N_BOOT as N_BOOT
from mmjudge.metrics.scoring import NO_INTERVAL, Interval, JudgeScore
from mmjudge.report.asked_scores import AskedScores, asked_scores
from mmjudge.report.load import (
    CellLabels,
    DatasetItems,
    cell_scale,
    completed_cells,
    read_cell_labels,
    without_items,
)
from mmjudge.report.numbers import (
    HumanPair,
    human_pairs,
    mean_interval,
    n_scored,
    pareto_frontier,
    saved_score,
)
from mmjudge.report.style import Palette
from mmjudge.store import RunSummary, judgments_path
from mmjudge.store.status import ANALYSED, DRY_RUN, SKIPPED
from mmjudge.studies.race_verdict import RaceVerdict, verdict_for_runs

__all__ = ["HumanPair", "pareto_frontier", "saved_score"]  # from scores, used from here too

MODALITY_NAMES = {"text": "text only", "mm": "image + text", "image": "image only"}
#: Modalities compared against text only in the "does the image help" section.
IMAGE_MODALITIES = ("mm", "image")


class Judge(NamedTuple):
    """A judge as the report compares it: a model shown one modality with one prompt."""

    model: str
    modality: str
    prompt_id: str

    def name(self, with_prompt: bool = False) -> str:
        text = f"{self.model} · {MODALITY_NAMES.get(self.modality, self.modality)}"
        return f"{text} · {self.prompt_id}" if with_prompt else text


@dataclass
class Cell:
    """One completed sweep cell: a judge on a dataset, its summary and its labels."""

    dataset: str
    judge: Judge
    run_id: str
    summary: RunSummary
    usd_per_million: float
    kappa: Interval = NO_INTERVAL
    """κ with its interval: ``score.kappa``, the one interval every view shows."""
    score: JudgeScore | None = None
    """All of the cell's numbers against the consensus, on the items it graded."""
    labels: CellLabels | None = None
    frontier: bool = False
    """On the Pareto frontier of its dataset's judges (ensembles: of judges and ensembles)."""
    sweep: str = ""
    """The sweep folder the cell's run came from."""
    kind: str = "single"
    """``single`` for a judge's run, ``panel`` or ``cascade`` for an ensemble."""
    run_dir: str = ""

    @property
    def ensemble(self) -> bool:
        return self.kind != "single"

    @property
    def free(self) -> bool:
        """No judgment cost anything (a judge whose descriptor says it is free:
        ``JudgeDescriptor.free``)."""
        return self.usd_per_million == 0

    @property
    def cost_split(self) -> tuple[float, float]:
        """Dollars per million judgments for the images and for the text."""
        cost = self.summary.cost
        return (cost.image_usd_per_million, cost.text_usd_per_million)


class Comparison(NamedTuple):
    """Two cells of one dataset compared on the items both answered
    (:func:`mmjudge.metrics.scoring.compare_judges`; on a dataset scored on a race's asked
    grades, :func:`mmjudge.studies.asked_agreement.paired_difference`)."""

    a: Cell
    b: Cell
    paired: scoring.PairedComparison

    @property
    def difference(self) -> float:
        return self.paired.difference

    @property
    def low(self) -> float:
        return self.paired.low

    @property
    def high(self) -> float:
        return self.paired.high

    @property
    def p_value(self) -> float:
        return self.paired.p_value

    @property
    def kappa_a(self) -> float:
        return self.paired.kappa_a

    @property
    def kappa_b(self) -> float:
        return self.paired.kappa_b

    @property
    def n_items(self) -> int:
        return self.paired.n_items

    @property
    def distinguishable(self) -> bool:
        return self.paired.distinguishable


@dataclass
class DatasetStats:
    """Everything the report says about one dataset."""

    name: str
    grades: list[float]
    meanings: dict[str, str]
    items: DatasetItems
    relevant_from: float | None
    """Lowest relevant grade from the dataset's config (``None``: the scale's default)."""
    cells: list[Cell]
    """Completed judges' cells (real runs), best κ first."""
    ensembles: list[Cell] = field(default_factory=list)
    """Panels and cascades built from the judges' saved records, best κ first."""
    human_pairs: list[HumanPair] = field(default_factory=list)
    best_vs_others: list[Comparison] = field(default_factory=list)
    """The best cell against every other cell with a κ, in rank order."""
    frontier_steps: list[Comparison] = field(default_factory=list)
    """Each frontier cell (but the cheapest) against the next cheaper frontier cell."""
    modality_effects: list[Comparison] = field(default_factory=list)
    """Image + text and image only against text only, per model and prompt."""
    ensemble_vs_best: list[Comparison] = field(default_factory=list)
    """Each ensemble on the frontier of judges and ensembles against the best judge."""
    race: RaceVerdict | None = None
    """The race whose folder holds the dataset's judges, when one does (``mmjudge race``)."""
    asked: AskedScores | None = None
    """On a dataset without grades of its own, the grades a race over it asked for
    (``race.labels=ask``): every cell's κ and comparison comes from them, weighted 1/π;
    None where the cells are scored against the dataset's consensus."""

    @property
    def ceiling(self) -> tuple[float, float] | None:
        """Lowest and highest pairwise human κ, or None without two annotators."""
        values = [p.kappa.estimate for p in self.human_pairs if p.kappa.known]
        return (min(values), max(values)) if values else None

    @property
    def alpha_humans(self) -> float:
        """Krippendorff's α (ordinal) among all the annotators, on every item."""
        humans = self.items.humans
        if len(humans) < 2:
            return math.nan
        return metrics.krippendorff_alpha(np.vstack([humans[n] for n in humans]), "ordinal")

    @property
    def ranked(self) -> list[Cell]:
        return [c for c in self.cells if c.kappa.known]

    @property
    def frontier_cells(self) -> list[Cell]:
        return sorted(
            (c for c in self.cells if c.frontier), key=lambda c: (c.usd_per_million, -c.kappa[0])
        )

    @property
    def ensemble_frontier(self) -> list[Cell]:
        """Ensembles that no judge or other ensemble matches or beats at their price."""
        return sorted(
            (c for c in self.ensembles if c.frontier),
            key=lambda c: (c.usd_per_million, -c.kappa[0]),
        )


class AverageCell(NamedTuple):
    """A judge averaged over the datasets it ran on."""

    judge: Judge
    datasets: list[str]
    kappa: Interval
    """Mean κ; the interval is a normal approximation from the per-dataset intervals."""
    usd_per_million: float
    frontier: bool


class Unfinished(NamedTuple):
    """A cell whose run failed or was stopped, so its judgments are not analysed."""

    dataset: str
    judge: Judge
    status: str
    reason: str


@dataclass
class Analysis:
    datasets: list[DatasetStats]
    averages: list[AverageCell]
    with_prompt: bool
    """True when the cells use more than one prompt (judge names then include it)."""
    n_boot: int
    ignored_runs: list[str]
    """Older runs of a cell that a newer run of the same cell replaced."""
    sweeps: list[str] = field(default_factory=list)
    """The sweep folders the report is built from, in the order given."""
    palette: Palette = field(default_factory=Palette)
    """Each judge model's family and colour, the same in every figure."""
    not_analysed: list[Unfinished] = field(default_factory=list)
    """Cells that failed or were stopped (and never completed in another run): left out of
    every number and answer, and named where an answer is missing because of them."""

    def judge_name(self, judge: Judge) -> str:
        return judge.name(self.with_prompt)

    @property
    def asked_lines(self) -> dict[str, str]:
        """Each dataset scored on the grades a race asked for, with how they were drawn
        (:meth:`~mmjudge.studies.asked_agreement.AskedDraw.line`): what the page says where
        it shows their κ."""
        return {d.name: d.asked.line for d in self.datasets if d.asked is not None}

    @property
    def average_frontier(self) -> list[AverageCell]:
        return sorted(
            (a for a in self.averages if a.frontier),
            key=lambda a: (a.usd_per_million, -a.kappa.estimate),
        )


# --------------------------------------------------------------------------- statistics


def cell_score(
    items: DatasetItems,
    labels: CellLabels,
    grades: Sequence[float],
    relevant_from: float | None,
    n_boot: int,
) -> JudgeScore:
    """The cell's judge against the consensus, on the items it graded."""
    return scoring.score_judge(
        items.query_rank[labels.items],
        items.consensus[labels.items],
        labels.label,
        grades,
        relevant_from=relevant_from,
        n_boot=n_boot,
    )


def compare(
    items: DatasetItems, grades: Sequence[float], a: Cell, b: Cell, n_boot: int
) -> Comparison | None:
    """Paired comparison of two cells of one dataset on the items both answered."""
    if a.labels is None or b.labels is None:
        return None
    common, ia, ib = np.intersect1d(
        a.labels.items, b.labels.items, assume_unique=True, return_indices=True
    )
    paired = scoring.compare_judges(
        items.query_rank[common],
        items.consensus[common],
        a.labels.label[ia],
        b.labels.label[ib],
        grades,
        n_boot=n_boot,
    )
    return None if paired is None else Comparison(a, b, paired)


def averages(datasets: list[DatasetStats]) -> list[AverageCell]:
    """Each judge's mean κ and mean cost over the datasets where it has a κ."""
    by_judge: dict[Judge, list[tuple[str, Cell]]] = {}
    for stats in datasets:
        for cell in stats.ranked:
            by_judge.setdefault(cell.judge, []).append((stats.name, cell))
    rows = []
    for judge, entries in sorted(by_judge.items()):
        rows.append(
            (
                judge,
                [name for name, _ in entries],
                mean_interval([cell.kappa for _, cell in entries]),
                float(np.mean([cell.usd_per_million for _, cell in entries])),
            )
        )
    flags = pareto_frontier([r[3] for r in rows], [r[2].estimate for r in rows])
    return [AverageCell(*row, frontier=flag) for row, flag in zip(rows, flags, strict=True)]


# --------------------------------------------------------------------------- whole sweep


def unfinished_cells(cells: pd.DataFrame, done: pd.DataFrame) -> list[Unfinished]:
    """Judged cells that failed or were stopped and have no completed run beside them."""
    key = ["dataset", "model", "modality", "prompt_id"]
    finished = {tuple(row) for row in done[key].itertuples(index=False)} if len(done) else set()
    out = []
    for _, row in cells.sort_values(key).iterrows():
        status = str(row["status"])
        if status in ANALYSED or status in (SKIPPED, DRY_RUN) or row["kind"] != "single":
            continue
        if tuple(row[k] for k in key) in finished:
            continue
        judge = Judge(str(row["model"]), str(row["modality"]), str(row["prompt_id"]))
        reason = str(row.get("status_reason") or row.get("skip_reason") or "")
        out.append(Unfinished(str(row["dataset"]), judge, status, reason))
    return out


def load_labels(stats: DatasetStats, cell: Cell) -> CellLabels:
    """The cell's labels, read on first use (ensembles are read only when compared); a
    trained judge's without the items it learnt from, as its run scored it."""
    if cell.labels is None:
        labels = read_cell_labels(judgments_path(cell.run_dir), stats.items)
        trained = cell.summary.trained_on
        if trained is not None and trained.items:
            labels = without_items(labels, stats.items, trained.items)
        cell.labels = labels
    return cell.labels


def score_cell(stats: DatasetStats, cell: Cell, n_boot: int) -> None:
    """Give the cell its score: from the asked grades where the dataset is scored on them
    (:attr:`DatasetStats.asked`), else the one its run saved when the report would compute
    the same (same resamples, same items), else computed here with the same definition."""
    if stats.asked is not None:
        cell.score = stats.asked.score(cell.run_dir)
        cell.kappa = cell.score.kappa
        return
    score = saved_score(cell.summary, n_boot)
    if (
        cell.labels is not None
        and score is not None
        and n_scored(stats.items, cell.labels, stats.grades) != score.n_items
    ):
        score = None
    if score is None:
        labels = load_labels(stats, cell)
        score = cell_score(stats.items, labels, stats.grades, stats.relevant_from, n_boot)
    cell.score = score
    cell.kappa = score.kappa


def _new_cell(row: pd.Series, dataset: str) -> Cell:
    return Cell(
        dataset=dataset,
        judge=Judge(row["model"], row["modality"], row["prompt_id"]),
        run_id=str(row["run_id"]),
        summary=row["summary"],
        usd_per_million=float(row["usd_per_million"]),
        sweep=str(row.get("sweep") or ""),
        kind=str(row.get("kind") or "single"),
        run_dir=str(row["run_dir"]),
    )


def _rank(cells: list[Cell]) -> None:
    cells.sort(key=lambda c: (-c.kappa.estimate if c.kappa.known else math.inf, c.judge))


def _dataset_stats(dataset: str, group: pd.DataFrame, n_boot: int) -> DatasetStats:
    first = group.iloc[0]["summary"]
    grades, meanings, relevant_from = cell_scale(first)
    stats = DatasetStats(dataset, grades, meanings, DatasetItems(dataset), relevant_from, [])
    for _, row in group.iterrows():
        cell = _new_cell(row, dataset)
        if cell.ensemble:
            stats.ensembles.append(cell)
        else:
            load_labels(stats, cell)  # judges are all compared and browsed: read them now
            stats.cells.append(cell)
    stats.asked = asked_scores([cell.run_dir for cell in [*stats.cells, *stats.ensembles]])
    for cell in [*stats.cells, *stats.ensembles]:
        score_cell(stats, cell, n_boot)
    _rank(stats.cells)
    _rank(stats.ensembles)
    flags = pareto_frontier(
        [c.usd_per_million for c in stats.cells], [c.kappa.estimate for c in stats.cells]
    )
    for cell, flag in zip(stats.cells, flags, strict=True):
        cell.frontier = flag
    both = [*stats.cells, *stats.ensembles]
    flags = pareto_frontier([c.usd_per_million for c in both], [c.kappa.estimate for c in both])
    for cell, flag in zip(both[len(stats.cells) :], flags[len(stats.cells) :], strict=True):
        cell.frontier = flag
    stats.human_pairs = human_pairs(stats.items, grades, relevant_from, n_boot)
    _comparisons(stats, n_boot)
    stats.race = verdict_for_runs(cell.run_dir for cell in stats.cells)
    return stats


def analyse(cells: pd.DataFrame, *, n_boot: int = N_BOOT) -> Analysis:
    """Read every completed cell's labels and compute the report's statistics."""
    done, ignored = completed_cells(cells)
    datasets = [
        _dataset_stats(str(dataset), group, n_boot)
        for dataset, group in done.groupby("dataset", sort=True)
    ]
    judges = done[done["kind"] == "single"] if len(done) else done
    sweeps = list(dict.fromkeys(cells["sweep"])) if "sweep" in cells else []
    return Analysis(
        not_analysed=unfinished_cells(cells, done),
        datasets=datasets,
        averages=averages(datasets),
        with_prompt=judges["prompt_id"].nunique() > 1 if len(judges) else False,
        n_boot=n_boot,
        ignored_runs=ignored,
        sweeps=[str(s) for s in sweeps],
        palette=Palette.build(
            (c.judge.model, c.summary.cell.model_id, c.summary.cell.provider, c.free)
            for d in datasets
            for c in d.cells
        ),
    )


def _compare_cells(stats: DatasetStats, a: Cell, b: Cell, n_boot: int) -> Comparison | None:
    if stats.asked is not None:
        paired = stats.asked.compare(a.run_dir, b.run_dir)
        return None if paired is None else Comparison(a, b, paired)
    load_labels(stats, a)
    load_labels(stats, b)
    return compare(stats.items, stats.grades, a, b, n_boot)


def _comparisons(stats: DatasetStats, n_boot: int) -> None:
    """The paired comparisons the answers rest on: among judges, and each ensemble on the
    frontier against the best judge."""
    ranked = stats.ranked
    if ranked:
        best = ranked[0]
        for other in ranked[1:]:
            found = _compare_cells(stats, best, other, n_boot)
            if found is not None:
                stats.best_vs_others.append(found)
        for ensemble in stats.ensemble_frontier:
            found = _compare_cells(stats, ensemble, best, n_boot)
            if found is not None:
                stats.ensemble_vs_best.append(found)
    for cheaper, dearer in itertools.pairwise(stats.frontier_cells):
        found = _compare_cells(stats, dearer, cheaper, n_boot)
        if found is not None:
            stats.frontier_steps.append(found)
    by_model: dict[tuple[str, str], dict[str, Cell]] = {}
    for cell in stats.cells:
        by_model.setdefault((cell.judge.model, cell.judge.prompt_id), {})[cell.judge.modality] = (
            cell
        )
    for _, modalities in sorted(by_model.items()):
        text = modalities.get("text")
        if text is None:
            continue
        for modality in IMAGE_MODALITIES:
            seeing = modalities.get(modality)
            if seeing is None:
                continue
            found = _compare_cells(stats, seeing, text, n_boot)
            if found is not None:
                stats.modality_effects.append(found)
