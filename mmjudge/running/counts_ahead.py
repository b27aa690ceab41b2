"""A cell's prompt tokens counted in the dataset-check child, so this process never
loads the tokenizer during its calls.

The run's forecast counts each call's tokens with tiktoken, whose encoder takes ~0.45 s to
load, most of it holding the interpreter's lock: loaded on a worker thread while the first
calls are out, it held up the first round of answers by ~0.3 s at 64 calls × 0.2 s. Where the
dataset check runs in a forked child (:mod:`mmjudge.running.survey_ahead`), the child goes on,
once it has sent the dataset's counts, to count every item's prompt and send those counts too;
the run's first forecast, made on its worker thread (:meth:`RunStats.forecast_first_aside`),
waits for them while the calls go on. The counts are the ones :func:`count_tokens` gives (the
child runs the same code on the same prompts); any prompt the child did not count is counted
here as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterable
from typing import IO

from mmjudge.config import SweepConfig
from mmjudge.costs.forecast import forecast_text
from mmjudge.costs.tokens import TokenCount, add_counts_ahead, ahead_key, count_tokens
from mmjudge.data.schema import Example
from mmjudge.judges.pipes import read_message
from mmjudge.prompts.shapes import PromptRenderer

Counts = dict[tuple[str, str, int, int], TokenCount]


def counter_for(cfg: SweepConfig) -> Callable[[Iterable[Example]], Counts] | None:
    """What the child counts for this cell, or None where counting ahead does not apply: a
    test-bank cell (its prompts are built per query), a cell with a budget (each of its calls
    is forecast on the event loop before it is sent) and a batch cell (its runner never waits
    for the counts). In a cell with images the child counts each prompt's text as it reads
    with all of its item's pictures prepared; their own tokens come from their sizes, counted
    here (an item whose picture fails is not called)."""
    if cfg.prompt.bank is not None or cfg.runner.max_cost_usd is not None:
        return None
    if cfg.runner.mode == "batch":
        return None
    model_id, provider = cfg.model.model_id, cfg.model.provider
    with_images = cfg.modality.include_image

    def count(examples: Iterable[Example]) -> Counts:
        prompts = PromptRenderer(cfg.modality, cfg.prompt, cfg.dataset)
        counts: Counts = {}
        for example in examples:
            rendered = prompts.render(example, n_images=len(example.images) if with_images else 0)
            text = forecast_text(rendered.system, rendered.text)
            counts[ahead_key(text, model_id, provider)] = count_tokens(text, model_id, provider)
        return counts

    return count


class PendingCounts:
    """The child's counts, still on their way: :meth:`receive` waits for them (off the event
    loop), :meth:`close` stops the child and reaps it."""

    def __init__(self, pid: int, pipe: IO[bytes]) -> None:
        self.pid = pid
        self.pipe = pipe
        self._reaped = False
        self._lock = threading.Lock()

    def receive(self) -> Counts | None:
        try:
            counts = read_message(self.pipe)
        except Exception:  # the child failed or was stopped: this process counts
            counts = None
        self.close()
        return counts if isinstance(counts, dict) else None

    def kill(self) -> None:
        """Stop the child (a read waiting for it then ends)."""
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)

    def close(self) -> None:
        with self._lock:
            if self._reaped:
                return
            self._reaped = True
            self.kill()
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            self.pipe.close()


_pending: PendingCounts | None = None
"""Counts no thread has started to wait for."""
_receiving: PendingCounts | None = None
"""Counts a thread is waiting for."""
_taken = threading.Lock()


def expect(pending: PendingCounts) -> None:
    """Counts will come from ``pending`` (called once the child has sent the dataset's); a
    child an earlier cell left (it failed before its calls) is stopped."""
    global _pending
    with _taken:
        stale, _pending = _pending, pending
    if stale is not None:
        stale.close()


def wait_for_counts() -> None:
    """Take the child's counts, waiting for them (a worker thread; the calls go on)."""
    global _pending, _receiving
    with _taken:
        pending, _pending = _pending, None
        _receiving = pending
    if pending is None:
        return
    try:
        counts = pending.receive()
    finally:
        with _taken:
            _receiving = None
    if counts:
        add_counts_ahead(counts)


def stop_waiting() -> None:
    """Stop the child if its counts have not arrived (the calls are over): whatever waits for
    them gets none and counts here."""
    global _pending
    with _taken:
        pending, _pending = _pending, None
        receiving = _receiving
    if pending is not None:
        pending.close()
    if receiving is not None:
        receiving.kill()  # its thread reaps it
