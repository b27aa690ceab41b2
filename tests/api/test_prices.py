"""mmjudge.reprice: the figures and the file ``mmjudge reprice`` writes for one run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import mmjudge
from mmjudge.cli.reprice import main
from mmjudge.costs.reprice import reprice_run
from mmjudge.store.repriced_file import read_repriced
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import isolated_overrides


@pytest.fixture
def run_dir(tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A paid judge's run (six items, answered by the loopback server), priced in 2026."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-reprice")
    where = [f"{k}={v}" for k, v in isolated_overrides(tmp_path).items()]
    settings = ["model=gpt4o_mini", f"model.base_url={loopback.openai_base_url}"]
    settings += ["dataset.limit=6", "runner.progress=false", "report.build=false"]
    summary = mmjudge.run_cell([*settings, *where], tmp_path / "run")
    assert summary.n_judgments == 6 and summary.cost.total_usd > 0
    return tmp_path / "run"


def same(ours: dict, theirs: dict) -> bool:
    """Equal but for the time written (as JSON text: a NaN price equals itself there)."""

    def text(data: dict) -> str:
        return json.dumps({k: v for k, v in data.items() if k != "created_at"}, sort_keys=True)

    return text(ours) == text(theirs)


def test_the_figures_are_the_commands(run_dir: Path, tmp_path: Path) -> None:
    priced = mmjudge.reprice(run_dir, "2024-08-16", batch=True, out=tmp_path / "ours")
    assert main([str(run_dir), "--sheet", "2024-08-16", "--batch", "--out", str(tmp_path)]) == 0
    name = "repriced_2024-08-16_batch.json"
    theirs = json.loads((tmp_path / "run" / name).read_text(encoding="utf-8"))
    assert priced.path == tmp_path / "ours" / "run" / name
    assert same(json.loads(priced.path.read_text(encoding="utf-8")), theirs)
    assert priced.record == dataclasses.replace(
        read_repriced(priced.path), created_at=priced.record.created_at
    )
    assert priced.original.total_usd == pytest.approx(theirs["original"]["total_usd"])
    assert priced.repriced.usd_per_million == pytest.approx(theirs["repriced"]["usd_per_million"])
    assert (priced.n_judgments, priced.n_errors, priced.model) == (6, 0, "gpt4o_mini")
    assert priced.notes == theirs["notes"]


def test_the_runs_own_sheet_reproduces_its_cost(run_dir: Path) -> None:
    priced = mmjudge.reprice(run_dir)
    assert priced.path is None  # nothing written unless asked
    assert priced.repriced.sheet == priced.original.sheet == "2026-10-31"
    assert priced.repriced.total_usd == pytest.approx(priced.original.total_usd)
    assert priced.original.total_usd == pytest.approx(
        mmjudge.open_run(run_dir).summary.cost.total_usd
    )


def test_batch_prices_halve_and_another_model_costs_more(run_dir: Path) -> None:
    own = mmjudge.reprice(run_dir)
    assert mmjudge.reprice(run_dir, batch=True).repriced.total_usd == pytest.approx(
        own.repriced.total_usd / 2
    )
    dearer = mmjudge.reprice(run_dir, as_model="gpt4o")
    assert dearer.price_key.startswith("gpt-4o-2024")
    assert dearer.repriced.total_usd > own.repriced.total_usd
    again = reprice_run(run_dir, as_model="gpt4o")
    assert dearer.record == dataclasses.replace(again, created_at=dearer.record.created_at)


def test_problems_are_config_errors(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(mmjudge.ConfigError, match="no price sheet"):
        mmjudge.reprice(run_dir, "1999-01-01")
    with pytest.raises(mmjudge.ConfigError, match="contradict"):
        mmjudge.reprice(run_dir, batch=True, sync=True)
    with pytest.raises(mmjudge.ConfigError, match="run directory"):
        mmjudge.reprice(tmp_path / "nowhere")
