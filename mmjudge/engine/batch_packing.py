"""The pieces of batch mode that are not the runner: the ``custom_id`` an item is submitted
under, how request lines are packed into batches within the provider's limits, and the slim
form an item waits in. The batch settings are checked with the other ``runner`` settings, by
:meth:`mmjudge.config.RunnerConfig.validate`."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mmjudge.engine.policy import WorkItem
from mmjudge.judges.base import BatchLimits, SubmittedBatch
from mmjudge.records import sha256_text
from mmjudge.store.batches import BatchRecord, BatchState

log = logging.getLogger("mmjudge.engine.batch")

#: Prefix of every ``custom_id`` (the rest is 40 hex digits: 44 characters in all).
CUSTOM_ID_PREFIX = "mmj-"

#: Bytes kept free under a byte limit for the envelope around the request lines.
ENVELOPE_BYTES = 1024


def custom_id(item_key: str, request_cache_key: str) -> str:
    """The id an item is submitted under: a hash of its key and of its request's cache key.

    Item keys hold tabs and arbitrary dataset ids, which providers do not accept, so they are
    hashed; the mapping back is kept in the state file.
    """
    return CUSTOM_ID_PREFIX + sha256_text(f"{item_key}\n{request_cache_key}")[:40]


def resumed_batches(state: BatchState, provider: str, base_url: str) -> list[BatchRecord]:
    """The batches a stopped run submitted here that this run collects (same provider and
    base URL); others are left alone, and said so."""
    resumed = state.outstanding(provider, base_url)
    elsewhere = [b for b in state.batches if b.state == "submitted" and b not in resumed]
    if elsewhere:
        log.warning(
            "%d submitted batch(es) in %s belong to another provider or base URL and are "
            "left alone; their items are submitted again here",
            len(elsewhere),
            state.path,
        )
    if resumed:
        log.info(
            "resuming %d submitted batch(es) of %d requests",
            len(resumed),
            sum(b.n_requests for b in resumed),
        )
    return resumed


def too_large(size: int, max_bytes: int) -> str:
    """The row's error for a request larger than a batch may hold."""
    return (
        f"batch: the request is {size:,} bytes, more than a batch may hold "
        f"({max_bytes:,}; runner.batch_max_bytes); run it with runner.mode=sync"
    )


def now() -> str:
    """The time now, as batch state files write it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def error_line(error: BaseException) -> str:
    """An error in one line: its type and the start of its message."""
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text[:300]}"


@dataclass
class BatchCounts:
    """What batch mode did, besides the :class:`RunStats` every runner keeps."""

    batches_submitted: int = 0
    """Batches submitted by this process (follow-ups included)."""
    batches_resumed: int = 0
    """Batches found outstanding in the state file when the run started."""
    followup_batches: int = 0
    """Batches that resubmitted failed items."""


@dataclass
class Waiting:
    """An item whose answer is expected from a batch."""

    item: WorkItem
    cache_key: str
    attempt: int
    batch: int
    """``local_id`` of the batch that holds it."""


@dataclass
class Chunk:
    """Request lines collected for one batch."""

    limits: BatchLimits
    entries: list[bytes] = field(default_factory=list)
    items: dict[str, str] = field(default_factory=dict)
    size: int = 0

    def fits(self, entry: bytes) -> bool:
        if not self.entries:
            return True
        if len(self.entries) >= self.limits.max_requests:
            return False
        return self.size + len(entry) + 1 + ENVELOPE_BYTES <= self.limits.max_bytes

    def record(
        self, local_id: int, submitted: SubmittedBatch, where: tuple[str, str, str], attempt: int
    ) -> BatchRecord:
        """The state file's record of this chunk, just submitted as ``submitted``; ``where``:
        the provider, its base URL and the model id."""
        provider, base_url, model_id = where
        return BatchRecord(
            local_id=local_id,
            id=submitted.id,
            provider=provider,
            base_url=base_url,
            model_id=model_id,
            attempt=attempt,
            items=dict(self.items),
            n_requests=len(self.entries),
            n_bytes=self.size,
            submitted_at=now(),
            submitted_ts=time.time(),
            status=submitted.status,
            info=dict(submitted.info),
        )

    def add(self, cid: str, key: str, entry: bytes) -> None:
        self.entries.append(entry)
        self.items[cid] = key
        self.size += len(entry) + 1


def without_image_data(item: WorkItem) -> WorkItem:
    """An item kept while its batch runs: images keep their hash and size, not their bytes.

    Records need only an image's hash and dimensions, so items waiting on a batch hold no
    encoded images, and memory does not grow with the images of every submitted request.
    """
    request = item.request
    if request is None or not request.images:
        return item
    item.expected()  # forecast now: its estimate holds the request with the image bytes
    images = tuple(dataclasses.replace(image, data="") for image in request.images)
    return dataclasses.replace(item, request=dataclasses.replace(request, images=images))
