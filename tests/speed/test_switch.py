"""One switch turns the speed machinery off (``MMJUDGE_FAST_PATH=0``, :mod:`mmjudge.speed`):
every call then goes through the SDK's own client and nothing is forked or tuned, and a cell
judged either way gives the same rows, labels and costs, so the SDK's path is the reference
the fast path is held to."""

from __future__ import annotations

import asyncio
import gc
import json
import math
from pathlib import Path
from typing import Any

import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.errors import ConfigError
from mmjudge.speed import SWITCH, fast_path_on, survey_child
from mmjudge.speed.collector import quiet_collector
from mmjudge.speed.event_loop import TurnPacer, loop_factory
from mmjudge.speed.report_child import ReportChild
from mmjudge.speed.wire import WireSender
from mmjudge.store import RunSummary
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import compose_config, isolated_overrides

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
MODELS = {"openai": "gpt4o_mini", "anthropic": "claude_haiku45"}
#: Row fields that differ between two runs by nature: when, how long, which run.
TIMING = {"latency_s", "started_at", "finished_at", "run_id", "timestamp", "created_at"}


@pytest.mark.parametrize("value", ["", "1", "on", "TRUE", " yes "])
def test_the_switch_is_on_unless_it_says_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(SWITCH, value)
    assert fast_path_on()


@pytest.mark.parametrize("value", ["0", "off", "False", "no"])
def test_the_switch_turns_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(SWITCH, value)
    assert not fast_path_on()


def test_a_value_neither_on_nor_off_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SWITCH, "maybe")
    with pytest.raises(ConfigError) as refused:
        fast_path_on()
    message = str(refused.value)
    assert "\n" not in message
    assert f"{SWITCH}='maybe'" in message and f"{SWITCH}=0" in message


def test_with_the_switch_off_every_piece_stands_aside(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SWITCH, "0")
    assert loop_factory() is asyncio.new_event_loop
    assert TurnPacer().every_s == math.inf
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    restore = quiet_collector()
    try:
        assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)
    finally:
        restore()
    assert ReportChild.start(lambda: pytest.fail("no child, so nothing is loaded")) is None
    big = tmp_path / "items.jsonl"
    big.write_bytes(b"{}\n" * survey_child.MIN_BYTES)
    monkeypatch.setattr(survey_child, "_other_threads", lambda: False)
    assert not survey_child._can_fork(big)
    monkeypatch.setenv(SWITCH, "1")
    assert survey_child._can_fork(big)  # the same file, the machinery on


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
