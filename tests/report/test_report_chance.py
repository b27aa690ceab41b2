"""The report never recommends, or calls best, a judge that may be no better than chance, and
every view of κ shows chance (κ 0) beside the human–human κ."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from matplotlib.lines import Line2D

from mmjudge.report import build_report, cards, figures, forest, interactive
from mmjudge.report.analysis import Analysis, analyse
from mmjudge.report.findings import answers
from mmjudge.report.findings.prose import interval
from mmjudge.report.load import cell_table
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

N_BOOT = 200
#: 490 items, like the 489 of TREC DL 2019 passages in the case this reproduces.
TREC = FakeDataset("trec_dl_2019", n_queries=49, images=0)
#: Right less often than a coin over three grades: κ about −0.06 [−0.10, −0.00].
AT_RANDOM = FakeJudge("gpt4o_mini", accuracy=0.3, usd_per_judgment=0.0001)


def _text(markup: object) -> str:
    text = re.sub(r"<[^>]+>", " ", str(markup))
    text = text.replace("&amp;", "&").replace("&#39;", "'").replace("&lt;", "<")
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def chance_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chance") / "sweeps" / "trec"
    write_sweep(root, [TREC], [AT_RANDOM])
    return root


@pytest.fixture(scope="module")
def chance(chance_sweep: Path) -> Analysis:
    return analyse(cell_table(chance_sweep), n_boot=N_BOOT)


@pytest.fixture(scope="module")
def chance_page(chance_sweep: Path) -> str:
    out = build_report(chance_sweep, chance_sweep.parent.parent / "reports", n_boot=N_BOOT)
    return (out / "index.html").read_text(encoding="utf-8")


def _answer_section(page: str) -> str:
    return page[page.index('<h2 id="answer">') : page.index('<h2 id="chart">')]


def test_the_case_is_a_judge_no_better_than_chance(chance: Analysis) -> None:
    (stats,) = chance.datasets
    (cell,) = stats.ranked
    assert cell.kappa.high < 0.05 and cell.kappa.low < 0 and not cell.kappa.above_chance


def test_a_judge_answering_at_random_is_not_recommended(chance: Analysis, chance_page: str) -> None:
    from mmjudge.report.verdicts import recommended

    (stats,) = chance.datasets
    assert recommended(stats) is None
    (card,) = cards.cards(chance)
    assert card.recommended is None and card.best_title == "Highest κ"
    shown = _text(_answer_section(chance_page))
    assert "Recommended" not in shown
    assert "No judge on this dataset agrees with people better than chance" in shown
    # the best κ with its interval, and chance and the humans on the same line
    best = interval(stats.ranked[0].kappa)
    assert f"gpt4o_mini · text only — κ {best}" in shown
    assert stats.ceiling is not None
    assert f"chance 0 · highest judge {best} · humans {stats.ceiling[0]:.2f}" in shown


def test_the_answers_call_no_judge_best_at_chance(chance: Analysis) -> None:
    _, q2, _, q4 = answers(chance)
    words = _text(" ".join(str(p) for p in [q2.lead, *q2.points]))
    assert "better than chance" in words
    assert "is best" not in words and "the best judge is" not in words
    frontier = _text(" ".join(str(p) for p in [q4.lead, *q4.points]))
    assert "recommends nothing" in frontier and "not above chance" in frontier


def test_the_cost_figure_labels_no_judge_best_or_recommended_at_chance(chance: Analysis) -> None:
    fig = figures.cost_figure(chance)
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert labels and not any("best" in t or "recommended" in t for t in labels)
    assert any("highest κ" in t for t in labels)


def _horizontal_at(ax: object, value: float) -> bool:
    return any(
        isinstance(line, Line2D) and list(line.get_ydata()) == [value, value]
        for line in ax.get_lines()  # type: ignore[attr-defined]
    )


def _vertical_at(ax: object, value: float) -> bool:
    return any(
        isinstance(line, Line2D) and list(line.get_xdata()) == [value, value]
        for line in ax.get_lines()  # type: ignore[attr-defined]
    )


def _legend_texts(fig: object) -> list[str]:
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]  # type: ignore[attr-defined]


@pytest.mark.slow  # over a second
def test_kappa_figures_draw_chance_beside_the_human_ceiling(chance: Analysis) -> None:
    (stats,) = chance.datasets
    assert stats.ceiling is not None
    low, high = stats.ceiling
    fig = figures.cost_figure(chance)
    (ax,) = fig.axes
    assert _horizontal_at(ax, 0.0) and _horizontal_at(ax, low)
    bottom, top = ax.get_ylim()
    assert bottom < 0.0 and top > high
    assert any("chance" in t for t in _legend_texts(fig))
    fig = forest.by_dataset_figure(chance)
    ax = fig.axes[0]
    assert _vertical_at(ax, 0.0) and _vertical_at(ax, low)
    assert any("chance" in t for t in _legend_texts(fig))


def test_the_chance_line_is_on_the_axis_even_when_every_judge_is_far_above_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sweeps" / "good"
    write_sweep(
        root,
        [FakeDataset("shop", n_queries=20, images=0)],
        [
            FakeJudge("strong", accuracy=0.95),
            FakeJudge("dear", accuracy=0.9, usd_per_judgment=1e-3),
        ],
    )
    good = analyse(cell_table(root), n_boot=N_BOOT)
    assert all(c.kappa.low > 0.5 for c in good.datasets[0].ranked)
    (ax,) = figures.cost_figure(good).axes
    assert ax.get_ylim()[0] < 0.0 and _horizontal_at(ax, 0.0)
    (card,) = cards.cards(good)
    assert card.recommended is not None and card.verdict is None and card.best_title == "Best"


def test_the_interactive_chart_has_rules_at_chance_and_the_ceiling(chance: Analysis) -> None:
    spec = interactive.chart_spec(chance)
    assert spec is not None
    (stats,) = chance.datasets
    assert stats.ceiling is not None
    rows = [row for layer in spec["layer"] for row in layer.get("data", {}).get("values", [])]
    lines = {(r.get("line"), r["kappa"]) for r in rows if "line" in r}
    assert (interactive.CHANCE_LINE, 0.0) in lines
    assert (interactive.HUMAN_LINE, stats.ceiling[0]) in lines


def test_the_tables_show_chance_beside_the_humans(chance_page: str) -> None:
    shown = _text(chance_page)
    assert "chance (a judge answering at random)" in shown  # κ by dataset
    assert "chance: a judge answering at random" in shown  # the dataset's own table
    assert "not above chance (interval reaches 0); humans" in shown  # the frontier table


def test_the_judges_csv_marks_no_judge_best_or_recommended_at_chance(
    chance_sweep: Path, chance_page: str
) -> None:
    path = chance_sweep.parent.parent / "reports" / chance_sweep.name / "judges.csv"
    (row,) = list(csv.DictReader(path.open(encoding="utf-8")))
    assert (row["above_chance"], row["best"], row["recommended"]) == ("False", "False", "False")


@pytest.mark.slow  # over half a second
def test_every_other_kappa_table_sets_chance_and_humans_beside_it(tmp_path: Path) -> None:
    from mmjudge.ensembles.defaults import build_default_ensembles

    root = tmp_path / "sweeps" / "vision"
    judges = [
        FakeJudge("vision", accuracy=0.6, usd_per_judgment=0.001),
        FakeJudge("vision", modality="mm", accuracy=0.8, usd_per_judgment=0.002),
        FakeJudge("vision", prompt_id="terse", accuracy=0.7, usd_per_judgment=0.001),
    ]
    write_sweep(root, [FakeDataset("shop", n_queries=12, images=2)], judges)
    build_default_ensembles(root)
    page = (build_report(root, tmp_path / "reports", n_boot=50) / "index.html").read_text()
    for start, end in (('id="image-vs-text"', 'id="frontier"'), ('id="ensembles"', 'id="spend"')):
        section = page[page.index(start) : page.index(end)]
        assert "chance and humans" in section
        assert re.search(r"chance 0\.00 · humans \d\.\d\d", section), start
