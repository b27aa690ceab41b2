"""Checks shared by every loader; each failure names the file, line and field."""

from __future__ import annotations

from pathlib import Path

from mmjudge.errors import DatasetError


def where(path: Path, line: int | None = None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def check_grade(value: object, grades: list[int], path: Path, line: int, annotator: str) -> int:
    """A human grade must be an integer on the declared scale."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DatasetError(
            f"{where(path, line)}: field 'labels.{annotator}' must be a number on the scale "
            f"{grades}, got {value!r}"
        )
    try:
        number = float(value)
    except ValueError:
        raise DatasetError(
            f"{where(path, line)}: field 'labels.{annotator}' must be a number on the scale "
            f"{grades}, got {value!r}"
        ) from None
    if not number.is_integer() or int(number) not in grades:
        raise DatasetError(
            f"{where(path, line)}: field 'labels.{annotator}' is {value!r}, outside the "
            f"declared scale {grades}; fix the label or the dataset's scale.grades"
        )
    return int(number)


def resolve_image(raw: object, root: Path, path: Path, line: int) -> tuple[str, str]:
    """Resolve one image reference to (absolute path or URL, name as written).

    URLs pass through; local paths must be relative, stay inside the dataset root and exist.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise DatasetError(
            f"{where(path, line)}: field 'images' must hold non-empty path strings, got {raw!r}"
        )
    if raw.startswith(("http://", "https://")):
        return raw, raw
    candidate = Path(raw)
    if candidate.is_absolute():
        raise DatasetError(
            f"{where(path, line)}: field 'images' has absolute path '{raw}'; "
            "use a path relative to the dataset root"
        )
    resolved = (root / candidate).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise DatasetError(
            f"{where(path, line)}: field 'images' path '{raw}' escapes the dataset root {root}; "
            "keep images inside the dataset folder"
        )
    if not resolved.is_file():
        raise DatasetError(
            f"{where(path, line)}: field 'images' names '{raw}', which does not exist under {root}"
        )
    return str(resolved), raw


class DuplicateCheck:
    """Remembers (query, result) pairs to reject duplicates with both line numbers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: dict[tuple[str, str], int] = {}

    def add(self, query_id: str, result_id: str, line: int) -> None:
        key = (query_id, result_id)
        first = self.seen.get(key)
        if first is not None:
            raise DatasetError(
                f"{where(self.path, line)}: duplicate pair query_id='{query_id}', "
                f"result_id='{result_id}' (first seen on line {first}); keep one row per pair"
            )
        self.seen[key] = line
