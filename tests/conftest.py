"""Shared fixtures: the loopback server that speaks the providers' wire formats."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.loopback_server import LoopbackServer


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A started loopback server on 127.0.0.1 (a free port), stopped after the test."""
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()
