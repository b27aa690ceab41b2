"""Fixtures shared by the judges' tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    """Each SDK whose calls can skip most of its per-call machinery
    (:mod:`mmjudge.judges.wire`), by provider name."""
    return str(request.param)
