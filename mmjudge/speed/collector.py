"""Python's cyclic garbage collector while calls are in flight.

Each call allocates a few hundred short-lived objects (tasks, futures, request and response
objects). Nearly all die by reference counting, but with calls overlapping, the collector's
count of young objects keeps crossing its default threshold (700), and every older collection
walks everything the process has built (the SDKs' modules and models, the configuration):
about 40–70 µs of CPU per call, measured at 64 calls in flight. During a run, therefore:

- what exists when the run starts is frozen (:func:`gc.freeze`): it lives as long as the run,
  so no collection needs to look at it again;
- young collections wait for :data:`YOUNG_THRESHOLD` objects instead of 700. The collector
  still runs, so cyclic garbage made during the run is still freed.

Both are undone when the run ends. Runs may nest (the batch runner's fallback to calls one at
a time): only the outermost one changes the collector.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from mmjudge.speed import Speed

#: Net new container objects that trigger a young collection during a run (Python's default
#: is 700).
YOUNG_THRESHOLD = 10_000

_depth = 0
_saved: tuple[int, int, int] = (700, 10, 10)


def quiet_collector(speed: Speed) -> Callable[[], None]:
    """Tune the collector for a run (see the module's docstring) unless ``speed`` is off;
    returns what undoes it."""
    global _depth, _saved
    _depth += 1
    if _depth == 1 and speed.on:
        _saved = gc.get_threshold()
        gc.freeze()
        if _saved[0]:  # 0: automatic collection is off, and stays off
            gc.set_threshold(max(_saved[0], YOUNG_THRESHOLD), _saved[1], _saved[2])
    done = False

    def restore() -> None:
        global _depth
        nonlocal done
        if done:
            return
        done = True
        _depth -= 1
        if _depth == 0:
            gc.set_threshold(*_saved)
            gc.unfreeze()

    return restore
