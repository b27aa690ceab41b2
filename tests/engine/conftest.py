"""Fixtures shared by the runner's tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The HTML values this process converts to text (html-text counted)."""
    import html_text

    seen: list[str] = []
    real = html_text.extract_text

    def counting(value: str, *args: object, **kwargs: object) -> str:
        seen.append(value)
        return str(real(value, *args, **kwargs))  # type: ignore[arg-type]

    monkeypatch.setattr(html_text, "extract_text", counting)
    return seen
