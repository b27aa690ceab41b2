"""Every labelled point in a figure's panel reads differently from the others: where two
judges of one model and prompt differ only by modality (or prompt, or sweep), the label
says so."""

from __future__ import annotations

import re

import pytest

from mmjudge.report import figures
from mmjudge.report.analysis import Analysis, Judge, analyse
from mmjudge.report.load import cell_table
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

#: gpt5_mini with the "aspects" prompt, text only (cheaper) and image + text (better): both
#: on the frontier of one panel, as in the 270-cell grid where its label appeared twice.
JUDGES = [
    FakeJudge("gpt5_mini", prompt_id="aspects", accuracy=0.7, usd_per_judgment=0.0002),
    FakeJudge(
        "gpt5_mini", modality="mm", prompt_id="aspects", accuracy=0.9, usd_per_judgment=0.0006
    ),
    FakeJudge("free", prompt_id="default", accuracy=0.4),
]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    root = tmp_path_factory.mktemp("labels") / "sweeps" / "grid"
    write_sweep(root, [FakeDataset("shop", n_queries=20, images=0)], JUDGES)
    return analyse(cell_table(root), n_boot=100)


def _base(label: str) -> str:
    """A label without its role in brackets."""
    return re.sub(r" \([^)]*\)$", "", label)


def test_the_case_puts_both_modalities_on_the_frontier(analysis: Analysis) -> None:
    (stats,) = analysis.datasets
    front = {(c.judge.model, c.judge.modality) for c in stats.frontier_cells}
    assert {("gpt5_mini", "text"), ("gpt5_mini", "mm")} <= front


def test_cost_figure_labels_are_unique_within_a_panel(analysis: Analysis) -> None:
    fig = figures.cost_figure(analysis)
    for ax in fig.axes:
        labels = [_base(t.get_text()) for t in ax.texts]
        assert len(labels) == len(set(labels)), labels
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(t.startswith("gpt5_mini · text only · aspects") for t in texts)
    assert any(t.startswith("gpt5_mini · image + text · aspects") for t in texts)
    # a label that repeats nothing stays short
    assert any(t.startswith("free · default") for t in texts)


def test_labels_grow_only_as_far_as_they_must() -> None:
    from mmjudge.report.figures import Named, distinct_labels

    same = Judge("m", "text", "p")
    names = distinct_labels(
        [
            Named(same, "sweep_a", "best"),
            Named(same, "sweep_b"),
            Named(Judge("m", "mm", "p")),
            Named(Judge("n", "text", "p")),
        ],
        with_prompt=False,
    )
    assert names == [
        "m · text only · p · sweep_a (best)",
        "m · text only · p · sweep_b",
        "m · image + text",
        "n",
    ]
    assert len(set(names)) == len(names)
