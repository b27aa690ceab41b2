"""A race's rounds as Ray tasks (``hydra/launcher=ray``, the ``ray`` extra): the same rounds
and the same choice as the race's own launcher, on the demo's replayed judges."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mmjudge.store.race_file import read_race_file
from tests.helpers import installed, isolated_overrides, sweep_env

JUDGES = ",".join(
    f"pkg://mmjudge/datasets/demo_fashion/judges/{name}.jsonl"
    for name in ("careful", "hasty", "coin")
)


@pytest.mark.slow
@pytest.mark.needs_extra
@pytest.mark.skipif(
    not installed("hydra_plugins.hydra_ray_launcher"),
    reason="hydra-ray-launcher is not installed (pip install -e '.[ray]')",
)
def test_a_race_through_ray_decides_as_its_own_launcher_does(tmp_path: Path) -> None:
    isolation = [f"{k}={v}" for k, v in isolated_overrides(tmp_path).items()]
    races = {}
    for name, extra in (("own", []), ("ray", ["hydra/launcher=ray"])):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "mmjudge",
                "race",
                "model=replay",
                f"model.options.qrels={JUDGES}",
                "race.round_items=20",
                "race.alpha=0.01",
                "race.delta=0",
                f"hydra.sweep.dir={name}",
                "report.build=false",
                *extra,
                *(["+hydra.launcher.ray.init.include_dashboard=false"] if extra else []),
                *isolation,
            ],
            cwd=tmp_path,
            env=sweep_env({"RAY_USAGE_STATS_ENABLED": "0"}),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        races[name] = read_race_file(tmp_path / name)
    own, ray = races["own"], races["ray"]
    assert own is not None and ray is not None
    assert len(own.rounds) > 1  # more than one round went through Ray
    assert [r.active for r in ray.rounds] == [r.active for r in own.rounds]
    assert ray.outcome.name == own.outcome.name  # type: ignore[union-attr]
    assert "RayLauncher" in (tmp_path / "ray" / "multirun.yaml").read_text()
