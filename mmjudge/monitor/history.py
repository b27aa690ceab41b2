"""The monitoring history: one JSON object per line, one line per check, only ever appended.

Two processes may append at once and a process may be killed while it writes: each entry is
appended with :func:`mmjudge.files.append_jsonl` (one locked ``write``, so two entries never
interleave; a partial last line left by a kill is ended by the next writer), and readers skip
any line that is not a whole JSON object.

Nothing in the file is ever rewritten, so a reader needs no lock.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mmjudge.files import read_jsonl

#: The history file under ``paths.results`` unless ``history=`` names another.
HISTORY = Path("monitor") / "history.jsonl"


def read_history(path: Path) -> list[dict[str, Any]]:
    """Every whole entry of the history, oldest first (none when the file does not exist);
    a partial or unreadable line is skipped."""
    if not path.is_file():
        return []
    return [entry for _, entry in read_jsonl(path, strict=False) if isinstance(entry, dict)]
