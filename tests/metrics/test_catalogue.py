"""The measure catalogue: registration, and what every measure must honour whatever it is —
its declared range, its direction, its chance value and its row in the docs."""

from __future__ import annotations

import math
import pkgutil

import numpy as np
import pytest

import mmjudge.metrics.measures
from mmjudge.metrics import catalogue, scoring
from mmjudge.metrics.catalogue import Comparison, Measure, ScoringScale
from tests.helpers import REPO_ROOT
from tests.metrics.measure_docs import AGREEMENT_DOC, docs_row, table_rows

SCALE = ScoringScale((0.0, 1.0, 2.0, 3.0), 2.0)


def constant(_: ScoringScale):  # a statistic that is always one half
    return lambda reference, judge: 0.5


def test_the_catalogue_in_order_headline_first() -> None:
    names = [m.name for m in catalogue.measures()]
    assert names == [
        "kappa",
        "kappa_linear",
        "kappa_quadratic",
        "kappa_binary",
        "alpha",
        "accuracy",
        "mae",
    ]
    assert names[0] == catalogue.HEADLINE
    assert [m.name for m in catalogue.measures(Comparison.POOLED)] == ["alpha"]
    assert [m.name for m in catalogue.measures(Comparison.HUMAN_HUMAN)] == ["kappa"]


def test_every_module_of_the_package_registers_one_measure() -> None:
    modules = [m.name for m in pkgutil.iter_modules(mmjudge.metrics.measures.__path__)]
    assert len(modules) == len(catalogue.measures())
    for name in modules:
        module = __import__(f"mmjudge.metrics.measures.{name}", fromlist=["_"])
        declared = [v for v in vars(module).values() if isinstance(v, Measure)]
        assert len(declared) == 1 and catalogue.measure(declared[0].name) is declared[0]


def test_a_name_or_a_key_is_taken_once() -> None:
    with pytest.raises(ValueError, match="already taken"):
        catalogue.register(Measure("kappa", "κ", "again", constant, order=1))
    # a name that is the summary.json key of another measure's figure against each assessor
    clash = Measure("kappa_by_annotator", "x", "x", constant, order=1)
    with pytest.raises(ValueError, match="already taken"):
        catalogue.register(clash)
    with pytest.raises(ValueError, match="taken by the metrics block"):
        Measure("n_scored", "n", "items", constant, order=1)
    with pytest.raises(ValueError, match="needs `raters`"):
        Measure("x", "x", "x", constant, order=1, compares=frozenset({Comparison.POOLED}))
    with pytest.raises(ValueError, match="identifier"):
        Measure("two words", "x", "x", constant, order=1)
    with pytest.raises(KeyError, match="the catalogue has accuracy, alpha"):
        catalogue.measure("precision")


def test_a_measure_registered_for_a_block_is_gone_after_it() -> None:
    half = Measure("half", "½", "always one half", constant, order=1)
    with catalogue.registered(half):
        assert catalogue.measures()[0] is half  # order 1 puts it first
        score = scoring.score_judge([0, 0], [1, 2], [1, 1], [0, 1, 2], n_boot=0)
        assert score["half"].estimate == 0.5 and score.half == 0.5
    assert "half" not in [m.name for m in catalogue.measures()]
    with pytest.raises(AttributeError):
        _ = score.nothing


# --------------------------------------------------------------------------- every measure


def random_labels(rng: np.random.Generator, n: int) -> np.ndarray:
    labels = rng.integers(0, 4, n).astype(float)
    labels[rng.random(n) < 0.05] = np.nan
    return labels


@pytest.mark.parametrize("measure", catalogue.measures(), ids=lambda m: m.name)
def test_values_stay_in_the_declared_range(measure: Measure) -> None:
    rng = np.random.default_rng(1)
    statistic = measure.statistic(SCALE)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        reference = random_labels(rng, n)
        judge = np.where(rng.random(n) < 0.4, reference, random_labels(rng, n))
        value = statistic(reference, judge)
        assert measure.within_range(value), (reference, judge, value)
        if measure.raters is not None:
            matrix = np.vstack([random_labels(rng, n) for _ in range(int(rng.integers(2, 5)))])
            assert measure.within_range(measure.raters(SCALE)(matrix))


@pytest.mark.parametrize("measure", catalogue.measures(), ids=lambda m: m.name)
def test_a_perfect_judge_beats_a_random_one_in_the_declared_direction(measure: Measure) -> None:
    rng = np.random.default_rng(2)
    reference = rng.integers(0, 4, 2000).astype(float)
    random = rng.integers(0, 4, 2000).astype(float)
    statistic = measure.statistic(SCALE)
    perfect, chance = statistic(reference, reference.copy()), statistic(reference, random)
    assert (perfect > chance) if measure.higher_is_better else (perfect < chance)


@pytest.mark.parametrize(
    "measure", [m for m in catalogue.measures() if m.chance is not None], ids=lambda m: m.name
)
def test_a_random_judge_scores_chance(measure: Measure) -> None:
    rng = np.random.default_rng(3)
    reference = rng.integers(0, 4, 20_000).astype(float)
    random = rng.integers(0, 4, 20_000).astype(float)
    assert measure.statistic(SCALE)(reference, random) == pytest.approx(measure.chance, abs=0.03)


def test_the_docs_list_every_measure_as_declared() -> None:
    text = (REPO_ROOT / AGREEMENT_DOC).read_text(encoding="utf-8")
    expected = [docs_row(m) for m in catalogue.measures()]
    found = table_rows(text)
    missing = [row for row in expected if row not in found]
    assert not missing, f"{AGREEMENT_DOC}, table of measures: add or update\n" + "\n".join(missing)
    assert found == expected, f"{AGREEMENT_DOC}: one row per measure, in catalogue order"


def test_the_judge_against_each_assessor_is_the_measure_on_their_labels() -> None:
    rng = np.random.default_rng(4)
    humans = {name: rng.integers(0, 4, 60).astype(float) for name in ("ann", "bob")}
    judge = rng.integers(0, 4, 60).astype(float)
    summary = scoring.agreement_summary(judge, humans, grades=[0, 1, 2, 3])
    for m in catalogue.measures(Comparison.EACH_ASSESSOR):
        by_annotator = summary.by_rater[Comparison.EACH_ASSESSOR.key(m.name)]
        assert by_annotator["bob"] == m.statistic(SCALE)(humans["bob"], judge)
        pairs = summary.by_rater[Comparison.HUMAN_HUMAN.key(m.name)]
        assert pairs == {"ann vs bob": m.statistic(SCALE)(humans["ann"], humans["bob"])}
    assert math.isnan(scoring.score_judge([], [], [], [0, 1], n_boot=0).estimate("mae"))


def test_a_measure_between_assessors_only_stays_out_of_the_judges_figures() -> None:
    ceiling_only = Measure(
        "agreeing",
        "agreeing",
        "share graded the same",
        lambda _: lambda a, b: float(np.mean(a == b)),
        order=99,
        compares=frozenset({Comparison.HUMAN_HUMAN}),
    )
    humans = {"ann": [0, 1, 1, 0], "bob": [0, 1, 0, 0]}
    with catalogue.registered(ceiling_only):
        summary = scoring.agreement_summary([0, 1, 1, 1], humans, grades=[0, 1])
        score = scoring.score_judge([0] * 4, [0, 1, 1, 0], [0, 1, 1, 1], [0, 1], n_boot=0)
    assert summary.by_rater["human_human_agreeing"] == {"ann vs bob": 0.75}
    assert "agreeing" not in summary.values and "agreeing" not in score.values
