"""HTML in text fields, turned into the text a reader of the page would see.

Asked for by ``dataset.html_to_text`` (every text field) or ``dataset.html_fields`` (some).
The conversion is html-text's (lxml underneath): ``<script>``, ``<style>`` and comments are
dropped, entities decoded, block elements become line breaks and runs of whitespace one space.
It runs before text is cut to ``dataset.max_text_tokens`` and before tokens are counted, so the
judge, the forecast and the report all see the same cleaned text.
"""

from __future__ import annotations

from collections.abc import Iterable

from mmjudge.config import DatasetConfig


def html_to_text(value: str) -> str:
    """The visible text of an HTML fragment or page (plain text passes through, tidied)."""
    if not value.strip():
        return ""
    import html_text  # lxml underneath: loaded only for datasets that ask for the conversion

    return str(html_text.extract_text(value))


def html_columns(cfg: DatasetConfig) -> frozenset[str] | None:
    """The fields to convert: ``None`` for none, an empty set for every field."""
    if cfg.html_to_text:
        return frozenset()
    return frozenset(cfg.html_fields) or None


def clean_fields(
    fields: Iterable[tuple[str, str]], columns: frozenset[str]
) -> tuple[tuple[str, str], ...]:
    """``fields`` with HTML converted in the ``columns`` named (every one when empty)."""
    return tuple(
        (name, html_to_text(value) if not columns or name in columns else value)
        for name, value in fields
    )
