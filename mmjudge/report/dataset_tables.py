"""The report's per-dataset table: each judge's row (its measures against the consensus, its
labels, tokens, dollars and latency), the annotators' pairs scored the same way, and each judge's
confusion matrix. The measures are the catalogue's (:mod:`mmjudge.metrics.catalogue`): the
headline with its interval, then every other measure."""

from __future__ import annotations

from dataclasses import dataclass

from mmjudge.display import MISSING, percent, price
from mmjudge.metrics import catalogue
from mmjudge.metrics.catalogue import Measure
from mmjudge.metrics.scoring import LEVEL, JudgeScore
from mmjudge.report.analysis import MODALITY_NAMES, Analysis, Cell, DatasetStats, Interval
from mmjudge.report.findings.prose import dataset_anchor, interval, num
from mmjudge.report.tables import distribution, seconds, tokens


@dataclass(frozen=True)
class ScoreCells:
    """A score as the per-dataset table shows it, one cell per measure of the catalogue."""

    headline: str
    """The headline measure with its interval (``0.412 [0.301, 0.518]``)."""
    others: list[str]
    """Every other measure's value, in catalogue order."""
    n: str
    """The items they are on."""


@dataclass(frozen=True)
class MeasureColumns:
    """The per-dataset table's measure headers, and its row for a judge answering at random."""

    headline: str
    """The headline measure's header (``κ [95% CI]``)."""
    others: list[str]
    """The other measures' headers, in catalogue order."""
    named: str
    """The other measures named in a sentence (``κ linear, κ quadratic, α``)."""
    chance: ScoreCells
    """What chance gets on each measure (blank where it depends on the grades)."""


def _measure_cell(measure: Measure, value: Interval, with_interval: bool) -> str:
    if with_interval:
        return interval(value, measure.digits)
    return num(value.estimate, measure.digits)


def _score_cells(score: JudgeScore | None) -> ScoreCells:
    """The headline measure with its interval, the others' values and the items they are on
    (MISSING throughout for a cell that has no score)."""
    headline, others = _measures()
    if score is None:
        return ScoreCells(MISSING, [MISSING] * len(others), "0")
    return ScoreCells(
        headline=_measure_cell(headline, score[headline.name], True),
        others=[_measure_cell(m, score[m.name], False) for m in others],
        n=f"{score.n_items:,}",
    )


def _measures() -> tuple[Measure, list[Measure]]:
    """The headline measure and the others the table shows (every measure of the judge
    against the consensus)."""
    shown = catalogue.measures(catalogue.Comparison.CONSENSUS)
    headline = catalogue.measure(catalogue.HEADLINE)
    return headline, [m for m in shown if m is not headline]


def measure_columns() -> MeasureColumns:
    """The headers of the per-dataset table's measures and its chance row."""
    headline, others = _measures()

    def chance(measure: Measure) -> str:
        return "" if measure.chance is None else num(measure.chance, measure.digits)

    return MeasureColumns(
        headline=f"{headline.label} [{100 * LEVEL:g}% CI]",
        others=[m.label for m in others],
        named=", ".join(m.label for m in others),
        chance=ScoreCells(chance(headline), [chance(m) for m in others], ""),
    )


@dataclass(frozen=True)
class JudgeRow:
    """A judge's row of the per-dataset table."""

    rank: int | None
    """Its place by κ (None without a κ)."""
    dataset: str
    sweep: str
    model: str
    modality: str
    """The modality's name (``text only``)."""
    prompt: str
    scores: ScoreCells
    """Its measures against the consensus."""
    unparseable: str
    """The share of answers without a grade."""
    errors: str
    """Failed rows."""
    dist_judge: str
    """The judge's grades (``0:35% 1:40% 2:25%``)."""
    dist_consensus: str
    """The consensus grades on the same items."""
    input_tokens: str
    output_tokens: str
    image_tokens: str
    usd: str
    """Dollars per million judgments."""
    usd_image: str
    usd_text: str
    p50: str
    """Median latency, seconds."""
    p95: str
    frontier: bool
    """Whether it lies on the cost–κ frontier."""


@dataclass(frozen=True)
class HumanRow:
    """One annotator against another, scored like a judge: the ceiling."""

    pair: str
    """``a vs b``."""
    scores: ScoreCells
    dist_a: str
    """``a``'s grades on the items both graded."""
    dist_b: str


@dataclass(frozen=True)
class ConfusionCell:
    count: str
    shade: str
    """The cell's shading, by its share of its row."""
    diagonal: bool


@dataclass(frozen=True)
class ConfusionRow:
    grade: str
    """The consensus grade."""
    cells: list[ConfusionCell]
    """One per judge grade."""


@dataclass(frozen=True)
class Confusion:
    """Consensus grade (rows) × judge grade (columns) for one judge."""

    judge: str
    grades: list[str]
    rows: list[ConfusionRow]


@dataclass(frozen=True)
class DatasetTable:
    """The per-dataset section: its judges, its annotators' pairs and the confusion tables."""

    name: str
    anchor: str
    """The section's id on the page."""
    columns: MeasureColumns
    rows: list[JudgeRow]
    humans: list[HumanRow]
    meanings: dict[str, str]
    """What each grade means, where the dataset says."""
    n_items: int
    n_queries: int
    alpha_humans: str
    """Krippendorff's α among every annotator."""
    confusion: list[Confusion]
    """One per judge; none where the dataset has no grades of its own."""
    grades: str = ""
    """Where the κ come from the grades a race asked for, how they were drawn (the
    :meth:`~mmjudge.studies.asked_agreement.AskedDraw.line` sentence); empty where they are
    against the dataset's consensus."""


def judge_row(analysis: Analysis, stats: DatasetStats, cell: Cell, rank: int | None) -> JudgeRow:
    summary = cell.summary
    m = summary.metrics
    cost = summary.cost
    tok = summary.tokens
    latency = summary.latency_s
    dist = m.label_distribution or {}
    return JudgeRow(
        rank=rank,
        dataset=cell.dataset,
        sweep=cell.sweep,
        model=cell.judge.model,
        modality=MODALITY_NAMES.get(cell.judge.modality, cell.judge.modality),
        prompt=cell.judge.prompt_id,
        scores=_score_cells(cell.score),
        unparseable=percent(m.unparseable_rate),
        errors=f"{summary.n_errors:,}",
        dist_judge=distribution(dist.get("judge")),
        dist_consensus=distribution(dist.get("consensus")),
        input_tokens=tokens(tok.mean_input),
        output_tokens=tokens(tok.mean_output),
        image_tokens=tokens(tok.mean_image),
        usd=price(cost.usd_per_million),
        usd_image=price(cost.image_usd_per_million),
        usd_text=price(cost.text_usd_per_million),
        p50=seconds(latency.p50),
        p95=seconds(latency.p95),
        frontier=cell.frontier,
    )


def dataset_tables(analysis: Analysis) -> list[DatasetTable]:
    columns = measure_columns()
    out = []
    for index, stats in enumerate(analysis.datasets):
        rows = []
        for rank, cell in enumerate(stats.cells, start=1):
            rows.append(judge_row(analysis, stats, cell, rank if cell.kappa.known else None))
        humans = [
            HumanRow(
                pair=f"{p.a} vs {p.b}",
                scores=_score_cells(p.score),
                dist_a=f"{p.a} {distribution(p.distribution_a)}",
                dist_b=f"{p.b} {distribution(p.distribution_b)}",
            )
            for p in stats.human_pairs
        ]
        out.append(
            DatasetTable(
                name=stats.name,
                anchor=dataset_anchor(index, stats.name),
                columns=columns,
                rows=rows,
                humans=humans,
                meanings=stats.meanings,
                n_items=stats.items.n,
                n_queries=len(stats.items.query_codes),
                alpha_humans=num(stats.alpha_humans, 3),
                confusion=[]
                if stats.asked is not None
                else [confusion(analysis, stats, cell) for cell in stats.cells],
                grades=stats.asked.line if stats.asked is not None else "",
            )
        )
    return out


def confusion(analysis: Analysis, stats: DatasetStats, cell: Cell) -> Confusion:
    """Consensus grade (rows) × judge grade (columns), shaded by the share of each row."""
    m = cell.summary.metrics
    grades = [str(g) for g in m.grades] if m.grades else [num(g, 0) for g in stats.grades]
    matrix = m.confusion_matrix or []
    rows = []
    for i, (grade, counts) in enumerate(zip(grades, matrix, strict=False)):
        total = sum(counts) or 1
        rows.append(
            ConfusionRow(
                grade=grade,
                cells=[
                    ConfusionCell(
                        count=f"{c:,}",
                        shade=f"{0.08 + 0.6 * c / total:.2f}" if c else "0",
                        diagonal=i == j,
                    )
                    for j, c in enumerate(counts)
                ],
            )
        )
    return Confusion(judge=analysis.judge_name(cell.judge), grades=grades, rows=rows)
