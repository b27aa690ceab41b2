"""The dataset check and a catalogue's preparation on the other core while the judge's SDK
loads.

Before a cell's first call, two steps take most of the time: the dataset check (every line read
and validated: ~0.2 s for 10,000 short items, ~0.7 s for 10,000 scraped product pages of 1–20
KB, read before their HTML is converted:
:meth:`~mmjudge.engine.examples.ExampleStream.survey`) and importing the judge's SDK (~0.6–1 s
for ``openai``, ~1.7 s for ``anthropic``). Both are CPU-bound Python, so a thread would not
overlap them; a forked child does. Where the check reads a catalogue whose HTML is still to be
converted, a child checks it and sends back its counts while this process imports the SDK (or,
where the SDK already loads in the child started with the command, :mod:`mmjudge.judges.ahead`,
imports the HTTP client its calls go out with and receives the judge's request template), then
prepares the items for the calls (:mod:`mmjudge.engine.feed`): seconds of HTML conversion off
the calls' core.

Only there: measured with ``benchmarks/ablate.py``, a child that only checks plain text saved
nothing at 64 calls in flight and cost 1.4 points of the ideal rate at 1,024 (see
``docs/figures.md``), so elsewhere the check runs here before the SDK is loaded. The child is
also used only where it is safe: on Linux, with no other thread running, for an items file of
at least :data:`MIN_BYTES`, and when the SDK is about to be needed (not yet imported, and the
response cache cannot answer every item: a rerun from the cache never loads the SDK).
Whatever else happens to the child (a bad line, an error, a signal), the check runs here as it
always does, so a bad dataset fails with exactly the message it always had.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from importlib import import_module
from pathlib import Path
from typing import IO, NoReturn

from mmjudge.config import SweepConfig
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.survey import DatasetSurvey
from mmjudge.engine.feed import PreparedFeed, send_prepared
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.judges import ahead
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.pipes import die_with_parent, read_message, write_message

#: Items files smaller than this are checked here, the check being quicker than a fork.
MIN_BYTES = 1 << 20


def survey_while(
    check: Callable[[], DatasetSurvey],
    examples: Iterable[Example],
    cfg: SweepConfig,
    warm: Callable[[], None] | None,
    feed: Callable[[PreparedFeed], None] | None = None,
) -> DatasetSurvey:
    """The dataset's counts (``check()``: :meth:`~mmjudge.engine.examples.ExampleStream.survey`),
    with ``warm`` run too. With ``feed``, where that applies (see the module's docstring),
    they are taken in a forked child while ``warm`` runs here, and the child then sends
    ``examples`` prepared to the :class:`~mmjudge.engine.feed.PreparedFeed` that ``feed`` is
    given; otherwise the check runs here, then ``warm``."""
    if warm is None or feed is None or not _can_fork(cfg):
        checked = check()
        if warm is not None:
            warm()
        return checked
    counts = _survey_in_child(check, examples, warm, feed)
    return counts if counts is not None else check()


def sdk_warmer(
    judge_cls: type[JudgeAPI], cfg: SweepConfig, cache_path: Path
) -> Callable[[], None] | None:
    """What imports the judge's SDK ahead of its first call, or None when nothing would:
    the judge has no SDK, it is imported already, the run is a dry run, or the response cache
    may hold an answer for every item."""
    module = getattr(judge_cls, "sdk", None)
    if not isinstance(module, str) or module in sys.modules or cfg.runner.dry_run:
        ahead.release()
        return None
    if cfg.runner.cache and judge_cls.cacheable and _cache_may_answer_all(cfg, cache_path):
        ahead.release()
        return None
    try:  # a judge made only to ask for its template (a bad setting or key is reported later)
        from_child = ahead.request(judge_cls(cfg.model))
    except Exception:
        from_child = False
        ahead.release()

    def warm() -> None:
        if from_child:
            with contextlib.suppress(Exception):
                import_module("aiohttp")  # what the calls go out with, while the child works
            if ahead.receive():
                return  # the judge's calls need no SDK here (mmjudge/judges/ahead.py)
        # A missing or broken SDK is reported by the judge's first call, as without this.
        with contextlib.suppress(Exception):
            import_module(module)

    return warm


#: A response cache holding answers for at least this share of a cell's items may answer them
#: all: items that repeat another's prompt share its answer (a catalogue lists a product under
#: several ids), and a table's header is a line without an item. Were a few items left to call,
#: the first of them loads the SDK, as any call does where it was not loaded ahead.
NEARLY_ALL = 0.9


def _cache_may_answer_all(cfg: SweepConfig, cache_path: Path) -> bool:
    """True unless the cache holds answers for fewer than :data:`NEARLY_ALL` of the cell's
    items (the items file's lines, or ``dataset.limit`` when that is fewer)."""
    if not cache_path.exists():
        return False
    try:
        cache = ResponseCache(cache_path)
        try:
            answers = len(cache)
        finally:
            cache.close()
    except Exception:  # an unreadable cache is the runner's to report
        return True
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


def _can_fork(cfg: SweepConfig) -> bool:
    """Whether the check runs in a child: on Linux, with no other thread, for an items file
    of :data:`MIN_BYTES` or more."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if _other_threads():
        return False  # a child forked beside running threads can inherit their locks
    path = dataset_root(cfg.dataset) / cfg.dataset.items
    try:
        return path.is_file() and path.stat().st_size >= MIN_BYTES
    except OSError:
        return False


def _other_threads() -> bool:
    return threading.active_count() > 1


def _survey_in_child(
    check: Callable[[], DatasetSurvey],
    examples: Iterable[Example],
    warm: Callable[[], None],
    feed: Callable[[PreparedFeed], None],
) -> DatasetSurvey | None:
    """The counts from a forked child, ``warm`` run meanwhile; None when the child did not
    deliver them. The child then goes on to send the items prepared."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        die_with_parent(parent)
        _child(check, examples, read_end, write_end)
    os.close(write_end)
    pipe = os.fdopen(read_end, "rb")
    handed_on = False
    try:
        warm()
        try:
            counts = read_message(pipe)
        except Exception:
            counts = None
        if not isinstance(counts, DatasetSurvey):
            return None
        feed(PreparedFeed(pid, pipe))
        handed_on = True
        return counts
    finally:
        if not handed_on:  # done with the child (or interrupted): stop and reap it
            _stop(pid, pipe)


def _stop(pid: int, pipe: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)
    with contextlib.suppress(OSError):
        pipe.close()


def _child(
    check: Callable[[], DatasetSurvey],
    examples: Iterable[Example],
    read_end: int,
    write_end: int,
) -> NoReturn:
    """The forked child: check, send the counts, then the items prepared, and leave without
    running any exit handler or flushing anything inherited (the parent owns the run's files
    and output)."""
    code = 1
    try:
        os.close(read_end)
        logging.disable(logging.CRITICAL)
        warnings.simplefilter("ignore")  # the parent's own pass over the items warns
        with os.fdopen(write_end, "wb") as pipe:
            write_message(pipe, check())
            send_prepared(pipe, examples)
        code = 0
    except BaseException:  # any failure: the parent checks the dataset (and prepares) itself
        pass
    finally:
        os._exit(code)
