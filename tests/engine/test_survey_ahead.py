"""The dataset check runs in a forked child while the judge's SDK loads here
(:mod:`mmjudge.engine.survey_ahead`), only where the child goes on to prepare the items for the
calls, and a bad dataset still fails with the message the in-process check gives."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mmjudge.config import SweepConfig
from mmjudge.data.schema import Example
from mmjudge.data.survey import DatasetSurvey
from mmjudge.engine import survey_ahead
from mmjudge.engine.cell import typed_config
from mmjudge.engine.examples import ExampleStream
from mmjudge.engine.feed import PreparedFeed
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.errors import DatasetError
from mmjudge.judges.registry import judge_class
from tests.engine.test_example_stream import _dataset
from tests.helpers import compose_config

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


def _config(root: Path, *extra: str) -> SweepConfig:
    overrides = ["dataset=demo_fashion", f"dataset.path={root}", "dataset.annotators=[a]"]
    return typed_config(compose_config([*overrides, *extra]))


class PassLog:
    """Examples that note which process iterates them (in a file both processes see)."""

    def __init__(self, inner: ExampleStream, log: Path) -> None:
        self.inner = inner
        self.log = log

    def __iter__(self) -> Iterator[Example]:
        self._note()
        return iter(self.inner)

    def survey(self) -> DatasetSurvey:
        self._note()
        return self.inner.survey()

    def _note(self) -> None:
        with self.log.open("a") as out:
            out.write(f"{os.getpid()}\n")

    def pids(self) -> list[int]:
        return [int(line) for line in self.log.read_text().split()] if self.log.exists() else []


@pytest.fixture
def forkable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any items file forks, whatever threads the test runner keeps."""
    monkeypatch.setattr(survey_ahead, "MIN_BYTES", 1)
    monkeypatch.setattr(survey_ahead, "_other_threads", lambda: False)


@pytest.fixture
def feeds() -> Iterator[list[PreparedFeed]]:
    """Where the child's prepared items are handed (closed at the end of the test)."""
    taken: list[PreparedFeed] = []
    yield taken
    for feed in taken:
        feed.close()


def test_the_counts_come_from_a_child_while_the_sdk_loads_here(
    tmp_path: Path, forkable: None, feeds: list[PreparedFeed]
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 300))
    examples = PassLog(ExampleStream(cfg), tmp_path / "passes")
    warmed: list[tuple[int, float]] = []

    def warm() -> None:
        time.sleep(0.05)  # the child runs meanwhile
        warmed.append((os.getpid(), time.monotonic()))

    counts = survey_ahead.survey_while(examples.survey, examples, cfg, warm, feeds.append)
    assert warmed and warmed[0][0] == os.getpid()
    assert examples.pids() and examples.pids()[0] != os.getpid()  # the check ran in a child
    assert len(feeds) == 1  # and goes on to prepare the items for the calls
    assert counts == ExampleStream(cfg).survey()
    assert counts.items == 300 and counts.field_names == {"name"}


def test_without_items_to_prepare_the_check_runs_here_then_the_sdk_loads(
    tmp_path: Path, forkable: None
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 300))
    examples = PassLog(ExampleStream(cfg), tmp_path / "passes")
    warmed: list[int] = []
    counts = survey_ahead.survey_while(
        examples.survey, examples, cfg, lambda: warmed.append(len(examples.pids()))
    )
    assert examples.pids() == [os.getpid()]  # no child: a check alone saved nothing
    assert warmed == [1]  # the SDK loaded after the check
    assert counts == ExampleStream(cfg).survey()


def test_a_bad_line_fails_with_the_in_process_message(
    tmp_path: Path, forkable: None, feeds: list[PreparedFeed]
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 50, bad_line=17))
    with pytest.raises(DatasetError) as in_process:
        ExampleStream(cfg).survey()
    examples = PassLog(ExampleStream(cfg), tmp_path / "passes")
    with pytest.raises(DatasetError) as beside:
        survey_ahead.survey_while(examples.survey, examples, cfg, lambda: None, feeds.append)
    assert str(beside.value) == str(in_process.value)
    assert "items.jsonl:18" in str(beside.value)
    child, parent = examples.pids()
    assert child != os.getpid() and parent == os.getpid()  # the child failed; checked here


def test_a_child_that_dies_leaves_the_check_to_this_process(
    tmp_path: Path, forkable: None, feeds: list[PreparedFeed]
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 20))
    parent = os.getpid()

    class DiesInChild(ExampleStream):
        def survey(self) -> DatasetSurvey:
            if os.getpid() != parent:
                os.kill(os.getpid(), 9)
            return super().survey()

    examples = DiesInChild(cfg)
    counts = survey_ahead.survey_while(examples.survey, examples, cfg, lambda: None, feeds.append)
    assert counts.items == 20 and feeds == []  # checked here; nothing handed on


def test_an_interrupted_warm_up_stops_the_child(
    tmp_path: Path, forkable: None, feeds: list[PreparedFeed]
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 20))

    def interrupted() -> None:
        raise KeyboardInterrupt

    before = _children()
    with pytest.raises(KeyboardInterrupt):
        survey_ahead.survey_while(
            ExampleStream(cfg).survey, ExampleStream(cfg), cfg, interrupted, feeds.append
        )
    assert _children() == before  # killed and reaped: no zombie left


def _children() -> set[str]:
    task = Path(f"/proc/{os.getpid()}/task")
    found: set[str] = set()
    for thread in task.iterdir():
        found.update((thread / "children").read_text().split())
    return found


def test_no_fork_beside_other_threads_or_for_a_small_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 20))
    monkeypatch.setattr(survey_ahead, "_other_threads", lambda: False)
    assert not survey_ahead._can_fork(cfg)  # 20 lines are well under MIN_BYTES
    monkeypatch.setattr(survey_ahead, "MIN_BYTES", 1)
    assert survey_ahead._can_fork(cfg)
    stop = threading.Event()
    monkeypatch.setattr(survey_ahead, "_other_threads", lambda: threading.active_count() > 1)
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not survey_ahead._can_fork(cfg)
    finally:
        stop.set()
        thread.join()


def test_the_sdk_is_warmed_only_when_calls_are_certain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _dataset(tmp_path / "data", 5)
    cache_path = tmp_path / "cache.sqlite"
    cfg = _config(root, "model=gpt4o_mini")
    judge = judge_class(cfg.model)
    monkeypatch.delitem(sys.modules, judge.sdk, raising=False)  # type: ignore[attr-defined]
    assert survey_ahead.sdk_warmer(judge, cfg, cache_path) is not None  # no cache yet
    cache = ResponseCache(cache_path)
    assert survey_ahead.sdk_warmer(judge, cfg, cache_path) is not None  # an empty one
    cache.close()
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 3)
    assert survey_ahead.sdk_warmer(judge, cfg, cache_path) is not None  # 3 answers, 5 items
    catalogue = _config(_dataset(tmp_path / "catalogue", 100), "model=gpt4o_mini")
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 93)  # 7 prompts repeat others
    assert survey_ahead.sdk_warmer(judge, catalogue, cache_path) is None  # a rerun, maybe
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 80)
    assert survey_ahead.sdk_warmer(judge, catalogue, cache_path) is not None
    limited = _config(root, "model=gpt4o_mini", "dataset.limit=3")
    assert survey_ahead.sdk_warmer(judge, limited, cache_path) is None  # 3 items: a rerun, maybe
    monkeypatch.setattr(ResponseCache, "__len__", lambda self: 5)
    assert survey_ahead.sdk_warmer(judge, cfg, cache_path) is None  # a rerun, maybe
    assert (
        survey_ahead.sdk_warmer(
            judge, _config(root, "model=gpt4o_mini", "runner.cache=false"), cache_path
        )
        is not None
    )
    assert (
        survey_ahead.sdk_warmer(
            judge, _config(root, "model=gpt4o_mini", "runner.dry_run=true"), cache_path
        )
        is None
    )
    assert (
        survey_ahead.sdk_warmer(judge_class(_config(root, "model=lexical").model), cfg, cache_path)
        is None
    )
    monkeypatch.setitem(sys.modules, judge.sdk, sys)  # type: ignore[attr-defined]
    assert (
        survey_ahead.sdk_warmer(
            judge, _config(root, "model=gpt4o_mini", "runner.cache=false"), cache_path
        )
        is None
    )
