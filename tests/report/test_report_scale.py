"""The report of a sweep of the size practitioners run: 10 models × 3 modalities × 3 prompts
× 3 datasets (270 cells) plus the panels and cascades the multirun builds from them, written
synthetically (few items per dataset, so it builds in seconds). Its figures must be readable
(no text overlaps another or leaves the image), judges and ensembles kept apart, and the page
small. The build time is measured by ``benchmarks/report_scale.py --grid``."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from mmjudge.report import build_report, figures, forest
from mmjudge.report.analysis import Analysis, Cell, analyse
from mmjudge.report.findings import MAX_POINTS, answers
from mmjudge.report.label_placement import collisions, text_boxes
from mmjudge.report.load import cell_table
from mmjudge.report.verdicts import baseline, recommended
from tests.fixtures.synthetic_grid import REALISTIC_MODELS, write_realistic_sweep

N_QUERIES = 4
pytestmark = pytest.mark.slow  # writes 648 runs before the first test


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("grid")
    sweep = write_realistic_sweep(
        base / "sweeps" / "grid", n_queries=N_QUERIES, dataset_root=base / "datasets"
    )
    return sweep.root


@pytest.fixture(scope="module")
def analysis(grid: Path) -> Analysis:
    return analyse(cell_table(grid), n_boot=200)


@pytest.fixture(scope="module")
def report(grid: Path) -> Path:
    return build_report(grid, grid.parent.parent / "reports", n_boot=200)


def test_the_grid_has_270_cells_and_its_ensembles(grid: Path, analysis: Analysis) -> None:
    cells = cell_table(grid)
    singles = cells[cells["kind"] == "single"]
    assert len(singles) == 10 * 3 * 3 * 3 == 270
    skipped = singles[singles["status"] == "skipped"]
    # lexical and llama3_70b read text only, clip only sees images
    assert len(skipped) == (2 * 2 + 1) * 3 * 3
    assert (cells["kind"] != "single").sum() > 300
    for stats in analysis.datasets:
        assert len(stats.cells) == 75 and len(stats.ensembles) > 100
        assert not any(figures.is_ensemble(c.judge.model) for c in stats.cells)
        families = {analysis.palette.family[c.judge.model] for c in stats.cells}
        assert families == {"OpenAI", "Anthropic", "Google", "Meta", "free (local)"}
        costs = sorted({c.usd_per_million for c in stats.cells})
        assert costs[0] == 0 and costs[-1] / costs[1] > 20  # free, and over a decade apart


@pytest.mark.parametrize(
    "draw",
    [
        figures.cost_figure,
        figures.ensemble_figure,
        forest.by_dataset_figure,
        forest.image_figure,
    ],
)
def test_no_text_overlaps_or_leaves_a_figure(analysis: Analysis, draw: object) -> None:
    fig = draw(analysis)  # type: ignore[operator]
    assert fig is not None
    assert collisions(fig) == []
    width, _ = fig.canvas.get_width_height()
    assert width == round(figures.WIDTH * figures.DPI) <= 1400


def test_the_cost_figure_labels_what_a_reader_needs(analysis: Analysis) -> None:
    fig = figures.cost_figure(analysis)
    fig.canvas.draw()
    texts = [text for text, _ in text_boxes(fig)]
    labels = [t for t in texts if t.endswith(")") and " · " in t]
    assert not any("panel" in t or "cascade" in t for t in texts)  # ensembles are elsewhere
    for stats in analysis.datasets:
        best, chosen, free = stats.ranked[0], recommended(stats), baseline(stats.cells)
        assert chosen is not None and free is not None
        role = "best" if best is not chosen else "best, recommended"

        def shown(cell: Cell, role: str) -> bool:
            # the modality joins model and prompt where they alone would repeat in the panel
            judge = cell.judge
            pattern = rf"{judge.model} · (\S[^·]* · )?{judge.prompt_id} \({role}\)"
            return any(re.fullmatch(pattern, t) for t in labels)

        assert shown(best, role)
        if chosen is not best:
            assert shown(chosen, "recommended")
        assert shown(free, "free baseline")
    # a label per labelled point at most: far fewer labels than points
    assert len([t for t in texts if " · " in t]) < 0.5 * sum(
        len(d.cells) for d in analysis.datasets
    )


def test_kappa_by_dataset_shows_the_best_judges_only(analysis: Analysis) -> None:
    shown, total = forest.shown_judges(analysis)
    assert total == 75 and len(shown) == forest.MAX_ROWS
    fig = forest.by_dataset_figure(analysis)
    assert fig.get_size_inches()[1] * figures.DPI < 1400  # fits a screen or two, not 1,900 px
    assert not any(figures.is_ensemble(j.model) for j in shown)


def test_answers_compare_judges_and_stay_short(analysis: Analysis) -> None:
    for answer in answers(analysis):
        text = " ".join(str(p) for p in [answer.lead, *answer.points])
        assert "panel:" not in text and "cascade:" not in text
        assert len(answer.points) <= MAX_POINTS + 2  # the "… and N more" line, the ceiling
    q3 = answers(analysis)[2]
    assert re.search(r"Of \d+ comparisons", str(q3.lead))


def test_the_page_is_small_and_leads_with_the_answer(report: Path) -> None:
    page = report / "index.html"
    html = page.read_text(encoding="utf-8")
    assert page.stat().st_size < 5 * 2**20
    assert html.index('class="card"') < html.index('id="chart"') < html.index('id="answers"')
    assert html.count('<section class="card"') == 3
    for name in ("captions", "docs", "fashion"):
        assert '<h3><a href="#dataset-' in html and f">{name}</a></h3>" in html
    # ensembles have their own section, figure and CSV
    section = html[html.index('id="ensembles"') : html.index('id="spend"')]
    assert "ensembles_vs_cost.png" in section and "reaches κ" in section
    with (report / "judges.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 * 75
    assert sum(r["recommended"] == "True" for r in rows) == 3
    assert {r["model"] for r in rows} == {m.name for m in REALISTIC_MODELS}
    with (report / "ensembles.csv").open(encoding="utf-8") as handle:
        assert len(list(csv.DictReader(handle))) > 300
