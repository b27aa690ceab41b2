"""Image preprocessing in worker threads, ahead of the calls that need the images.

Decoding, resizing and encoding an image takes several milliseconds of CPU. Done on the event
loop, it stalls every call in flight; here it runs in a pool of worker threads (Pillow and
hashlib release the GIL for their heavy work, so the threads run in parallel on the cores),
for the items a window ahead of the one about to be sent. Each source image is preprocessed
once per settings: items that share an image share its job while it runs, and the on-disk
:class:`~mmjudge.images.ImageCache` (atomic writes, safe across processes) serves it after.
"""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import NamedTuple

from mmjudge.data.schema import Example
from mmjudge.errors import ImageError
from mmjudge.images import ImageCache, ImageSettings, preprocess_image
from mmjudge.records import EncodedImage

#: Finished jobs remembered so that nearby items sharing an image reuse them.
RECENT_JOBS = 256

#: Items whose images are prepared ahead outside the event loop (dry runs, samples).
PREPARE_AHEAD = 64


def pool_size() -> int:
    """Worker threads: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class PreparedImages(NamedTuple):
    """An example's images, or the first error preparing them."""

    images: tuple[EncodedImage, ...]
    error: str | None


class ImagePool:
    """Preprocesses images in worker threads; one job per source image while it is recent."""

    def __init__(self, settings: ImageSettings, cache: ImageCache, workers: int | None = None):
        self.settings = settings
        self.cache = cache
        self._executor = ThreadPoolExecutor(
            max_workers=workers or pool_size(), thread_name_prefix="mmjudge-images"
        )
        self._jobs: OrderedDict[str, Future[EncodedImage]] = OrderedDict()

    def submit(self, path: str, name: str) -> Future[EncodedImage]:
        """The job preparing ``path`` (shown as ``name``), started if it is not already."""
        job = self._jobs.get(path)
        if job is None:
            job = self._executor.submit(
                preprocess_image, path, self.settings, self.cache, display_source=name
            )
            self._jobs[path] = job
            while len(self._jobs) > RECENT_JOBS:
                self._jobs.popitem(last=False)
        else:
            self._jobs.move_to_end(path)
        return job

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def _jobs_for(pool: ImagePool, example: Example) -> list[Future[EncodedImage]]:
    return [
        pool.submit(str(path), name)
        for path, name in zip(example.images, example.image_names, strict=True)
    ]


def _wait(jobs: list[Future[EncodedImage]]) -> PreparedImages:
    images: list[EncodedImage] = []
    for job in jobs:
        try:
            images.append(job.result())
        except ImageError as error:
            return PreparedImages(tuple(images), str(error))
    return PreparedImages(tuple(images), None)


async def _gather(jobs: list[Future[EncodedImage]]) -> PreparedImages:
    images: list[EncodedImage] = []
    for job in jobs:
        try:
            # A finished job is read at once: wrapping it would still wake the loop through
            # its self-pipe, and each extra turn of the loop commits the claims' writes alone.
            # (A cancelled one, at shutdown, is awaited so that it cancels this task as before.)
            finished = job.done() and not job.cancelled()
            images.append(job.result() if finished else await asyncio.wrap_future(job))
        except ImageError as error:
            return PreparedImages(tuple(images), str(error))
    return PreparedImages(tuple(images), None)


def prepared_sync(
    pool: ImagePool, examples: Iterable[Example], ahead: int
) -> Iterator[tuple[Example, PreparedImages]]:
    """Each example with its images, in order, while the next ``ahead`` are prepared (for
    code outside the event loop, which may block)."""
    window: deque[tuple[Example, list[Future[EncodedImage]]]] = deque()
    for example in examples:
        window.append((example, _jobs_for(pool, example)))
        if len(window) >= ahead:
            first, jobs = window.popleft()
            yield first, _wait(jobs)
    while window:
        first, jobs = window.popleft()
        yield first, _wait(jobs)


async def prepared_async(
    pool: ImagePool, examples: Iterable[Example], ahead: int
) -> AsyncIterator[tuple[Example, PreparedImages]]:
    """Each example with its images, in order; the images of the next ``ahead`` examples
    are being prepared meanwhile, and waiting for them leaves the event loop free."""
    window: deque[tuple[Example, list[Future[EncodedImage]]]] = deque()
    source: Iterator[Example] = iter(examples)
    exhausted = False
    while True:
        while not exhausted and len(window) < ahead:
            example = next(source, None)
            if example is None:
                exhausted = True
                break
            window.append((example, _jobs_for(pool, example)))
        if not window:
            return
        example, jobs = window.popleft()
        yield example, await _gather(jobs)
