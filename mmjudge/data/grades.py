"""Human grades: from a raw cell or JSON value to a grade on the dataset's scale.

Every loader reads its labels through :class:`GradeReader`, so the dataset's declared rule
(``dataset.grade_rule``, ``dataset.grade_bins``) and the table loader's ``grade_map`` act the
same way whatever the file format. Labels that are the mean of several raters (``1.33``,
``2.67``) are placed with a rule instead of listing every fraction:

- ``exact`` (default): the value must be a whole number;
- ``round``: to the nearest whole number, halves up (``2.5`` -> ``3``);
- ``floor`` / ``ceil``: down / up to a whole number;
- ``bins``: ``grade_bins`` holds one more edge than the scale has grades; a value in
  ``[edge_i, edge_i+1)`` gets the i-th grade, the last bin includes its upper edge, and a value
  outside the first and last edge is an error.

The rounded number is then looked up in ``grade_map`` when there is one, and must lie on the
scale. A value no rule can place is a one-line :class:`DatasetError` naming file, line, field.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.config import DatasetConfig
from mmjudge.data.validation import shown, where
from mmjudge.errors import ConfigError, DatasetError


def grade_key(raw: object) -> str:
    """Canonical text of a raw grade, so ``2``, ``2.0`` and ``" 2 "`` look up alike."""
    text = str(raw).strip()
    number = _number(text)
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return str(number) if isinstance(number, int) else text


def _number(raw: int | float | str) -> int | float | None:
    """The value as a finite number (a whole number stays an exact ``int``), else ``None``."""
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return raw if math.isfinite(raw) else None
    text = raw.strip()
    try:
        return int(text)
    except ValueError:
        pass  # not an integer literal, or one with more digits than Python converts
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


#: Distinct raw grades a reader remembers (a dataset of free-form fractions stops there).
_PLACED_KEPT = 1024


@dataclass(frozen=True)
class GradeReader:
    """Places raw grades on the scale; one per dataset, built by :meth:`from_config`."""

    grades: tuple[int, ...]
    rule: str = "exact"
    bins: tuple[float, ...] = ()
    grade_map: Mapping[str, int] | None = None
    """Raw grade (canonical text, see :func:`grade_key`) -> grade on the scale."""
    _placed: dict[tuple[type, object], int] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    """Grades already placed, by raw value and its type: a dataset repeats a handful of
    raw grades over every line."""

    @classmethod
    def from_config(cls, cfg: DatasetConfig, grade_map: Any = None) -> GradeReader:
        grades = tuple(cfg.scale.grades)
        cfg.check_grade_rule()
        if cfg.grade_rule == "bins" and grade_map is not None:
            raise ConfigError(
                "dataset.grade_rule=bins places values on the scale directly; drop "
                "dataset.columns.grade_map, or use grade_rule round/floor/ceil with it"
            )
        return cls(grades, cfg.grade_rule, tuple(cfg.grade_bins), _grade_map(grade_map, grades))

    def read(self, raw: object, path: Path, line: int, field: str) -> int | None:
        """The grade in one cell or value; ``None`` for an empty one (no grade given)."""
        kind = type(raw)
        if kind is int or kind is str or kind is float:
            placed = self._placed.get((kind, raw))
            if placed is not None:
                return placed
            grade = self._read(raw, path, line, field)
            if grade is not None and len(self._placed) < _PLACED_KEPT:
                self._placed[(kind, raw)] = grade
            return grade
        return self._read(raw, path, line, field)

    def _read(self, raw: object, path: Path, line: int, field: str) -> int | None:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return None
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            raise self._error(
                path, line, field, f"must be a grade on the scale {self.scale}, got {shown(raw)}"
            )
        if self.grade_map is not None and self.rule == "exact":
            return self._mapped(grade_key(raw), raw, path, line, field)
        number = _number(raw)
        if number is None:
            raise self._error(
                path, line, field, f"must be a number on the scale {self.scale}, got {shown(raw)}"
            )
        if self.rule == "bins":
            return self._binned(number, raw, path, line, field)
        whole = self._rounded(number)
        if whole is None:
            raise self._error(
                path,
                line,
                field,
                f"is {shown(raw)}, outside the declared scale {self.scale} (not a whole "
                "number); for labels that are the mean of several raters set "
                "dataset.grade_rule to round, floor, ceil or bins",
            )
        if self.grade_map is not None:
            return self._mapped(str(whole), raw, path, line, field)
        if whole not in self.grades:
            rounded = "" if whole == number else f" (read as {shown(whole)})"
            raise self._error(
                path,
                line,
                field,
                f"is {shown(raw)}{rounded}, outside the declared scale {self.scale}; "
                "fix the label, the dataset's scale.grades, or map raw grades with "
                "dataset.columns.grade_map (table loader) or dataset.grade_rule",
            )
        return whole

    def _rounded(self, number: int | float) -> int | None:
        if isinstance(number, int):
            return number
        if self.rule == "round":
            return math.floor(number + 0.5)
        if self.rule == "floor":
            return math.floor(number)
        if self.rule == "ceil":
            return math.ceil(number)
        return int(number) if number.is_integer() else None

    def _binned(self, number: int | float, raw: object, path: Path, line: int, field: str) -> int:
        edges = self.bins
        if not edges[0] <= number <= edges[-1]:
            raise self._error(
                path,
                line,
                field,
                f"is {shown(raw)}, outside dataset.grade_bins [{edges[0]}, {edges[-1]}]",
            )
        index = min(bisect_right(edges, number) - 1, len(self.grades) - 1)
        return self.grades[index]

    def _mapped(self, key: str, raw: object, path: Path, line: int, field: str) -> int:
        assert self.grade_map is not None
        if key not in self.grade_map:
            read_as = "" if key == grade_key(raw) else f" (read as {shown(key)})"
            raise self._error(
                path,
                line,
                field,
                f"is {shown(raw)}{read_as}, which dataset.columns.grade_map does not map; it "
                f"maps {', '.join(self.grade_map)}",
            )
        return self.grade_map[key]

    @property
    def scale(self) -> list[int]:
        return list(self.grades)

    def _error(self, path: Path, line: int, field: str, problem: str) -> DatasetError:
        return DatasetError(f"{where(path, line)}: field '{field}' {problem}")


def _grade_map(raw: Any, grades: Sequence[int]) -> dict[str, int] | None:
    """``dataset.columns.grade_map`` checked: every target must be on the scale."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not raw:
        raise ConfigError(
            f"dataset.columns.grade_map must map raw grades to grades on the scale "
            f"{list(grades)}, e.g. {{1: 0, 2: 1}}; got {raw!r}"
        )
    out: dict[str, int] = {}
    for source, target in raw.items():
        if isinstance(target, bool) or not isinstance(target, int) or target not in grades:
            raise ConfigError(
                f"dataset.columns.grade_map maps {source!r} to {target!r}, which is not on the "
                f"scale {list(grades)} (dataset.scale.grades)"
            )
        out[grade_key(source)] = target
    return out
