"""Secrets never reach a disk, in real sweeps: ``python -m mmjudge.sweep`` against the loopback
server, with secrets planted through every known route (benchmarks/secrets_scan.py), and the
``.hydra/`` files mmjudge writes in place of Hydra's own, through a resume and a multirun."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from benchmarks.secrets_scan import ROUTES, Route, run_route
from tests.fixtures.loopback_server import OPENAI_PATH, LoopbackServer

LIMIT = 4


@pytest.fixture(scope="module")
def shared_loopback() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("route", ROUTES, ids=[route.name for route in ROUTES])
def test_no_file_holds_a_planted_secret(route: Route, shared_loopback: LoopbackServer) -> None:
    result = run_route(route, shared_loopback)
    assert result.files == [], result.files
    assert result.streams == [], "the process printed a secret"
    assert result.as_expected, (result.exit_code, result.refused, result.summaries)
    if route.expect_refusal or route.server_says is None:
        assert result.exit_code == (2 if route.expect_refusal else 0)


def sweep(tmp_path: Path, *args: str, key: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["OPENAI_API_KEY"] = key
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mmjudge.sweep",
            *args,
            f"dataset.limit={LIMIT}",
            f"paths.results={tmp_path / 'results'}",
            f"paths.reports={tmp_path / 'reports'}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            "runner.progress=false",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_a_run_keeps_redacted_hydra_files_and_resumes_in_place(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    key = "lk" + secrets.token_hex(16)
    args = [
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        "+hydra.job.env_set.MMJUDGE_TEST_FLAG=on",
    ]
    first = sweep(tmp_path, *args, key=key)
    assert first.returncode == 0, first.stderr
    [run_dir] = (tmp_path / "results" / "runs").iterdir()
    saved = run_dir / ".hydra"
    overrides = OmegaConf.to_container(OmegaConf.load(saved / "overrides.yaml"))
    assert isinstance(overrides, list) and overrides[:2] == args[:2]
    config = OmegaConf.load(saved / "config.yaml")
    assert config.model.name == "gpt4o_mini" and "hydra" not in config
    hydra = OmegaConf.load(saved / "hydra.yaml").hydra
    assert hydra.job.env_set.MMJUDGE_TEST_FLAG == "on"
    assert hydra.runtime.output_dir == str(run_dir)
    calls = len(loopback.requests_to(OPENAI_PATH))
    assert calls == LIMIT

    again = sweep(tmp_path, *args, f"hydra.run.dir={run_dir}", key=key)
    assert again.returncode == 0, again.stderr
    assert len(loopback.requests_to(OPENAI_PATH)) == calls  # resumed: nothing paid twice
    assert [p.name for p in (tmp_path / "results" / "runs").iterdir()] == [run_dir.name]
    rerun = OmegaConf.load(saved / "hydra.yaml").hydra
    assert f"hydra.run.dir={run_dir}" in list(rerun.overrides.hydra)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_judgments"] == LIMIT
    for path in tmp_path.rglob("*"):
        assert not path.is_file() or key.encode() not in path.read_bytes(), path


@pytest.mark.slow
def test_every_job_of_a_multirun_keeps_its_own_hydra_files(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    key = "lk" + secrets.token_hex(16)
    result = sweep(
        tmp_path,
        "-m",
        "model=gpt4o_mini,lexical",
        f"model.base_url={loopback.openai_base_url}",
        key=key,
    )
    assert result.returncode == 0, result.stderr
    [sweep_dir] = (tmp_path / "results" / "sweeps").iterdir()
    assert (sweep_dir / "multirun.yaml").is_file()
    jobs = sorted(p for p in sweep_dir.iterdir() if (p / "summary.json").is_file())
    assert [job.name.split(".")[1] for job in jobs] == ["gpt4o_mini", "lexical"]
    for job in jobs:
        overrides = list(OmegaConf.load(job / ".hydra" / "overrides.yaml"))
        assert f"model={job.name.split('.')[1]}" in overrides
        hydra = OmegaConf.load(job / ".hydra" / "hydra.yaml").hydra
        assert hydra.runtime.output_dir == str(job)
    assert any((tmp_path / "reports").rglob("index.html"))
