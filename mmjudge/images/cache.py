"""Encoded images kept on disk (and the most recent in memory), keyed by the source's content
hash and :meth:`~mmjudge.images.settings.ImageSettings.key`."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

from mmjudge.files import write_atomic
from mmjudge.images.settings import ImageSettings

logger = logging.getLogger(__name__)


class EncodedPayload(NamedTuple):
    """The encoded bytes of one preprocessed image, before they are wrapped for sending."""

    media_type: str
    """MIME type of the bytes (``image/jpeg``, ``image/png``)."""
    width: int
    """Width in pixels."""
    height: int
    """Height in pixels."""
    base64: str
    """The encoded file, base64 without a ``data:`` prefix."""


class ImageCache:
    """Encoded images on disk, one small JSON file per (source hash, settings) pair.

    Files are written to a temporary name and moved into place with :func:`os.replace`, so
    several processes may share a directory and a reader never sees half a file. A file that
    cannot be read back is treated as a miss and rewritten. The most recent entries are also
    kept in memory.
    """

    def __init__(self, directory: str | Path, memory_items: int = 128) -> None:
        self.directory = Path(directory)
        self.memory_items = max(0, memory_items)
        self._memory: OrderedDict[tuple[str, str], EncodedPayload] = OrderedDict()
        self._lock = threading.Lock()
        self._warned = False

    def path_for(self, sha256: str, settings: ImageSettings) -> Path:
        """Where the entry for this source hash and these settings lives."""
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a sha256 hex digest: {sha256!r}")
        settings_hash = hashlib.sha256(settings.key().encode("utf-8")).hexdigest()[:16]
        return self.directory / sha256[:2] / f"{sha256}.{settings_hash}.json"

    def get(self, sha256: str, settings: ImageSettings) -> EncodedPayload | None:
        """The cached payload, or None."""
        memo_key = (sha256, settings.key())
        with self._lock:
            hit = self._memory.get(memo_key)
            if hit is not None:
                self._memory.move_to_end(memo_key)
                return hit
        path = self.path_for(sha256, settings)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            if entry.get("key") != settings.key() or entry.get("sha256") != sha256:
                return None
            payload = EncodedPayload(
                media_type=str(entry["media_type"]),
                width=int(entry["width"]),
                height=int(entry["height"]),
                base64=str(entry["base64"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        self._remember(memo_key, payload)
        return payload

    def put(self, sha256: str, settings: ImageSettings, payload: EncodedPayload) -> None:
        """Store a payload. A cache that cannot be written is logged once, never fatal."""
        self._remember((sha256, settings.key()), payload)
        path = self.path_for(sha256, settings)
        entry = {
            "sha256": sha256,
            "key": settings.key(),
            "media_type": payload.media_type,
            "width": payload.width,
            "height": payload.height,
            "base64": payload.base64,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # No fsync: an entry lost to a power cut is encoded again on the next miss.
            write_atomic(path, json.dumps(entry, separators=(",", ":")), fsync=False)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                logger.warning("image cache %s is not writable: %s", self.directory, exc)

    def _remember(self, memo_key: tuple[str, str], payload: EncodedPayload) -> None:
        if self.memory_items == 0:
            return
        with self._lock:
            self._memory[memo_key] = payload
            self._memory.move_to_end(memo_key)
            while len(self._memory) > self.memory_items:
                self._memory.popitem(last=False)
