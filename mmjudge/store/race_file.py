"""``race.json``: the decisions of a race (``mmjudge race``), kept in its sweep folder beside the
cells' run folders. Written after every round, so a race stopped between rounds or in one is
taken up where it stopped; read by the report's race section."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from mmjudge.errors import MMJudgeError
from mmjudge.files import write_atomic

#: The file's name in the sweep folder.
RACE_FILE = "race.json"
#: The layout's version; a file of another version is refused.
RACE_SCHEMA_VERSION = 1


def finite(value: Any) -> Any:
    """``value`` with every number that is not finite written as null (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def write_race_file(folder: Path, record: dict[str, Any]) -> None:
    """Write ``record`` (numbers that are not finite as null) as the folder's race file."""
    data = finite({"schema_version": RACE_SCHEMA_VERSION, **record})
    write_atomic(Path(folder) / RACE_FILE, json.dumps(data, indent=1, allow_nan=False) + "\n")


def read_race_file(folder: Path) -> dict[str, Any] | None:
    """The sweep folder's race file, or None when it holds none."""
    path = Path(folder) / RACE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MMJudgeError(f"{path}: cannot be read ({error}); move it aside") from None
    if not isinstance(data, dict) or data.get("schema_version") != RACE_SCHEMA_VERSION:
        raise MMJudgeError(f"{path}: not a race file this version of mmjudge wrote; move it aside")
    return data
