"""``mmjudge init``: a starter folder of the user's own configs that works as written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import mmjudge
from mmjudge.cli import init
from mmjudge.cli.main import main as mmjudge_main
from mmjudge.costs.reprice import load_sheet
from tests.helpers import sweep_env


def test_init_writes_one_example_of_each_group(tmp_path: Path) -> None:
    folder = tmp_path / "conf"
    written = init.write_starter(folder, "my-conf")
    names = {p.relative_to(folder).as_posix() for p in written}
    for group in ("dataset", "model", "pricing", "prompt", "experiment"):
        assert any(name.startswith(f"{group}/") for name in names), group
    assert "data/my_catalogue/items.jsonl" in names
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert init.FOLDER_MARK not in text, path
        if path.suffix == ".yaml":
            yaml.safe_load(text)  # every file parses
    dataset = yaml.safe_load((folder / "dataset" / "my_catalogue.yaml").read_text())
    assert dataset["path"] == "my-conf/data/my_catalogue"
    rows = [json.loads(line) for line in (folder / "data/my_catalogue/items.jsonl").open()]
    assert rows and all(set(r["labels"]) == set(dataset["annotators"]) for r in rows)


def test_the_starter_price_sheet_loads_from_a_config_folder(tmp_path: Path) -> None:
    init.write_starter(tmp_path / "c")
    sheet = load_sheet("my_prices", [tmp_path / "c"])
    assert "my-qwen-server" in sheet.models


def test_init_refuses_a_folder_that_holds_something(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "keep.txt").write_text("mine")
    assert mmjudge_main(["init", str(tmp_path / "taken")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not empty" in err[0]
    assert (tmp_path / "taken" / "keep.txt").read_text() == "mine"


@pytest.mark.slow
def test_a_new_folder_runs_the_demo_and_the_starter_configs(tmp_path: Path) -> None:
    """From an empty folder: the demo with no argument, then the starter folder's dataset,
    its named sweep and its own judge's forecast, everything written under that folder."""

    def mmjudge(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mmjudge", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=sweep_env(),
            check=False,
        )

    demo = mmjudge("sweep")
    assert demo.returncode == 0, demo.stderr
    assert list(tmp_path.glob("results/runs/*_demo_fashion_lexical_text_default/summary.json"))
    assert list(tmp_path.glob("reports/*/index.html"))
    assert mmjudge("init").returncode == 0
    own = mmjudge("sweep", "-cd", "mmjudge-conf", "dataset=my_catalogue", "report.build=false")
    assert own.returncode == 0, own.stderr
    assert "my_catalogue × lexical × text: 8 judgments" in own.stderr
    grid = mmjudge("sweep", "-cd", "mmjudge-conf", "-m", "+experiment=my_grid")
    assert grid.returncode == 0, grid.stderr
    assert "2 cells: 2 complete" in grid.stderr
    forecast = mmjudge(
        "sweep",
        "-cd",
        "mmjudge-conf",
        "model=my_server",
        "pricing=my_prices",
        "runner.dry_run=true",
    )
    assert forecast.returncode == 0, forecast.stderr
    assert "my_server × text: forecast 240 calls" in forecast.stdout
    assert not (Path.cwd() / "mmjudge-conf").exists()


@pytest.mark.slow  # over half a second
def test_init_writes_a_csv_example_that_loads_as_the_jsonl_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    init.write_starter(tmp_path / "conf", "conf")
    from mmjudge.data import load_dataset

    table = mmjudge.compose(["dataset=my_table"], config_dir=tmp_path / "conf").dataset
    jsonl = mmjudge.compose(["dataset=my_catalogue"], config_dir=tmp_path / "conf").dataset
    assert (tmp_path / "conf" / "data" / "my_table" / "items.csv").is_file()
    from_csv = list(load_dataset(table))
    from_jsonl = list(load_dataset(jsonl))
    assert [(e.query_id, e.result_id, e.labels) for e in from_csv] == [
        (e.query_id, e.result_id, e.labels) for e in from_jsonl
    ]
    assert [e.fields for e in from_csv] == [e.fields for e in from_jsonl]
