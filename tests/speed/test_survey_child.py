"""The dataset check runs in a forked child while the judge's SDK loads here
(:mod:`mmjudge.speed.survey_child`), only where the child goes on to prepare the items for the
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
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.survey import DatasetSurvey
from mmjudge.engine.cell import typed_config
from mmjudge.engine.examples import ExampleStream
from mmjudge.errors import DatasetError
from mmjudge.speed import FAST, survey_child
from mmjudge.speed.feed import PreparedFeed
from tests.engine.test_example_stream import _dataset
from tests.helpers import compose_config

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


def _items(cfg: SweepConfig) -> Path:
    return dataset_root(cfg.dataset) / cfg.dataset.items


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
    monkeypatch.setattr(survey_child, "MIN_BYTES", 1)
    monkeypatch.setattr(survey_child, "_other_threads", lambda: False)


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

    counts = survey_child.survey_while(
        examples.survey, examples, _items(cfg), warm, feeds.append, FAST
    )
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
    counts = survey_child.survey_while(
        examples.survey,
        examples,
        _items(cfg),
        lambda: warmed.append(len(examples.pids())),
        None,
        FAST,
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
        survey_child.survey_while(
            examples.survey, examples, _items(cfg), lambda: None, feeds.append, FAST
        )
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
    counts = survey_child.survey_while(
        examples.survey, examples, _items(cfg), lambda: None, feeds.append, FAST
    )
    assert counts.items == 20 and feeds == []  # checked here; nothing handed on


def test_an_interrupted_warm_up_stops_the_child(
    tmp_path: Path, forkable: None, feeds: list[PreparedFeed]
) -> None:
    cfg = _config(_dataset(tmp_path / "data", 20))

    def interrupted() -> None:
        raise KeyboardInterrupt

    before = _children()
    with pytest.raises(KeyboardInterrupt):
        survey_child.survey_while(
            ExampleStream(cfg).survey,
            ExampleStream(cfg),
            _items(cfg),
            interrupted,
            feeds.append,
            FAST,
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
    monkeypatch.setattr(survey_child, "_other_threads", lambda: False)
    assert not survey_child._can_fork(_items(cfg), FAST)  # 20 lines are well under MIN_BYTES
    monkeypatch.setattr(survey_child, "MIN_BYTES", 1)
    assert survey_child._can_fork(_items(cfg), FAST)
    stop = threading.Event()
    monkeypatch.setattr(survey_child, "_other_threads", lambda: threading.active_count() > 1)
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not survey_child._can_fork(_items(cfg), FAST)
    finally:
        stop.set()
        thread.join()
