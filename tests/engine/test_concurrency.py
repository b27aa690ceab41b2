"""Calls in flight: what each combination of settings gives, the open-files limit, and the
line a run starts with."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.engine.concurrency import (
    DEFAULT_CONCURRENCY,
    OTHER_OPEN_FILES,
    InFlight,
    calls_in_flight,
    first_line,
    fit_open_files,
)
from mmjudge.engine.sync import Runner
from tests.engine.test_sync import FakeJudge, collect, items
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import compose_config, run_sweep


def typed(*overrides: str) -> SweepConfig:
    cfg = OmegaConf.to_object(compose_config(["model=gpt4o_mini", *overrides]))
    assert isinstance(cfg, SweepConfig)
    return cfg


@pytest.mark.parametrize(
    ("overrides", "expected", "named"),
    [
        ((), DEFAULT_CONCURRENCY, "the default"),
        (("runner.concurrency=64",), 64, "runner.concurrency=64"),
        (("model.max_concurrency=64",), 64, "model.max_concurrency=64"),
        (("runner.concurrency=64", "model.max_concurrency=8"), 8, "model.max_concurrency=8 caps"),
        (("runner.concurrency=8", "model.max_concurrency=64"), 8, "runner.concurrency=8"),
        (("runner.concurrency=3", "model.max_concurrency=3"), 3, "runner.concurrency=3"),
    ],
)
def test_the_calls_in_flight_are_what_the_user_set(
    overrides: tuple[str, ...], expected: int, named: str
) -> None:
    cfg = typed(*overrides)
    in_flight = calls_in_flight(cfg.runner, cfg.model)
    assert in_flight.calls == expected
    assert named in in_flight.limited_by
    # The runner keeps exactly that many calls in flight when there is work enough.
    judge = FakeJudge(delay=0.02)
    runner = Runner(judge, cfg.model, cfg.runner)
    collect(runner, items(expected * 3))
    assert runner.concurrency == expected
    assert judge.peak == expected


def test_a_low_soft_open_files_limit_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = {"soft": 256, "hard": 65536}
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (limits["soft"], limits["hard"]))

    def setrlimit(_kind: int, pair: tuple[int, int]) -> None:
        limits["soft"] = pair[0]

    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    asked = InFlight(1024, "runner.concurrency=1024")
    assert fit_open_files(asked) == asked
    assert limits["soft"] == 1024 + OTHER_OPEN_FILES


def test_a_hard_open_files_limit_cuts_the_calls_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _kind: (256, 512))
    monkeypatch.setattr(resource, "setrlimit", lambda _kind, _pair: None)
    fitted = fit_open_files(InFlight(1024, "runner.concurrency=1024"))
    assert fitted.calls == 512 - OTHER_OPEN_FILES
    assert "open-files limit of 512" in fitted.limited_by
    assert f"raise it to {1024 + OTHER_OPEN_FILES}" in fitted.limited_by


@pytest.fixture
def announcing(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the command does: the line on the console, nothing said yet in this process."""
    from mmjudge.engine import concurrency

    monkeypatch.setattr(concurrency, "_ANNOUNCE", True)
    monkeypatch.setattr(concurrency, "_SAID", set())


def test_the_default_is_said_once_per_process(announcing: None) -> None:
    said = []
    for model in ("gpt4o_mini", "gpt4o", "gpt4o_mini"):
        cfg = typed(f"model={model}")
        said.append(first_line(calls_in_flight(cfg.runner, cfg.model), cfg.model))
    assert said[0].startswith("mmjudge: up to 16 calls in flight — the default")
    assert said[1:] == ["", ""]


def test_a_library_call_says_nothing_unless_asked(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mmjudge.engine import concurrency

    monkeypatch.setattr(concurrency, "_ANNOUNCE", False)
    cfg = typed("model=gpt4o_mini")
    with caplog.at_level("INFO", logger="mmjudge.engine.concurrency"):
        assert first_line(calls_in_flight(cfg.runner, cfg.model), cfg.model) == ""
    assert "calls in flight — the default" in caplog.text  # for a caller who logs INFO


def test_the_first_line_names_the_limit_and_the_pacing(announcing: None) -> None:
    cfg = typed("runner.concurrency=64", "model.requests_per_minute=500")
    line = first_line(calls_in_flight(cfg.runner, cfg.model), cfg.model)
    assert line == (
        "mmjudge: up to 64 calls in flight — runner.concurrency=64; paced by "
        "model.requests_per_minute=500"
    )


def test_the_line_is_said_for_paid_judges_only(announcing: None) -> None:
    cfg = typed()
    in_flight = calls_in_flight(cfg.runner, cfg.model)
    assert first_line(in_flight, cfg.model, paid=False) == ""
    assert first_line(in_flight, cfg.model).startswith("mmjudge: up to 16 calls in flight")


@pytest.mark.slow  # two cells: over half a second
def test_a_free_judges_run_says_nothing_of_calls_in_flight(
    announcing: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import mmjudge
    from tests.helpers import isolated_overrides

    paths = [f"{key}={value}" for key, value in isolated_overrides(tmp_path).items()]
    replay = "model.options.qrels=pkg://mmjudge/datasets/demo_fashion/judges/careful.jsonl"
    for judge in (["model=lexical"], ["model=replay", replay]):
        summary = mmjudge.run_cell(
            [*judge, "dataset.limit=8", "runner.progress=false", "report.build=false", *paths]
        )
        assert summary.status.status == "complete"
    said = capsys.readouterr()
    assert "in flight" not in said.out + said.err


@pytest.mark.slow
def test_a_run_starts_by_saying_how_many_calls_are_in_flight(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        result = run_sweep(
            tmp_path,
            "model=gpt4o_mini",
            f"model.base_url={server.openai_base_url}",
            "model.max_concurrency=12",
            "dataset.limit=20",
            "report.build=false",
            env={"OPENAI_API_KEY": "sk-test"},
        )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == (
        "mmjudge: up to 12 calls in flight — model.max_concurrency=12 of model 'gpt4o_mini'"
    )
    summary = json.loads(next(tmp_path.glob("results/runs/*/summary.json")).read_text())
    assert summary["n_judgments"] == 20


def local(*overrides: str) -> SweepConfig:
    cfg = OmegaConf.to_object(compose_config(["model=minilm", *overrides]))
    assert isinstance(cfg, SweepConfig)
    return cfg


def test_a_local_judge_keeps_two_of_its_batches_in_flight_unless_told() -> None:
    # device and batch_size are options of the shipped configs: set as written, no ++
    cfg = local("model.options.batch_size=512", "model.options.device=cpu")
    assert cfg.model.options["batch_size"] == 512 and cfg.model.options["device"] == "cpu"
    found = calls_in_flight(cfg.runner, cfg.model, 2 * 512)
    assert found.calls == 1024 and "batch_size" in found.limited_by
    told = local("runner.concurrency=8")
    assert calls_in_flight(told.runner, told.model, 64).calls == 8
    remote = typed()
    assert calls_in_flight(remote.runner, remote.model).calls == 16  # no batches to fill


def test_the_embedding_judge_asks_for_two_batches() -> None:
    pytest.importorskip("sentence_transformers", reason="needs the local extra")
    from mmjudge.judges.embedding import EmbeddingJudge

    cfg = local("model.options.batch_size=100")
    assert EmbeddingJudge(cfg.model).calls_to_fill == 200
