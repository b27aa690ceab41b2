"""``perturb`` as a sweep axis: one folder per perturbation, clean folders named as before,
and the report's robustness section built after the sweep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_sweep

pytestmark = pytest.mark.slow  # starts python -m mmjudge.sweep


def test_a_sweep_over_perturbations_keeps_each_in_its_own_folder(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "-m",
        "model=lexical",
        "modality=text",
        "dataset.limit=24",
        "perturb=none,inject_text,stuff_query",
    )
    assert result.returncode == 0, result.stderr
    (sweep,) = (tmp_path / "results" / "sweeps").iterdir()
    names = sorted(p.name for p in sweep.iterdir() if (p / "summary.json").exists())
    assert names == [
        "demo_fashion.lexical.text.default",
        "demo_fashion.lexical.text.default.inject_text",
        "demo_fashion.lexical.text.default.stuff_query",
    ]
    clean = json.loads((sweep / names[0] / "summary.json").read_text())
    stuffed = json.loads((sweep / names[2] / "summary.json").read_text())
    assert "perturb" not in clean and stuffed["perturb"] == "stuff_query"
    # The lexical judge counts query terms: stuffing them in pushes its grades up.
    assert stuffed["metrics"]["kappa"] != clean["metrics"]["kappa"]
