"""Shared fixtures and collection rules.

- ``loopback``: the loopback server that speaks the providers' wire formats.
- Tests marked ``live`` call real provider APIs: they run only when the ``-m`` expression
  names them (``pytest -m live``); any other selection, ``-m "not slow"`` included, leaves
  them out.
- The running test is recorded so that the sweep helpers in ``tests/helpers.py`` can insist
  that a test starting a sweep subprocess is marked ``slow``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest

from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import RUNNING_TEST


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A started loopback server on 127.0.0.1 (a free port), stopped after the test."""
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "live" in (config.getoption("markexpr") or ""):
        return
    live = [item for item in items if item.get_closest_marker("live") is not None]
    if live:
        config.hook.pytest_deselected(items=live)
        items[:] = [item for item in items if item.get_closest_marker("live") is None]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    token = RUNNING_TEST.set(item)
    try:
        return (yield)
    finally:
        RUNNING_TEST.reset(token)
