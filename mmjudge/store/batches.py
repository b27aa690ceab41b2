"""``batches.json``: the provider batches a run folder has submitted (``runner.mode=batch``).

Written atomically after every change, so a run killed at any moment leaves the old file or
the new one; a run started again in the same folder reads it and collects the batches still
marked ``submitted`` instead of submitting their items again.

The layout::

    {
      "schema_version": 1,
      "batches": [
        {
          "local_id": 1,                   # order of submission in this run directory
          "id": "batch_abc",               # the provider's batch id
          "provider": "openai",
          "base_url": "https://api.openai.com/v1",
          "model_id": "gpt-4o-2024-08-06",
          "attempt": 1,                    # 1 for first submissions, 2+ for follow-ups
          "state": "submitted",            # "submitted" until the results are written
          "status": "in_progress",         # the provider's last reported status
          "counts": {...},                 # the provider's last reported request counts
          "n_requests": 5, "n_bytes": 5120,
          "submitted_at": "2026-01-01T12:00:00+00:00", "submitted_ts": 1767268800.0,
          "ended_at": null, "collected_at": null,
          "info": {"input_file_id": "file-..."},   # provider-specific ids
          "items": {"mmj-3f2a...": "q01\\tp017"}   # custom_id -> item key (query \\t result)
        }
      ]
    }
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge.errors import ConfigError
from mmjudge.files import write_atomic

STATE_FILE = "batches.json"
STATE_SCHEMA_VERSION = 1


@dataclass
class BatchRecord:
    """One submitted batch, as kept in the state file (see the module doc)."""

    local_id: int
    """Order of submission in this run folder."""
    id: str
    """The provider's batch id."""
    provider: str
    """The provider's name."""
    base_url: str
    """The endpoint it was submitted to."""
    model_id: str
    """The model its requests ask for."""
    attempt: int
    """1 for a first submission, 2 and up for follow-ups."""
    items: dict[str, str]
    """Each request's custom id → its item (``query<TAB>result``)."""
    n_requests: int
    """Requests in the batch."""
    n_bytes: int
    """Size of the submitted file."""
    submitted_at: str
    """When it was submitted, UTC, ISO 8601."""
    submitted_ts: float
    """The same as a Unix time."""
    state: str = "submitted"
    """``submitted`` until its results are written."""
    status: str = ""
    """The provider's last reported status."""
    counts: dict[str, int] = field(default_factory=dict)
    """The provider's last reported request counts."""
    ended_at: str | None = None
    """When the provider ended it."""
    collected_at: str | None = None
    """When its results were written."""
    info: dict[str, Any] = field(default_factory=dict)
    """Provider-specific ids (the input file's, the output file's…)."""


def _record(data: Mapping[str, Any]) -> BatchRecord:
    """A batch from its entry in the file (keys of later versions left out)."""
    names = {f.name for f in dataclasses.fields(BatchRecord)}
    return BatchRecord(**{k: v for k, v in data.items() if k in names})


class BatchState:
    """The batches of one run directory, saved to ``batches.json`` after every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches: list[BatchRecord] = []
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.batches = [_record(b) for b in data.get("batches", [])]
            except (ValueError, TypeError, AttributeError) as error:
                raise ConfigError(
                    f"{path} cannot be read ({error}); it lists the batches this run submitted: "
                    "repair it, or remove it to submit every unfinished item again"
                ) from None

    def outstanding(self, provider: str, base_url: str) -> list[BatchRecord]:
        """Batches of this provider and endpoint whose results are not written yet."""
        return [
            b
            for b in self.batches
            if b.state == "submitted" and b.provider == provider and b.base_url == base_url
        ]

    def add(self, record: BatchRecord) -> None:
        self.batches.append(record)
        self.save()

    def next_local_id(self) -> int:
        return max((b.local_id for b in self.batches), default=0) + 1

    def save(self) -> None:
        """Write the state atomically: a kill at any moment leaves the old or the new file."""
        data = {
            "schema_version": STATE_SCHEMA_VERSION,
            "batches": [dataclasses.asdict(b) for b in self.batches],
        }
        write_atomic(self.path, json.dumps(data, indent=1) + "\n")
