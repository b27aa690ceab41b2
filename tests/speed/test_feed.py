"""A catalogue checked before it is prepared: the check's child prepares the items and sends
them to the calls' pass, so this process converts no HTML; a child that stops early leaves
the rest to this process, and a pass stopped early leaves no half-written cache entry."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path

import pytest

from mmjudge.data import load_dataset
from mmjudge.data.schema import dataset_root
from mmjudge.engine.examples import ExampleStream
from mmjudge.speed import FAST, survey_child
from mmjudge.speed.feed import PreparedFeed
from mmjudge.speed.pipes import write_message
from tests.engine.test_example_stream import _catalogue

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")

PAGES = [f"<div><style>p{{}}</style><p>Walnut &amp; brass {i}</p></div>" for i in range(100)]


@pytest.fixture
def forkable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any items file forks, whatever threads the test runner keeps."""
    monkeypatch.setattr(survey_child, "MIN_BYTES", 1)
    monkeypatch.setattr(survey_child, "_other_threads", lambda: False)


def _expected(stream: ExampleStream) -> list[tuple[tuple[str, str], ...]]:
    """The items prepared here, without any cache."""
    cfg = stream.cfg.dataset
    return [example.fields for example in load_dataset(cfg, seed=stream.cfg.seed)]


def _checked(stream: ExampleStream) -> tuple[int, list[PreparedFeed]]:
    """The check, its child sending the items to ``stream``: the count, and the feed."""
    fed: list[PreparedFeed] = []

    def take(feed: PreparedFeed) -> None:
        fed.append(feed)
        stream.take_feed(feed)

    items = dataset_root(stream.cfg.dataset) / stream.cfg.dataset.items
    counts = survey_child.survey_while(stream.survey, stream, items, lambda: None, take, FAST)
    return counts.items, fed


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_calls_take_the_items_the_child_prepared(
    tmp_path: Path, forkable: None, conversions: list[str]
) -> None:
    stream = _catalogue(tmp_path / "data", PAGES)
    items, fed = _checked(stream)
    assert items == 100 and len(fed) == 1
    fields = [example.fields for example in stream]  # the calls' pass
    assert conversions == []  # every page was converted in the child
    assert dict(fields[7])["description"] == "Walnut & brass 7"
    assert fields == _expected(stream)
    assert len(list((tmp_path / "prepared").glob("*.jsonl"))) == 1  # the child wrote the cache
    assert [example.fields for example in stream] == fields  # a later pass: kept


def test_a_child_that_stops_early_leaves_the_rest_to_this_process(tmp_path: Path) -> None:
    stream = _catalogue(tmp_path / "data", PAGES)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # sends two chunks, then dies
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as pipe:
                items = list(itertools.islice(load_dataset(stream.cfg.dataset), 64))
                write_message(pipe, items[:32])
                write_message(pipe, items[32:])
        finally:
            os._exit(0)
    os.close(write_end)
    feed = PreparedFeed(pid, os.fdopen(read_end, "rb"))
    stream.take_feed(feed)
    fields = [example.fields for example in stream]
    assert feed.received == 64 and not feed.complete
    assert fields == _expected(stream)  # nothing lost, nothing twice, in file order


def test_a_pass_stopped_early_leaves_no_half_written_entry(tmp_path: Path, forkable: None) -> None:
    stream = _catalogue(tmp_path / "data", PAGES * 40)  # enough that the child is still busy
    _items, (feed,) = _checked(stream)
    first = list(itertools.islice(iter(stream), 5))  # the calls stop after five
    assert len(first) == 5
    stream.close()
    prepared = tmp_path / "prepared"
    assert not list(prepared.glob("*.jsonl")) and not list(prepared.glob(".*"))
    assert _reaped(feed.pid)


@pytest.mark.slow  # over half a second
def test_a_cell_that_ends_before_its_calls_stops_the_child(tmp_path: Path, forkable: None) -> None:
    stream = _catalogue(tmp_path / "data", PAGES * 40)
    _items, (feed,) = _checked(stream)
    assert stream.head(3)  # a look at the first items leaves the feed to the calls
    stream.close()
    assert _reaped(feed.pid)
