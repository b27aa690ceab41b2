"""The judge's SDK is loaded before the first call only where a call is certain, and never with
the speed machinery off (:mod:`mmjudge.speed.sdk_warmup`); the engine hands it the SDK's module
and a count of the answers its response cache holds."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mmjudge.engine.prepare import answers_in_cache
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.records import JudgeResponse
from mmjudge.speed import FAST, REFERENCE
from mmjudge.speed.sdk_warmup import sdk_warmer
from tests.engine.test_example_stream import _dataset
from tests.speed.test_survey_child import _config


def holding(answers: int) -> Callable[[], int]:
    """A response cache that holds ``answers`` answers."""
    return lambda: answers


def test_the_sdk_is_warmed_only_when_calls_are_certain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dataset(tmp_path / "data", 5)
    cfg = _config(root, "model=gpt4o_mini")
    monkeypatch.delitem(sys.modules, "openai", raising=False)
    assert sdk_warmer("openai", cfg, holding(0), FAST) is not None  # nothing cached yet
    assert sdk_warmer("openai", cfg, holding(3), FAST) is not None  # 3 answers, 5 items
    assert sdk_warmer("openai", cfg, holding(5), FAST) is None  # a rerun, maybe
    catalogue = _config(_dataset(tmp_path / "catalogue", 100), "model=gpt4o_mini")
    assert sdk_warmer("openai", catalogue, holding(93), FAST) is None  # 7 prompts repeat others
    assert sdk_warmer("openai", catalogue, holding(80), FAST) is not None
    limited = _config(root, "model=gpt4o_mini", "dataset.limit=3")
    assert sdk_warmer("openai", limited, holding(3), FAST) is None  # 3 items: a rerun, maybe
    assert sdk_warmer("openai", cfg, None, FAST) is not None  # the run reads no cache
    dry = _config(root, "model=gpt4o_mini", "runner.dry_run=true")
    assert sdk_warmer("openai", dry, None, FAST) is None
    assert sdk_warmer(None, cfg, None, FAST) is None  # a judge without an SDK
    monkeypatch.setitem(sys.modules, "openai", sys)
    assert sdk_warmer("openai", cfg, None, FAST) is None  # loaded already


def test_a_cache_that_cannot_be_counted_may_answer_everything(tmp_path: Path) -> None:
    cfg = _config(_dataset(tmp_path / "data", 5), "model=gpt4o_mini")

    def damaged() -> int:
        raise sqlite3.DatabaseError("file is not a database")

    assert sdk_warmer("mmjudge_no_such_sdk", cfg, damaged, FAST) is None


def test_with_the_switch_off_nothing_is_loaded_ahead(tmp_path: Path) -> None:
    cfg = _config(_dataset(tmp_path / "data", 5), "model=gpt4o_mini")
    assert sdk_warmer("mmjudge_no_such_sdk", cfg, None, REFERENCE) is None
    assert sdk_warmer("mmjudge_no_such_sdk", cfg, None, FAST) is not None


def test_the_warmer_imports_the_module_and_keeps_a_missing_one_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 5), "model=gpt4o_mini")
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    warm = sdk_warmer("colorsys", cfg, None, FAST)
    assert warm is not None
    warm()
    assert "colorsys" in sys.modules
    missing = sdk_warmer("mmjudge_no_such_sdk", cfg, None, FAST)
    assert missing is not None
    missing()  # reported by the judge's first call, not here


def test_the_engine_counts_the_answers_its_cache_holds(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    assert answers_in_cache(path) == 0 and not path.exists()  # counting makes no file
    cache = ResponseCache(path)
    cache.put("k1", JudgeResponse(text="1"))
    cache.put("k2", JudgeResponse(text="2"))
    cache.close()
    assert answers_in_cache(path) == 2
