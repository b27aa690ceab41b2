"""Sweeps through other Hydra launchers: joblib (parallel local processes) and Ray (cells as Ray
tasks). Each launcher must give the same report numbers as the basic one on the same data, with
the jobs sharing one response cache; the cache itself must take writers from several processes.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import subprocess
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mmjudge.engine.response_cache import ResponseCache
from mmjudge.records import JudgeResponse, Usage
from tests.fixtures.loopback_server import OPENAI_PATH, LoopbackServer, RecordedRequest
from tests.helpers import installed, run_sweep

KEY = "sk-test-loopback-0123456789abcdef"
LIMIT = 12
MODELS = "gpt4o,gpt4o_mini"


needs_joblib = pytest.mark.skipif(
    not installed("hydra_plugins.hydra_joblib_launcher"),
    reason="hydra-joblib-launcher is not installed (pip install -e '.[joblib]')",
)
needs_ray = pytest.mark.skipif(
    not installed("ray") or not installed("hydra_plugins.hydra_ray_launcher"),
    reason="ray and hydra-ray-launcher are not installed (pip install -e '.[ray]')",
)

#: A Ray instance on this machine only: bound to the loopback address, no dashboard. The
#: object store size is the launcher's own default, given explicitly: under omegaconf 2.4 the
#: launcher fails when it tries to add that key itself.
RAY_LOCAL = (
    "hydra/launcher=ray",
    "+hydra.launcher.ray.init.num_cpus=2",
    "+hydra.launcher.ray.init.object_store_memory=78643200",
    "+hydra.launcher.ray.init.include_dashboard=false",
    "+hydra.launcher.ray.init._node_ip_address=127.0.0.1",
)


def graded(request: RecordedRequest) -> str:
    """A grade that depends on the request (model included), so agreement is not trivial."""
    digest = hashlib.sha256(json.dumps(request.body, sort_keys=True).encode()).hexdigest()
    return f"{int(digest, 16) % 3}\nReason {digest[:8]}."


def sweep(
    tmp_path: Path, server: LoopbackServer, name: str, *args: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``python -m mmjudge.sweep -m`` over two judges; returns the process and its sweep dir."""
    results = tmp_path / name
    result = run_sweep(
        tmp_path,
        "-m",
        f"model={MODELS}",
        "modality=text",
        f"model.base_url={server.openai_base_url}",
        f"dataset.limit={LIMIT}",
        f"paths.results={results}",
        f"paths.response_cache={tmp_path / (name + '.sqlite')}",
        *args,
        env={"OPENAI_API_KEY": KEY, "RAY_USAGE_STATS_ENABLED": "0"},
        timeout=600,
    )
    sweeps = sorted((results / "sweeps").iterdir()) if (results / "sweeps").is_dir() else []
    return result, (sweeps[-1] if sweeps else results)


def launcher_of(sweep_dir: Path) -> str:
    """The launcher class a multirun used, from the config Hydra saved in its sweep dir."""
    saved = OmegaConf.load(sweep_dir / "multirun.yaml")
    return str(saved.hydra.launcher._target_)


def report_cells(sweep_dir: Path) -> dict[str, dict[str, Any]]:
    data = json.loads((sweep_dir / "sweep_summary.json").read_text())
    return {cell["run_id"]: cell for cell in data["cells"]}


def assert_same_report(left: Path, right: Path) -> None:
    """The report numbers of two sweeps over the same data agree cell by cell."""
    a, b = report_cells(left), report_cells(right)
    assert a.keys() == b.keys()
    judged = [name for name, cell in a.items() if cell["model"] in MODELS.split(",")]
    assert len(judged) == 2
    for name in a:
        assert a[name]["n"] == b[name]["n"] == LIMIT
        assert a[name]["kappa"] == pytest.approx(b[name]["kappa"], abs=1e-12)
        assert a[name]["usd_per_million"] == pytest.approx(b[name]["usd_per_million"], rel=1e-12)
    kappas = {a[name]["kappa"] for name in judged}
    assert None not in kappas and len(kappas) == 2  # the judges do disagree


@pytest.mark.slow
@pytest.mark.needs_extra
@needs_joblib
def test_joblib_launcher_runs_cells_in_parallel_sharing_one_cache(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.responder = graded
    basic, basic_dir = sweep(tmp_path, loopback, "basic")
    assert basic.returncode == 0, basic.stderr
    assert loopback.counts()[OPENAI_PATH] == 2 * LIMIT

    parallel, parallel_dir = sweep(
        tmp_path, loopback, "joblib", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"
    )
    assert parallel.returncode == 0, parallel.stderr
    assert launcher_of(parallel_dir).endswith("JoblibLauncher")
    assert loopback.counts()[OPENAI_PATH] == 4 * LIMIT
    # Each job wrote its own run directory under the one sweep directory.
    runs = sorted(p.parent.name for p in parallel_dir.glob("*/summary.json"))
    assert runs == sorted(f"demo_fashion.{m}.text.default" for m in MODELS.split(","))
    assert_same_report(basic_dir, parallel_dir)
    # Both processes wrote into one cache file, and every answer is in it.
    cache = ResponseCache(tmp_path / "joblib.sqlite")
    try:
        assert len(cache) == 2 * LIMIT
    finally:
        cache.close()

    # Run again: both jobs read everything back from the shared cache; nothing is called.
    again, again_dir = sweep(
        tmp_path, loopback, "joblib", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"
    )
    assert again.returncode == 0, again.stderr
    assert loopback.counts()[OPENAI_PATH] == 4 * LIMIT
    assert again_dir != parallel_dir
    assert_same_report(parallel_dir, again_dir)


@pytest.mark.slow
@pytest.mark.needs_extra
@needs_ray
def test_ray_launcher_matches_the_basic_launcher(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.responder = graded
    basic, basic_dir = sweep(tmp_path, loopback, "basic")
    assert basic.returncode == 0, basic.stderr
    ray, ray_dir = sweep(tmp_path, loopback, "ray", *RAY_LOCAL)
    assert ray.returncode == 0, ray.stderr
    assert launcher_of(ray_dir).endswith("RayLauncher")
    assert loopback.counts()[OPENAI_PATH] == 4 * LIMIT
    assert_same_report(basic_dir, ray_dir)


# --- the response cache with several writers ---------------------------------------------------


def _write_many(path: str, worker: int, n: int) -> float:
    """Write ``n`` answers from one process, reading each back; returns the seconds taken."""
    cache = ResponseCache(Path(path))
    started = time.perf_counter()
    try:
        for i in range(n):
            key = f"{worker}-{i}"
            cache.put(key, JudgeResponse(text=f"{i % 3}\nok", usage=Usage(input_tokens=i)))
            got = cache.get(key)
            assert got is not None and got.usage.input_tokens == i
    finally:
        cache.close()
    return time.perf_counter() - started


@pytest.mark.slow
def test_cache_takes_writers_from_several_processes_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    workers, per_worker = 4, 250
    context = multiprocessing.get_context("spawn")
    # an executor, not a Pool: a worker that dies fails the test instead of hanging it
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = [pool.submit(_write_many, str(path), w, per_worker) for w in range(workers)]
        times = [future.result(timeout=300) for future in futures]
    assert all(t > 0 for t in times)
    cache = ResponseCache(path)
    try:
        assert len(cache) == workers * per_worker
        for worker in range(workers):
            answer = cache.get(f"{worker}-{per_worker - 1}")
            assert answer is not None and answer.text.endswith("ok")
    finally:
        cache.close()
