"""A cell's folder name and display name are built once (mmjudge.config.names): the library
and the command save and name the same cell alike, language and perturbation included."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mmjudge
from mmjudge.cli.sweep import cell_line
from mmjudge.config.names import cell_display_name, run_folder_name
from mmjudge.store import read_summary
from tests.helpers import isolated_overrides, run_sweep

#: One cell with every part a folder name can have: a language other than English and a
#: perturbation.
CELL = [
    "model=lexical",
    "dataset=demo_multilingual",
    "prompt.language=data",
    "perturb=stuff_query",
    "dataset.limit=6",
    "runner.progress=false",
    "report.build=false",
]
RUN_NAME = "demo_multilingual_lexical_text_default-data_stuff_query"
SWEEP_NAME = "demo_multilingual.lexical.text.default-data.stuff_query"
STAMP = r"\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_"


def test_a_folder_name_adds_the_language_and_perturbation_only_when_set() -> None:
    assert run_folder_name("d", "m", "text", "default") == "d_m_text_default"
    assert run_folder_name("d", "m", "text", "default", "en", "none") == "d_m_text_default"
    assert (
        run_folder_name("d", "m", "mm", "p", "data", "inject_text") == "d_m_mm_p-data_inject_text"
    )
    # a typed config's prompt id carries its language already: it is not added twice
    assert run_folder_name("d", "m", "mm", "p-data", "data", separator=".") == "d.m.mm.p-data"
    assert run_folder_name("d", "m", "mm", "p", stamp="2030-01-02_03-04-05") == (
        "2030-01-02_03-04-05_d_m_mm_p"
    )


def test_several_results_per_call_name_the_answer_only_where_it_is_not_the_default() -> None:
    assert run_folder_name("d", "m", "text", "p", passages=5) == "d_m_text_p-k5"
    assert run_folder_name("d", "m", "text", "p", passages=5, answer="auto") == "d_m_text_p-k5"
    assert run_folder_name("d", "m", "text", "p", passages=5, answer="lines") == (
        "d_m_text_p-k5-lines"
    )
    assert run_folder_name("d", "m", "text", "p", passages=5, reasons=True) == (
        "d_m_text_p-k5-reasons"
    )
    assert run_folder_name(
        "d", "m", "text", "p", "data", passages=5, answer="structured", reasons=True
    ) == ("d_m_text_p-data-k5-structured-reasons")
    # one result per call: neither setting changes what is asked, nor the name
    assert run_folder_name("d", "m", "text", "p", answer="lines", reasons=True) == "d_m_text_p"


def test_a_display_name_names_the_prompt_when_chosen_and_the_perturbation_when_set() -> None:
    assert cell_display_name("d", "m", "text", "default") == "d × m × text"
    assert cell_display_name("d", "m", "text", "default", prompt_named=True) == (
        "d × m × text × default"
    )
    assert cell_display_name("d", "m", "text", "terse", "none") == "d × m × text × terse"
    assert cell_display_name("d", "m", "text", "default-data", "stuff_query") == (
        "d × m × text × default-data × stuff_query"
    )


def _runs(root: Path) -> list[str]:
    names = [path.name for path in (root / "results" / "runs").iterdir()]
    assert all(re.match(STAMP, name) for name in names), names
    return [re.sub(f"^{STAMP}", "", name) for name in names]


def _sweep_cells(root: Path) -> list[str]:
    [sweep] = (root / "results" / "sweeps").iterdir()
    return sorted(path.name for path in sweep.iterdir() if path.is_dir())


@pytest.mark.slow  # two sweep processes
def test_the_library_and_the_command_save_a_cell_under_one_folder_name(tmp_path: Path) -> None:
    where = {name: tmp_path / name for name in ("cell", "sweep", "single", "multirun")}
    for root in where.values():
        root.mkdir()
    overrides = {
        name: [f"{k}={v}" for k, v in isolated_overrides(root).items()]
        for name, root in where.items()
    }

    summary = mmjudge.run_cell([*CELL, *overrides["cell"]])
    assert _runs(where["cell"]) == [RUN_NAME]
    swept = mmjudge.run_sweep([*CELL, *overrides["sweep"]])
    assert [cell.path.name for cell in swept.cells] == [SWEEP_NAME]
    assert _sweep_cells(where["sweep"]) == [SWEEP_NAME]

    single = run_sweep(where["single"], *CELL)
    assert single.returncode == 0, single.stderr
    assert _runs(where["single"]) == [RUN_NAME]
    multirun = run_sweep(where["multirun"], "-m", *CELL)
    assert multirun.returncode == 0, multirun.stderr
    assert _sweep_cells(where["multirun"]) == [SWEEP_NAME]

    # and the command's closing line names the cell as the one function does
    c = summary.cell
    name = cell_display_name(c.dataset, c.model, c.modality, c.prompt_id, c.perturb)
    assert name == "demo_multilingual × lexical × text × default-data × stuff_query"
    assert cell_line(summary).startswith(f"{name}: ")
    assert f"{name}: " in single.stderr
    [run_dir] = (where["single"] / "results" / "runs").iterdir()
    assert read_summary(run_dir).cell == summary.cell
