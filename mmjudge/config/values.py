"""The value checks the config dataclasses share: one-line refusals that name the setting,
its value and what is allowed."""

from __future__ import annotations

import math

from mmjudge.errors import ConfigError


def require(ok: bool, setting: str, value: object, valid: str) -> None:
    """Refuse a setting in one line that names it, its value and the valid range."""
    if not ok:
        text = repr(value)
        text = text if len(text) <= 60 else text[:59] + "…"
        raise ConfigError(f"{setting}={text} is not allowed; {valid}")


def _whole(value: object, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def is_finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_name(setting: str, value: object) -> None:
    """A name (a judge's, a dataset's, a prompt's): some text, on one line. Names are kept on
    every row and in folder names (made safe there: :func:`mmjudge.config.names.path_part`)."""
    text = value if isinstance(value, str) else ""
    require(bool(text.strip()), setting, value, "give a name (some text)")
    require(
        not any(ord(c) < 32 or c == "\x7f" for c in text),
        setting,
        value,
        "a name is one line: remove the newline, tab or other control character",
    )


def check_whole(setting: str, value: object, minimum: int, null: str = "") -> None:
    """A whole number of at least ``minimum``; ``null`` says what null means, if allowed."""
    if null and value is None:
        return
    valid = f"use a whole number of at least {minimum}" + (f", or null {null}" if null else "")
    require(_whole(value, minimum), setting, value, valid)
