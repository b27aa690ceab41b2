"""Typed ``model.options``: each judge declares the options it reads as a small dataclass.

A judge's ``Options`` class lists every option with its type and default, so an option the
judge does not know (a typo) fails before any call, naming the ones it accepts, and a value
of the wrong type fails in one line naming the setting. Checks that depend on several values
(a span's order, a weight between 0 and 1) stay with the judge that uses them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Self, get_type_hints

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError

_NUMBERS: tuple[Any, ...] = (float, int, float | None, int | None)
_TEXTS: tuple[Any, ...] = (str, str | None)


@dataclasses.dataclass(frozen=True)
class JudgeOptions:
    """The options of a judge that reads none (any option given is refused)."""

    #: How the judge is named in "… are not <family> options".
    family: ClassVar[str] = "judge"

    @classmethod
    def parse(cls, model: ModelConfig) -> Self:
        """The options in ``model.options``; ConfigError for an unknown name or a bad value."""
        given = dict(model.options or {})
        names = sorted(f.name for f in dataclasses.fields(cls))
        unknown = sorted(set(given) - set(names))
        if unknown:
            accepted = f"use: {', '.join(names)}" if names else "it takes none"
            raise ConfigError(
                f"model.options {unknown} for '{model.name}' are not {cls.family} options; "
                f"{accepted}"
            )
        hints = get_type_hints(cls)
        return cls(**{key: _typed(model.name, key, v, hints[key]) for key, v in given.items()})


def _typed(name: str, key: str, value: Any, hint: Any) -> Any:
    """``value`` as the option's declared type: numbers and text are converted, containers
    are kept as given (their judge checks them)."""
    if value is None:
        return None
    if hint in _NUMBERS:
        if isinstance(value, bool):
            value = "true" if value else "false"
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(
                f"model.options.{key}={value!r} for '{name}' must be a number"
            ) from None
    if hint in _TEXTS:
        return str(value)
    return value
