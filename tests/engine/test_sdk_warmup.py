"""The judge's SDK is loaded before the first call only where a call is certain
(:mod:`mmjudge.engine.sdk_warmup`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mmjudge.engine import sdk_warmup
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.judges.registry import judge_class
from tests.engine.test_example_stream import _dataset
from tests.speed.test_survey_child import _config


def test_the_sdk_is_warmed_only_when_calls_are_certain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dataset(tmp_path / "data", 5)
    cache_path = tmp_path / "cache.sqlite"
    cfg = _config(root, "model=gpt4o_mini")
    judge = judge_class(cfg.model)
    monkeypatch.delitem(sys.modules, judge.sdk, raising=False)  # type: ignore[attr-defined]
    assert sdk_warmup.sdk_warmer(judge, cfg, cache_path) is not None  # no cache yet
    cache = ResponseCache(cache_path)
    assert sdk_warmup.sdk_warmer(judge, cfg, cache_path) is not None  # an empty one
    cache.close()
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 3)
    assert sdk_warmup.sdk_warmer(judge, cfg, cache_path) is not None  # 3 answers, 5 items
    catalogue = _config(_dataset(tmp_path / "catalogue", 100), "model=gpt4o_mini")
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 93)  # 7 prompts repeat others
    assert sdk_warmup.sdk_warmer(judge, catalogue, cache_path) is None  # a rerun, maybe
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 80)
    assert sdk_warmup.sdk_warmer(judge, catalogue, cache_path) is not None
    limited = _config(root, "model=gpt4o_mini", "dataset.limit=3")
    assert sdk_warmup.sdk_warmer(judge, limited, cache_path) is None  # 3 items: a rerun, maybe
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 5)
    assert sdk_warmup.sdk_warmer(judge, cfg, cache_path) is None  # a rerun, maybe
    assert (
        sdk_warmup.sdk_warmer(
            judge, _config(root, "model=gpt4o_mini", "runner.cache=false"), cache_path
        )
        is not None
    )
    assert (
        sdk_warmup.sdk_warmer(
            judge, _config(root, "model=gpt4o_mini", "runner.dry_run=true"), cache_path
        )
        is None
    )
    assert (
        sdk_warmup.sdk_warmer(judge_class(_config(root, "model=lexical").model), cfg, cache_path)
        is None
    )
    monkeypatch.setitem(sys.modules, judge.sdk, sys)  # type: ignore[attr-defined]
    assert (
        sdk_warmup.sdk_warmer(
            judge, _config(root, "model=gpt4o_mini", "runner.cache=false"), cache_path
        )
        is None
    )
