"""Every script in ``docs/examples/`` runs to its end and prints what it says it prints.

The examples run in this process (``runpy``) from an empty working folder, where everything
they write goes; the sweep examples build ensembles and a report and take seconds, so they are
marked slow."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"

#: Each example and a line its output must hold.
EXPECTED = {
    "compose_config.py": "strict_lexical: score span [0.5, 0.9]",
    "run_cell.py": "lexical/default/text: complete, 240 judgments",
    "run_sweep.py": "cells per status: {'complete': 2, 'skipped': 2}; ensembles: 1",
    "open_runs.py": "lexical/default/text: complete, 240 rows",
    "score_labels.py": "lexical: n=240, kappa",
    "reprice_run.py": "written: repriced_2024-08-16.json",
    "grade_one_item.py": "grade 0: '0\\nQuery-term overlap with the result text is 0.00.'",
}
SLOW = {"run_sweep.py", "open_runs.py"}


def test_every_example_is_listed() -> None:
    assert {path.name for path in EXAMPLES.glob("*.py")} == set(EXPECTED)


@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else []) for name in EXPECTED],
)
def test_the_example_runs(
    name: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert EXPECTED[name] in out, out
    if name != "compose_config.py" and name != "grade_one_item.py":
        assert (tmp_path / "results").is_dir()  # written under the working folder
