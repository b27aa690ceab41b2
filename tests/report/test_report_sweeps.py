"""One report from several sweeps: next month's sweep with a new model joins last month's
without judging anything again; each point says which sweep it came from, and where both
sweeps hold a cell the run that finished last is used."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mmjudge.cli.report import main
from mmjudge.report import build_report
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

SHOP = FakeDataset("shop", n_queries=8, images=0)


@pytest.fixture
def sweeps(tmp_path: Path) -> tuple[Path, Path]:
    data = tmp_path / "datasets"
    october = write_sweep(
        tmp_path / "sweeps" / "october",
        [SHOP],
        [FakeJudge("free", accuracy=0.4), FakeJudge("cheap", accuracy=0.5, usd_per_judgment=1e-4)],
        dataset_root=data,
    ).root
    november = write_sweep(
        tmp_path / "sweeps" / "november",
        [SHOP],
        [
            FakeJudge("newcomer", accuracy=0.85, usd_per_judgment=1e-3),
            FakeJudge("cheap", accuracy=0.7, usd_per_judgment=1e-4),
        ],
        dataset_root=data,
    ).root
    # the rerun of a cell finished later than the first run
    summary_path = november / "shop.cheap.text.default" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["finished_at"] = "2099-01-01T00:00:00+00:00"
    summary_path.write_text(json.dumps(summary))
    return october, november


def test_cells_come_from_both_sweeps_and_the_newer_run_wins(sweeps: tuple[Path, Path]) -> None:
    october, november = sweeps
    analysis = analyse(cell_table([october, november]), n_boot=100)
    assert analysis.sweeps == ["october", "november"]
    (stats,) = analysis.datasets
    by_model = {c.judge.model: c for c in stats.cells}
    assert set(by_model) == {"free", "cheap", "newcomer"}
    assert by_model["free"].sweep == "october"
    assert by_model["newcomer"].sweep == "november"
    assert by_model["cheap"].sweep == "november"  # the newer run of the cell
    assert analysis.ignored_runs == [str(october / "shop.cheap.text.default")]
    # given the other way round, the newer run still wins
    again = analyse(cell_table([november, october]), n_boot=100)
    assert {c.judge.model: c.sweep for c in again.datasets[0].cells}["cheap"] == "november"


@pytest.mark.slow  # over half a second
def test_the_page_says_where_each_point_came_from(
    sweeps: tuple[Path, Path], tmp_path: Path
) -> None:
    october, november = sweeps
    out = build_report([october, november], tmp_path / "reports", n_boot=100)
    assert out.name == "october+november"
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "This report joins 2 sweeps" in html and "the run that finished last is used" in html
    row = re.search(r'<tr[^>]*data-dataset="shop" data-model="newcomer"[^>]*>(.*?)</tr>', html)
    assert row and '<td class="l">november</td>' in row.group(1)
    assert '"sweep":"october"' in html and '"sweep":"november"' in html  # the chart's tooltips
    assert "shop.cheap.text.default" in html[html.index('id="provenance"') :]
    # each folder keeps its own sweep summary; nothing was judged again
    for folder in (october, november):
        listed = json.loads((folder / "sweep_summary.json").read_text())
        assert {c["run_id"] for c in listed["cells"]} == {
            p.name for p in folder.iterdir() if p.is_dir()
        }


@pytest.mark.slow  # over half a second
def test_the_command_takes_several_folders(sweeps: tuple[Path, Path], tmp_path: Path) -> None:
    october, november = sweeps
    code = main([str(october), str(november), "--out", str(tmp_path / "r"), "--n-boot", "50"])
    assert code == 0
    assert (tmp_path / "r" / "october+november" / "index.html").is_file()
    assert main([str(october), str(tmp_path / "missing"), "--out", str(tmp_path / "r")]) == 2
