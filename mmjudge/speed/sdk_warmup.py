"""Whether to load the judge's SDK before the first call, and what loads it.

A cell's first call waits for the judge's SDK to load (~0.6–1 s for ``openai``, ~1.7 s for
``anthropic``). Loading it while the dataset is checked (in a forked child where that applies:
:mod:`mmjudge.speed.survey_child`) takes that wait off the first call, but only where a call
is certain: not for a dry run, not where the SDK is loaded already, and not where the response
cache may answer every item (a rerun from the cache never loads the SDK). With the speed
machinery off nothing is loaded ahead: the first call loads the SDK, as the reference does.

What it needs from the rooms above it is handed in: the SDK's module (the judge's descriptor
names it) and a count of the answers the run's response cache holds (the engine owns the cache).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from importlib import import_module
from pathlib import Path

from mmjudge.config import SweepConfig
from mmjudge.data.schema import dataset_root
from mmjudge.speed import Speed


def sdk_warmer(
    sdk: str | None,
    cfg: SweepConfig,
    cached_answers: Callable[[], int] | None,
    speed: Speed,
) -> Callable[[], None] | None:
    """What imports the module ``sdk`` ahead of the judge's first call, or None when nothing
    would: ``speed`` is off, the judge has no SDK, it is imported already, the run is a dry
    run, or the response cache may hold an answer for every item. ``cached_answers`` counts
    the answers in the run's response cache (None: the run reads no cache); a cache it cannot
    count may answer everything."""
    if not speed.on or sdk is None or sdk in sys.modules or cfg.runner.dry_run:
        return None
    if cached_answers is not None and _cache_may_answer_all(cfg, cached_answers):
        return None

    def warm() -> None:
        # A missing or broken SDK is reported by the judge's first call, as without this.
        with contextlib.suppress(Exception):
            import_module(sdk)

    return warm


#: A response cache holding answers for at least this share of a cell's items may answer them
#: all: items that repeat another's prompt share its answer (a catalogue lists a product under
#: several ids), and a table's header is a line without an item. Were a few items left to call,
#: the first of them loads the SDK, as any call does where it was not loaded ahead.
NEARLY_ALL = 0.9


def _cache_may_answer_all(cfg: SweepConfig, cached_answers: Callable[[], int]) -> bool:
    """True unless the cache holds answers for fewer than :data:`NEARLY_ALL` of the cell's
    items (the items file's lines, or ``dataset.limit`` when that is fewer)."""
    try:
        answers = cached_answers()
    except Exception:  # an unreadable cache is the runner's to report
        return True
    if answers <= 0:
        return False
    if cfg.dataset.limit is not None and answers >= cfg.dataset.limit:
        return True
    lines = int(answers / NEARLY_ALL)
    return _lines_exceed(dataset_root(cfg.dataset) / cfg.dataset.items, lines) is False


def _lines_exceed(path: Path, limit: int) -> bool | None:
    """Whether ``path`` has more than ``limit`` lines (reading no further than needed);
    None when it cannot be read."""
    lines = 0
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                lines += chunk.count(b"\n")
                if lines > limit:
                    return True
    except OSError:
        return None
    return False
