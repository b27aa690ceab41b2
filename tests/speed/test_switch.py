"""One switch turns the speed machinery off (``MMJUDGE_FAST_PATH=0``, :mod:`mmjudge.speed`):
every call then goes through the SDK's own client and nothing is forked, loaded ahead or tuned,
and a cell judged either way gives the same rows, labels and costs, so the SDK's path is the
reference the fast path is held to. The switch is read once, where a run starts, and handed
down as a :class:`~mmjudge.speed.Speed`."""

from __future__ import annotations

import ast
import asyncio
import gc
import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.engine.batch import BatchRunner
from mmjudge.engine.cell import run_cell, typed_config
from mmjudge.engine.policy import RunStats, WorkItem
from mmjudge.engine.sync import Runner
from mmjudge.errors import ConfigError
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.records import Forecast
from mmjudge.speed import FAST, REFERENCE, SWITCH, Speed, read_switch, survey_child
from mmjudge.speed.collector import quiet_collector
from mmjudge.speed.event_loop import TurnPacer, loop_factory
from mmjudge.speed.report_child import ReportChild
from mmjudge.speed.sdk_warmup import sdk_warmer
from mmjudge.speed.wire import WireSender
from mmjudge.store import RunSummary
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import compose_config, isolated_overrides, run_sweep
from tests.project.test_architecture import modules, syntax_tree

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
MODELS = {"openai": "gpt4o_mini", "anthropic": "claude_haiku45"}
#: Row fields that differ between two runs by nature: when, how long, which run.
TIMING = {"latency_s", "started_at", "finished_at", "run_id", "timestamp", "created_at"}


@pytest.mark.parametrize("value", ["", "1", "on", "TRUE", " yes "])
def test_the_switch_is_on_unless_it_says_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(SWITCH, value)
    assert read_switch() == FAST


@pytest.mark.parametrize("value", ["0", "off", "False", "no"])
def test_the_switch_turns_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(SWITCH, value)
    assert read_switch() == REFERENCE


def test_a_value_neither_on_nor_off_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SWITCH, "maybe")
    with pytest.raises(ConfigError) as refused:
        read_switch()
    message = str(refused.value)
    assert "\n" not in message
    assert f"{SWITCH}='maybe'" in message and f"{SWITCH}=0" in message


def test_with_the_switch_off_every_piece_stands_aside(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SWITCH, "1")  # the pieces follow what they are handed, not the variable
    assert loop_factory(REFERENCE) is asyncio.new_event_loop
    assert TurnPacer(REFERENCE).every_s == math.inf and TurnPacer(FAST).every_s < 1
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    restore = quiet_collector(REFERENCE)
    try:
        assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)
    finally:
        restore()
    nothing = ReportChild.start(lambda: pytest.fail("no child, so nothing is loaded"), REFERENCE)
    assert nothing is None
    big = tmp_path / "items.jsonl"
    big.write_bytes(b"{}\n" * survey_child.MIN_BYTES)
    monkeypatch.setattr(survey_child, "_other_threads", lambda: False)
    assert not survey_child._can_fork(big, REFERENCE)
    assert survey_child._can_fork(big, FAST)  # the same file, the machinery on
    cfg = typed_config(compose_config(["model=gpt4o_mini"]))
    assert sdk_warmer("mmjudge_no_such_sdk", cfg, None, REFERENCE) is None


def test_with_the_switch_off_the_first_forecast_is_made_before_the_next_call() -> None:
    """On: on a worker thread once the first call is out. Off: here and now (the reference)."""
    made: list[str] = []

    def estimate() -> Forecast:
        made.append(threading.current_thread().name)
        return Forecast(calls=1)

    stats = RunStats()
    stats.forecast_first_aside(WorkItem(key="k", request=None, estimate=estimate), REFERENCE)
    assert made == ["mmjudge-first-forecast"]  # done, on its thread, before this returned

    async def on_the_loop() -> list[str]:
        aside = RunStats()
        aside.forecast_first_aside(WorkItem(key="k", request=None, estimate=estimate), FAST)
        waited = list(made)
        await asyncio.sleep(0.2)  # the first forecast starts 0.1 s after the first call
        return waited

    made.clear()
    assert asyncio.run(on_the_loop()) == []  # not made before the loop went on
    assert made == ["mmjudge-first-forecast"]


#: Where a run starts, and so where the switch is read: the command's app, the engine's cell
#: for callers that hand it no decision (the library, the race, a monitor check), the library's
#: :class:`mmjudge.Judge`, and the test bank's writer.
READERS = {
    "mmjudge.cli.sweep",
    "mmjudge.engine.cell",
    "mmjudge.api.judge",
    "mmjudge.engine.bank_writer",
}


def test_the_switch_is_read_only_where_a_run_starts() -> None:
    callers, named = set(), set()
    for name, path in modules().items():
        for node in ast.walk(syntax_tree(path)):
            func = node.func if isinstance(node, ast.Call) else None
            called = getattr(func, "id", None) or getattr(func, "attr", None)
            if called == "read_switch":
                callers.add(name)
            if (isinstance(node, ast.Name) and node.id == "SWITCH") or (
                isinstance(node, ast.Constant) and node.value == SWITCH
            ):
                named.add(name)
    assert callers == READERS
    assert named == {"mmjudge.speed"}  # nothing else looks at the variable


#: The engine's classes that pass the decision on; each is handed it wherever it is made.
HANDED = ("Runner", "BatchRunner", "CallPolicy")


def test_every_runner_the_package_makes_is_handed_the_runs_decision() -> None:
    unhanded = []
    for name, path in modules().items():
        for node in ast.walk(syntax_tree(path)):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.id if isinstance(node.func, ast.Name) else None
            if called in HANDED and not any(k.arg == "speed" for k in node.keywords):
                unhanded.append(f"{name}:{node.lineno} makes {called} without speed=")
    assert not unhanded, "\n".join(unhanded)


def _judged(
    tmp_path: Path, loopback: LoopbackServer, provider: str, switch: str
) -> tuple[list[dict[str, Any]], RunSummary, int]:
    """A cell of 12 items judged with the switch at ``switch``: its rows (without timings),
    its summary, and how many calls took the fast request path."""
    base = loopback.openai_base_url if provider == "openai" else loopback.anthropic_base_url
    root = tmp_path / f"switch-{switch}"
    isolated = [f"{key}={value}" for key, value in isolated_overrides(root).items()]
    cfg = compose_config(
        [
            f"model={MODELS[provider]}",
            f"model.base_url={base}",
            "dataset.limit=12",
            "runner.progress=false",
            *isolated,
        ]
    )
    sent_fast = 0
    post = WireSender.post

    async def counted(self: WireSender, *args: Any, **kwargs: Any) -> Any:
        nonlocal sent_fast
        sent_fast += 1
        return await post(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SWITCH, switch)
        patch.setenv(KEYS[provider], "sk-switch-test-0123456789abcdef")
        patch.setattr(WireSender, "post", counted)
        summary = run_cell(cfg, root / "run")
    assert isinstance(summary, RunSummary)
    rows = [
        json.loads(line)
        for line in (root / "run" / "judgments.jsonl").read_text().split("\n")
        if line
    ]
    return [{k: v for k, v in row.items() if k not in TIMING} for row in rows], summary, sent_fast


def test_a_cell_judged_on_either_path_gives_the_same_rows_labels_and_costs(
    tmp_path: Path, loopback: LoopbackServer, provider: str
) -> None:
    fast_rows, fast, via_wire = _judged(tmp_path, loopback, provider, "1")
    sdk_rows, sdk, via_wire_off = _judged(tmp_path, loopback, provider, "0")
    assert via_wire == 12 and via_wire_off == 0  # each path was the one taken
    assert len(fast_rows) == 12 and sorted(fast_rows, key=str) == sorted(sdk_rows, key=str)
    assert fast.metrics == sdk.metrics
    assert fast.cost == sdk.cost and fast.cost.spent_usd > 0
    assert fast.tokens == sdk.tokens


def test_a_cell_refuses_a_switch_neither_on_nor_off_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    isolated = [f"{key}={value}" for key, value in isolated_overrides(tmp_path).items()]
    cfg = compose_config(["model=lexical", "dataset.limit=3", "runner.progress=false", *isolated])
    monkeypatch.setenv(SWITCH, "2")
    with pytest.raises(ConfigError, match=f"{SWITCH}='2' is neither on nor off"):
        run_cell(cfg, tmp_path / "run")
    assert not (tmp_path / "run" / "judgments.jsonl").exists()


@pytest.mark.slow  # starts the command
def test_the_command_refuses_a_switch_neither_on_nor_off_in_one_line(tmp_path: Path) -> None:
    done = run_sweep(tmp_path, "model=lexical", "dataset.limit=3", env={SWITCH: "maybe"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"mmjudge: {SWITCH}='maybe' is neither on nor off; use {SWITCH}=1 (the default: the "
        f"speed machinery runs) or {SWITCH}=0 (every call through the SDK's own path)"
    ]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*.jsonl"))


@pytest.mark.parametrize("speed", [FAST, REFERENCE])
def test_each_runner_hands_the_judge_the_runs_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, speed: Speed
) -> None:
    """Before the judge's client is built: the sync runner's, and the batch runner's (whose
    batch calls build it, before any item falls back to calls one at a time)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-sent-0123456789")
    model = ModelConfig(
        name="m", provider="openai", model_id="gpt-4o-mini", base_url="http://127.0.0.1:9/v1"
    )
    sync_judge, batch_judge = OpenAIJudge(model), OpenAIJudge(model)
    Runner(sync_judge, model, RunnerConfig(), speed=speed)
    BatchRunner(batch_judge, model, RunnerConfig(), state_path=tmp_path / "state", speed=speed)
    assert sync_judge._speed is speed and batch_judge._speed is speed
