"""A race run by the grid's seam, through the library: prices reach the rule as documented,
money is told on one basis, and cells that cannot run are kept in every view."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import mmjudge
from mmjudge.grid.race import spend_of
from mmjudge.store.race_file import read_race_file
from tests.helpers import DEMO_DIR, isolated_overrides

#: A replay judge priced as a sheet model's typical call (model.options.input_tokens/…).
PRICED_REPLAY = """\
name: {name}
provider: replay
model_id: replay
supports_images: false
temperature: null
max_tokens: 0
price_key: gpt-4o-mini-2024-07-18
options:
  qrels: {qrels}
  input_tokens: {tokens}
  output_tokens: 10
"""


def priced_judges(root: Path, judges: dict[str, int]) -> Path:
    """A config folder with one replay judge per name, each replaying the demo's careful judge
    and priced at its number of input tokens per call."""
    folder = root / "conf" / "model"
    folder.mkdir(parents=True)
    for name, tokens in judges.items():
        qrels = root / f"{name}.jsonl"
        shutil.copy(DEMO_DIR / "judges" / "careful.jsonl", qrels)
        (folder / f"{name}.yaml").write_text(
            PRICED_REPLAY.format(name=name, qrels=qrels, tokens=tokens), encoding="utf-8"
        )
    return root / "conf"


def overrides(root: Path, *extra: str) -> list[str]:
    return [*extra, *(f"{k}={v}" for k, v in isolated_overrides(root).items())]


@pytest.mark.slow
def test_a_replay_judges_documented_price_reaches_the_race(tmp_path: Path) -> None:
    """Two judges with the same grades, one priced at ten times the other's tokens: the race
    chooses the cheap one (its forecast prices each as its rows are priced), and what it paid
    is never more than the full grid is worth."""
    conf = priced_judges(tmp_path, {"dear": 4000, "cheap": 400})
    # the items are the whole population here: twins are told apart before every item is
    # judged (against a wider population 240 items could not rule out a difference of δ)
    settings = ["race.round_items=40", "race.target=items", "report.build=false"]
    race = mmjudge.run_race(
        overrides(tmp_path, "model=dear,cheap", *settings),
        config_dir=conf,
        sweep_dir=tmp_path / "race",
    )
    assert race.outcome is not None and "cheap" in race.outcome.name
    dear, cheap = race.cells
    assert dear.usd_per_judgment > 5 * cheap.usd_per_judgment > 0
    assert 0 < race.spend.worth_usd <= race.spend.full_grid_usd
    judged = race.outcome.judgments
    assert judged < race.outcome.full_judgments
    # the full grid's worth is each cell's rows at their own price, plus what is unjudged
    rows = {
        cell.name: [
            json.loads(line) for line in (cell.run_dir / "judgments.jsonl").read_text().splitlines()
        ]
        for cell in race.cells
    }
    worth = sum(row["cost_usd"] for found in rows.values() for row in found)
    assert race.spend.worth_usd == pytest.approx(worth)
    saved = read_race_file(tmp_path / "race")
    assert saved is not None and saved.full_grid_usd == pytest.approx(race.full_grid_usd)


def test_the_full_grids_worth_holds_what_was_judged() -> None:
    from mmjudge.grid.race import CellReading, RaceCell

    cells = [
        RaceCell(0, "a", (), Path("a"), 0.001, 0.1),
        RaceCell(1, "b", (), Path("b"), 0.002, 0.2),
    ]
    readings = [
        CellReading(None, 40, 0.08, 0.05),  # type: ignore[arg-type]
        CellReading(None, 0, 0.0, 0.0),  # type: ignore[arg-type]
    ]
    spend = spend_of(cells, readings, 100)
    # a: 40 judged at $0.002 each (its rows), 60 more at that price; b: 100 at its forecast
    assert spend == (0.08, 0.05, pytest.approx(0.08 + 60 * 0.002 + 100 * 0.002))


@pytest.mark.slow
def test_cells_that_cannot_run_are_in_the_race_file_the_sweep_summary_and_the_report(
    tmp_path: Path,
) -> None:
    conf = priced_judges(tmp_path, {"dear": 4000, "cheap": 400})
    (conf / "model" / "seeing.yaml").write_text(
        (conf / "model" / "cheap.yaml")
        .read_text()
        .replace("name: cheap", "name: seeing")
        .replace("supports_images: false", "supports_images: true"),
        encoding="utf-8",
    )
    race = mmjudge.run_race(
        overrides(tmp_path, "model=dear,seeing", "modality=mm", "race.round_items=40"),
        config_dir=conf,
        sweep_dir=tmp_path / "race",
    )
    assert [cell.name for cell in race.cells] == ["demo_fashion × seeing × mm"]
    ((name, why),) = race.skipped
    assert "dear" in name and "does not accept images" in why
    saved = read_race_file(tmp_path / "race")
    assert saved is not None and [(s.name, s.reason) for s in saved.skipped] == [(name, why)]
    counts = json.loads((tmp_path / "race" / "sweep_summary.json").read_text())
    assert counts["by_status"].get("skipped") == 1, counts
    assert race.report is not None
    page = (race.report / "index.html").read_text(encoding="utf-8")
    assert "does not accept images" in page


def test_an_ended_race_keeps_its_cautions_for_the_console() -> None:
    """Two judges answering at random on 60 items: the race ends, and its closing lines warn
    that the choice may be no better than chance."""
    import numpy as np

    from mmjudge.api.race_result import closing_lines
    from mmjudge.config.race import RaceConfig
    from mmjudge.grid.race import RaceCell, RaceItems, RaceResult, RaceRounds
    from mmjudge.grid.rounds import run_rounds
    from mmjudge.grid.simulation import KnownGrades

    rng = np.random.default_rng(3)
    truth = rng.integers(0, 3, 60).astype(float)
    coins = rng.integers(0, 3, (2, 60)).astype(float)
    cells = [RaceCell(c, f"coin{c}", (), Path(), 1e-3 * (c + 1), 0.06 * (c + 1), c) for c in (0, 1)]
    result = RaceResult(Path("race"), cells, 60, RaceConfig(round_items=15), 0)
    items = RaceItems(tuple(("q", str(i)) for i in range(60)), truth, (0.0, 1.0, 2.0))
    known = KnownGrades(coins, [1e-3, 2e-3])
    run_rounds(RaceRounds(result, items, known), known)
    assert result.outcome is not None
    assert any("may be no better than chance" in line for line in result.warnings)
    lines = closing_lines(result)
    assert any(line.startswith("  warning: ") for line in lines)
    # The items ran out with the pair unseparated: the choice is not a settled one.
    assert result.outcome.ending == "items ran out" and not result.outcome.guarantee
    assert (
        "  not a settled choice: coin1 leads on the items judged (the cheapest judge "
        in "\n".join(lines)
    )
    assert any("warning: cannot separate coin1 from coin0 at this size" in line for line in lines)


@pytest.mark.slow
def test_a_small_dataset_gets_smaller_rounds_and_the_console_says_so(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers import sweep_env

    judges = ",".join(
        f"pkg://mmjudge/datasets/demo_fashion/judges/{name}.jsonl" for name in ("careful", "hasty")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mmjudge",
            "race",
            "model=replay",
            f"model.options.qrels={judges}",
            "report.build=false",
            *overrides(tmp_path),
        ],
        cwd=tmp_path,
        env=sweep_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "race: rounds of 60 items instead: race.round_items=200 is more than a quarter" in (
        done.stderr
    )
    assert "race round 1: 60 items" in done.stderr


@pytest.mark.slow  # composes a grid and judges a round
def test_asked_grades_without_an_oracle_leave_the_race_waiting_with_a_labelling_file(
    tmp_path: Path,
) -> None:
    """``race.labels=ask`` from the library: the first round is judged, its labelling file
    written, and the result says the race waits for it (``waiting``) with no round decided."""
    judges = ",".join(
        f"pkg://mmjudge/datasets/demo_fashion/judges/{name}.jsonl" for name in ("careful", "hasty")
    )
    given = overrides(tmp_path, "model=replay", f"model.options.qrels={judges}", "race.labels=ask")
    result = mmjudge.run_race(given)
    assert result.waiting is not None and result.waiting.round == 1
    assert result.rounds == [] and result.outcome is None and result.report is None
    rows = result.waiting.paths.jsonl.read_text(encoding="utf-8").splitlines()
    assert len(rows) == result.waiting.asked == result.waiting.missing > 0
    assert result.waiting.paths.csv.parent == result.folder / "labelling"
