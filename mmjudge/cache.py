"""SQLite response cache: an answer paid for once is never paid for again.

Keys hash the canonical request (provider, model, endpoint, rendered prompt, image hashes,
generation parameters) and leave out anything that cannot change the answer (timeouts,
retries). The database runs in WAL mode so a reader never blocks the writer and a run killed
mid-write leaves a consistent file; several processes may share one file.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from mmjudge.config import ModelConfig
from mmjudge.providers.registry import endpoint_override
from mmjudge.records import JudgeRequest, JudgeResponse, Usage, canonical_json, sha256_text


def request_key(model: ModelConfig, request: JudgeRequest) -> str:
    """Content hash of everything that determines the answer."""
    return sha256_text(
        canonical_json(
            {
                "provider": model.provider,
                "model": model.model_id,
                "base_url": endpoint_override(model),
                "system": request.system,
                "prompt": request.prompt,
                "images": [[image.sha256, image.width, image.height] for image in request.images],
                "image_detail": model.image_detail if request.images else None,
                "temperature": model.temperature,
                "max_tokens": model.max_tokens,
                "options": dict(model.options),
                "grades": list(request.grades),
            }
        )
    )


class ResponseCache:
    """Maps request keys to provider responses."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, response TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> JudgeResponse | None:
        row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        data: dict[str, Any] = json.loads(row[0])
        return JudgeResponse(
            text=data["text"],
            usage=Usage.from_dict(data.get("usage")),
            raw_usage=data.get("raw_usage") or {},
            latency_s=float(data.get("latency_s", 0.0)),
            model=data.get("model", ""),
            stop_reason=data.get("stop_reason"),
            batch=bool(data.get("batch", False)),
        )

    def put(self, key: str, response: JudgeResponse) -> None:
        payload = json.dumps(
            {
                "text": response.text,
                "usage": response.usage.to_dict(),
                "raw_usage": response.raw_usage,
                "latency_s": response.latency_s,
                "model": response.model,
                "stop_reason": response.stop_reason,
                "batch": response.batch,
            }
        )
        self._db.execute(
            "INSERT OR REPLACE INTO responses (key, response, created) VALUES (?, ?, ?)",
            (key, payload, time.time()),
        )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()
