"""The report's card says how many more human labels would tell the best judge from the
runner-up, with the numbers mmjudge.agreement.planning gives for the paired comparison."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from mmjudge.agreement import planning
from mmjudge.report import cards
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

N_BOOT = 200


def _text(markup: object) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", str(markup)))


@pytest.mark.parametrize(("accuracies", "separated"), [((0.8, 0.78), False), ((0.9, 0.4), True)])
def test_card_counts_the_labels_to_separate_the_best_two(
    tmp_path: Path, accuracies: tuple[float, float], separated: bool
) -> None:
    root = tmp_path / "sweeps" / "s"
    judges = [
        FakeJudge("big", accuracy=accuracies[0], usd_per_judgment=0.001),
        FakeJudge("small", accuracy=accuracies[1], usd_per_judgment=0.0001),
    ]
    write_sweep(root, [FakeDataset("shop", n_queries=20, images=0)], judges)
    analysis = analyse(cell_table(root), n_boot=N_BOOT)
    (card,) = cards.cards(analysis)
    (stats,) = analysis.datasets
    comparison = stats.best_vs_others[0]
    found = planning.plan_separation("a", "b", comparison.paired)
    assert found is not None and found.separated is separated
    text = _text(card.labels)
    if separated:
        assert "already tell" in text
    else:
        more = planning.extra_labels(found.needed, found.n_items)
        assert f"you need about {more:,.0f} more labelled items" in text
        assert f"≈{math.ceil(found.needed):,} in all" in text
