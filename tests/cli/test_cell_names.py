"""Every console line names its cell: in a prompt sweep the prompt tells the cells apart; and
the report's header says in one plain clause what it counted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mmjudge.ensembles.defaults import build_default_ensembles
from mmjudge.report import build_report
from mmjudge.store import cell_lines as sweep
from mmjudge.store.forecast_file import CellForecast
from mmjudge.store.summary import read_summary
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep
from tests.helpers import run_sweep

PROMPTS = ("default", "nuggets", "questions")


@pytest.fixture(scope="module")
def prompt_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names") / "sweeps" / "prompts"
    judges = [FakeJudge("lexical", accuracy=0.8, prompt_id=p) for p in PROMPTS]
    write_sweep(root, [FakeDataset("demo_fashion", n_queries=12, images=0)], judges)
    return root


@pytest.mark.parametrize(
    ("overrides", "chosen"),
    [
        (["prompt=nuggets", "model=lexical"], True),
        (["+prompt=nuggets"], True),
        (["prompt.id=mine"], True),
        (["model=lexical", "dataset=demo_fashion", "runner.concurrency=2"], False),
        (["prompts_file=x"], False),
    ],
)
def test_the_prompt_counts_as_chosen_when_an_override_sets_it(
    overrides: list[str], chosen: bool
) -> None:
    assert sweep.prompt_chosen(overrides) is chosen


def test_the_cells_of_a_prompt_sweep_get_distinct_lines(prompt_sweep: Path) -> None:
    summaries = [read_summary(run) for run in sorted(prompt_sweep.iterdir()) if run.is_dir()]
    lines = [sweep.cell_line(s, prompt_named=True).split(":")[0] for s in summaries]
    assert sorted(lines) == [f"demo_fashion × lexical × text × {p}" for p in PROMPTS]
    # outside a prompt sweep, a prompt other than the default is still named
    alone = {sweep.cell_line(s).split(":")[0] for s in summaries}
    assert alone == {
        "demo_fashion × lexical × text",
        "demo_fashion × lexical × text × nuggets",
        "demo_fashion × lexical × text × questions",
    }


def test_a_dry_run_line_names_the_prompt_too() -> None:
    data = {
        "dataset": "demo_fashion",
        "model": "lexical",
        "modality": "text",
        "prompt_id": "nuggets",
        "forecast": {
            "calls": 2,
            "input_tokens": 10,
            "image_tokens": 0,
            "output_tokens": 4,
            "usd": 0.0,
            "usd_per_million": 0.0,
        },
    }
    line = CellForecast.from_dict(data).line(prompt_named=True)
    assert line.startswith("demo_fashion × lexical × text × nuggets: forecast")


@pytest.mark.slow  # over half a second
def test_the_report_header_says_what_it_counted(prompt_sweep: Path, tmp_path: Path) -> None:
    build_default_ensembles(prompt_sweep)
    page = (build_report(prompt_sweep, tmp_path / "reports", n_boot=50) / "index.html").read_text()
    head = re.sub(r"<[^>]+>", "", page[page.index("Built ") : page.index("Every κ is")])
    assert "3 judge cells (3 complete), of which all 3 are analysed, plus " in head
    assert re.search(
        r"plus \d+ (panel|cascade)s?( and \d+ cascades?)? built from their saved records\.", head
    )
    assert "completed cells of" not in head


@pytest.mark.slow
def test_a_prompt_sweep_prints_one_distinct_line_per_cell(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "-m",
        f"prompt={','.join(PROMPTS)}",
        "model=lexical",
        "dataset=demo_fashion",
        "dataset.limit=4",
        "report.build=false",
        "hydra.callbacks.sweep_report.ensembles=false",
    )
    assert result.returncode == 0, result.stderr
    lines = [
        line.split(":")[0]
        for line in result.stderr.splitlines()
        if line.startswith("demo_fashion × ")
    ]
    assert sorted(lines) == [f"demo_fashion × lexical × text × {p}" for p in PROMPTS]
