"""``asked_grades.json``: the people's grades a race with ``race.labels=ask`` has asked for,
kept in its sweep folder beside ``race.json`` — each asked item with the round that asked for
it, its inclusion probability π and its grade once a person gave it.

The race writes it as soon as a round's items are drawn and again as grades come in, so a race
stopped while it waits for grades asks for the same items when it is run again (the draw is
kept, never made twice) and no grade once given is asked for again. One writer
(:func:`write_asked_grades`) and one reader (:func:`read_asked_grades`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmjudge.errors import MMJudgeError
from mmjudge.files import write_atomic

#: The file's name in the sweep folder.
ASKED_GRADES_FILE = "asked_grades.json"
#: The file's layout.
ASKED_GRADES_VERSION = 1


@dataclass(frozen=True)
class AskedGrade:
    """One item a race asked a person to grade."""

    round: int
    """The round that asked for it (from 1)."""
    query_id: str
    """Its query id."""
    result_id: str
    """Its result id."""
    probability: float
    """The chance it had of being asked for (π; its estimates weigh it 1/π)."""
    grade: float | None
    """The person's grade, or None while it has not come."""


def write_asked_grades(folder: Path, grades: Sequence[AskedGrade]) -> None:
    """Keep ``grades`` as the folder's ``asked_grades.json`` (written whole, atomically)."""
    data = {
        "schema_version": ASKED_GRADES_VERSION,
        "items": [
            {
                "round": g.round,
                "query_id": g.query_id,
                "result_id": g.result_id,
                "probability": g.probability,
                "grade": g.grade,
            }
            for g in grades
        ],
    }
    write_atomic(Path(folder) / ASKED_GRADES_FILE, json.dumps(data, indent=1) + "\n")


def read_asked_grades(folder: Path) -> tuple[AskedGrade, ...]:
    """The items the race in ``folder`` asked to be graded (none when it has asked for none).

    Raises:
        MMJudgeError: the file cannot be read or is not this layout (one line: the path and
            the fix)."""
    path = Path(folder) / ASKED_GRADES_FILE
    if not path.is_file():
        return ()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MMJudgeError(f"{path}: cannot be read ({error}); move it aside") from None
    if not isinstance(data, dict) or data.get("schema_version") != ASKED_GRADES_VERSION:
        raise MMJudgeError(f"{path}: not a file of asked grades this version wrote; move it aside")
    try:
        return tuple(_asked(entry) for entry in data["items"])
    except (KeyError, TypeError, ValueError) as error:
        raise MMJudgeError(
            f"{path}: not a file of asked grades ({error!r}); move it aside"
        ) from None


def _asked(entry: dict[str, object]) -> AskedGrade:
    grade = entry.get("grade")
    probability = float(entry["probability"])  # type: ignore[arg-type]
    if not (0 < probability <= 1):
        raise ValueError(f"probability {probability}")
    return AskedGrade(
        round=int(entry["round"]),  # type: ignore[call-overload]
        query_id=str(entry["query_id"]),
        result_id=str(entry["result_id"]),
        probability=probability,
        grade=None if grade is None else float(grade),  # type: ignore[arg-type]
    )


def is_known(grade: float | None) -> bool:
    """Whether an asked item's grade has come (not None, not NaN)."""
    return grade is not None and not math.isnan(grade)
