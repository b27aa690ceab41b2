"""The race, the report's card and ``mmjudge frontier`` answer one question the same way: on a
race's folder, the race's choice is the recommendation when the race decided, and where they
can still differ the card and the frontier say why in one line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from mmjudge.config.race import RaceConfig
from mmjudge.grid.race import RaceCell, RaceResult
from mmjudge.grid.race_start import taken_up, write_race
from mmjudge.grid.simulation import simulate_race
from mmjudge.report import cards
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from mmjudge.report.verdicts import raced, recommended
from mmjudge.store import completed_runs
from mmjudge.studies.frontier import frontier_answer
from mmjudge.studies.race_rule import race_order
from mmjudge.studies.race_verdict import race_note, race_verdict, verdict_for_runs
from tests.fake_runs import make_run

GRADES = (0, 1, 2)
N_BOOT = 200
#: Three judges of a demo-sized dataset: name, model, chance of the right grade, dollars per
#: judgment.
JUDGES = (
    ("careful", "big", 0.85, 0.004),
    ("hasty", "mid", 0.7, 0.001),
    ("coin", "tiny", 0.0, 0.0002),
)


class Raced(NamedTuple):
    folder: Path
    rule: RaceConfig


def race_folder(root: Path, seed: int, rule: RaceConfig) -> Raced:
    """A 60-item dataset raced by :func:`simulate_race` and written as a race leaves its
    folder: each cell's run holds the items it judged, and ``race.json`` the rounds."""
    rng = np.random.default_rng(seed)
    keys = [(f"q{q:02d}", f"d{d}") for q in range(12) for d in range(5)]
    truth = rng.integers(0, 3, len(keys))
    human = {key: {"x": int(g)} for key, g in zip(keys, truth, strict=True)}
    order = race_order(seed, [k[0] for k in keys], [k[1] for k in keys])
    grades = []
    for _, _, right, _ in JUDGES:
        noise = rng.integers(0, 3, len(keys))
        grades.append(np.where(rng.random(len(keys)) < right, truth, noise).astype(float))
    prices = [price for *_, price in JUDGES]
    names = tuple(f"toy × {model} × text" for _, model, _, _ in JUDGES)
    out = simulate_race(truth.astype(float), grades, prices, order, rule, names=names)
    folder = root / f"race{seed}"
    cells = []
    for index, ((name, model, _, price), labels) in enumerate(zip(JUDGES, grades, strict=True)):
        judged = {keys[i]: int(labels[i]) for i in order[: out.prefixes[index]]}
        make_run(folder, name, judged, human, model=model, cost=price, grades=GRADES)
        cells.append(RaceCell(index, names[index], (), folder / name, price, price * len(keys)))
    result = RaceResult(folder, cells, len(keys), rule, seed, list(out.rounds), outcome=out)
    write_race(result)
    return Raced(folder, rule)


@pytest.mark.slow  # the report's analysis of ten folders, bootstrap and all
def test_on_a_60_item_dataset_the_card_and_the_frontier_take_the_race_or_say_why(
    tmp_path: Path,
) -> None:
    seen = {"decided": 0, "explained": 0}
    for seed in range(10):
        raced_folder = race_folder(tmp_path, seed, RaceConfig())  # round_items 200: rounds of 25
        verdict = race_verdict(raced_folder.folder)
        assert verdict is not None and verdict.chosen is not None
        analysis = analyse(cell_table(raced_folder.folder), n_boot=N_BOOT)
        (stats,) = analysis.datasets
        (card,) = cards.cards(analysis)
        chosen = raced(stats)
        assert chosen is not None
        pick = recommended(stats)
        (answer,) = frontier_answer(completed_runs(raced_folder.folder), n_boot=N_BOOT)
        if verdict.decided and chosen.kappa.above_chance:
            seen["decided"] += 1
            assert pick is chosen and card.race_note is None
            assert "Chosen by the race" in str(card.why)
            assert answer.answer.run_dir == str(verdict.chosen_run)
            assert answer.race.decided and answer.race.note is None
        elif pick is not chosen:
            seen["explained"] += 1
            note = str(card.race_note)
            assert note.startswith(f"The race chose {verdict.chosen}") and note.count(". ") <= 3
            assert answer.race.note is not None
    assert seen["decided"] > 0, seen


def test_a_race_that_did_not_settle_says_why_its_choice_is_not_the_recommendation(
    tmp_path: Path,
) -> None:
    raced_folder = race_folder(tmp_path, 3, RaceConfig())
    verdict = race_verdict(raced_folder.folder)
    assert verdict is not None
    unsettled = verdict._replace(
        decided=False,
        ending="items ran out",
        unseparated=(
            "cannot separate A from B at this size (…); about 120 more labelled items would",
        ),
    )
    note = race_note(unsettled, agrees=False, chosen_above_chance=True)
    assert note is not None and "did not settle: cannot separate A from B" in note
    assert "about 120 more labelled items would" in note
    assert race_note(unsettled, agrees=True, chosen_above_chance=True) is None
    chance = race_note(verdict, agrees=False, chosen_above_chance=False)
    assert chance is not None and "may be no better than chance" in chance
    capped = race_note(
        unsettled._replace(ending="dollar cap", unseparated=()),
        agrees=False,
        chosen_above_chance=True,
    )
    assert capped is not None and "dollar cap" in capped
    assert race_note(verdict._replace(chosen=None), agrees=False, chosen_above_chance=False) == (
        "The race in this folder has not ended; the recommendation reads the items its judges "
        "have judged so far."
    )


def test_a_folder_without_a_race_has_no_verdict(tmp_path: Path) -> None:
    assert race_verdict(tmp_path) is None
    raced_folder = race_folder(tmp_path, 1, dataclasses.replace(RaceConfig(), delta=0.05))
    assert race_verdict(raced_folder.folder) is not None


def test_a_race_written_before_the_upgrade_is_taken_up_by_the_same_command(
    tmp_path: Path,
) -> None:
    """A version-1 ``race.json`` (rounds with ``usd``, settings without ``race.target``) of a
    race not ended yet: the same race is taken up from its rounds."""
    folder = tmp_path / "old"
    folder.mkdir()
    settings = {"alpha": 0.05, "delta": 0.02, "round_items": 40, "rho": 1.0, "max_usd": None}
    evidence = {"cell": 1, "reason": None, "comparator": 0, "difference": -0.1}
    evidence |= {"low": -0.3, "high": 0.1, "n_items": 40}
    round_1 = {
        "schema_version": 1, "round": 1, "prefix": 40, "alpha_round": 0.008,
        "alpha_total": 0.008, "z": 2.6, "kappas": [0.8, 0.7], "candidate": 0, "chosen": None,
        "ending": None, "active": [0, 1], "changes": [], "settled": [evidence],
        "judgments": 80, "usd": 0.08,
    }  # fmt: skip
    cells = [
        {"index": i, "name": n, "overrides": [f"model={n}"], "run_dir": n,
         "usd_per_judgment": 0.001, "forecast_usd": 0.24}
        for i, n in enumerate(("a", "b"))
    ]  # fmt: skip
    record = {"schema_version": 1, "settings": settings, "seed": 0, "population": 240}
    record |= {"cells": cells, "rounds": [round_1], "spent_usd": 0.0, "full_grid_usd": 0.48}
    (folder / "race.json").write_text(json.dumps(record | {"outcome": None}))  # as written then
    result = RaceResult(
        folder,
        [RaceCell(i, n, (f"model={n}",), folder / n, 0.001, 0.24) for i, n in enumerate("ab")],
        240,
        RaceConfig(round_items=40),
        0,
    )
    (taken,) = taken_up(folder, result)
    assert taken.list_usd == 0.08 and taken.target == "items" and taken.prefix == 40
    result.rounds = [taken]
    write_race(result)  # written again in this layout, and read again
    assert taken_up(folder, result) == [taken]


def test_judges_from_outside_the_race_folder_keep_the_cards_own_rule(tmp_path: Path) -> None:
    raced_folder = race_folder(tmp_path, 4, RaceConfig())
    inside = [raced_folder.folder / name for name, *_ in JUDGES]
    assert verdict_for_runs(inside) == race_verdict(raced_folder.folder)
    assert verdict_for_runs([*inside, tmp_path / "another_sweep" / "judge"]) is None
