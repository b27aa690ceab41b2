"""Concurrent calls gathered into batches for one worker thread: a local model answers many
requests at once faster than one by one, and the event loop never waits on it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

JobT = TypeVar("JobT")
ResultT = TypeVar("ResultT")


class Batcher(Generic[JobT, ResultT]):
    """Gathers concurrent requests and runs them through ``work`` in one worker thread.

    One drain task per event loop takes whatever is waiting (up to ``max_size``), runs it in a
    thread, and repeats; requests that arrive meanwhile form the next batch. A waiter that is
    cancelled (a timeout) is dropped from its batch if that batch has not started yet.
    """

    def __init__(self, work: Callable[[list[JobT]], list[ResultT]], max_size: int) -> None:
        self.work = work
        self.max_size = max_size
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: list[tuple[JobT, asyncio.Future[ResultT]]] = []
        self._task: asyncio.Task[None] | None = None

    async def submit(self, job: JobT) -> ResultT:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._queue, self._task = loop, [], None
        future: asyncio.Future[ResultT] = loop.create_future()
        self._queue.append((job, future))
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._queue:
            await asyncio.sleep(0)  # let requests started in the same turn join this batch
            batch = [item for item in self._queue[: self.max_size] if not item[1].done()]
            del self._queue[: self.max_size]
            if not batch:
                continue
            try:
                results = await asyncio.to_thread(self.work, [job for job, _ in batch])
            except Exception as error:
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
