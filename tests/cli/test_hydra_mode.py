"""``-m`` and ``hydra.mode`` on the command line both run a sweep of every job (Hydra reads the
mode itself: mmjudge changes nothing of Hydra's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import run_sweep


@pytest.mark.slow
@pytest.mark.parametrize("how", [["-m"], ["hydra.mode=MULTIRUN"]])
def test_a_multirun_still_runs_every_job(tmp_path: Path, how: list[str]) -> None:
    result = run_sweep(
        tmp_path,
        *how,
        "model=lexical",
        "modality=text",
        "dataset=demo_fashion",
        "dataset.limit=4",
        "prompt=default,terse",
        "runner.progress=false",
        "report.build=false",
    )
    assert result.returncode == 0, result.stderr
    [sweep_dir] = (tmp_path / "results" / "sweeps").iterdir()
    jobs = [p for p in sweep_dir.iterdir() if (p / "summary.json").is_file()]
    assert len(jobs) == 2
