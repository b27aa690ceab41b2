"""The dataset check on the other core while the judge's SDK loads.

Before a cell's first call, two steps take most of the time: the dataset check (every line
read and validated: ~0.2 s for 10,000 items) and importing the judge's SDK (~0.6 s for
``openai``, ~1.7 s for ``anthropic``). Both are CPU-bound Python, so a thread would not overlap
them; a forked child does. The child checks the dataset and sends back its counts while this
process imports the SDK.

The child is used only where it pays and is safe: on Linux, with no other thread running, for
an items file of at least :data:`MIN_BYTES`, and when the SDK is about to be needed (not yet
imported, and the response cache cannot answer every item: a rerun from the cache never loads
the SDK, and keeps checking the dataset here, where the examples it reads are kept for the
calls). Whatever else happens to the child (a bad line, an error, a signal), the check runs
here as it always does, so a bad dataset fails with exactly the message it always had.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterable
from importlib import import_module
from pathlib import Path
from typing import NoReturn

from mmjudge.config import SweepConfig
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.survey import DatasetSurvey, survey
from mmjudge.judges.base import JudgeAPI
from mmjudge.running.cache import ResponseCache

#: Items files smaller than this are checked here: the check is quicker than a fork.
MIN_BYTES = 1 << 20


def survey_while(
    examples: Iterable[Example], cfg: SweepConfig, warm: Callable[[], None] | None
) -> DatasetSurvey:
    """The dataset's counts (:func:`~mmjudge.data.survey.survey`), checked in a forked child
    while ``warm`` runs here, where that applies (see the module's docstring)."""
    if warm is None or not _can_fork(cfg):
        return survey(examples)
    counts = _survey_in_child(examples, warm)
    return counts if counts is not None else survey(examples)


def sdk_warmer(
    judge_cls: type[JudgeAPI], cfg: SweepConfig, cache_path: Path
) -> Callable[[], None] | None:
    """What imports the judge's SDK ahead of its first call, or None when nothing would:
    the judge has no SDK, it is imported already, the run is a dry run, or the response cache
    may hold an answer for every item."""
    module = getattr(judge_cls, "sdk", None)
    if not isinstance(module, str) or module in sys.modules or cfg.runner.dry_run:
        return None
    if cfg.runner.cache and judge_cls.cacheable and _cache_may_answer_all(cfg, cache_path):
        return None

    def warm() -> None:
        # A missing or broken SDK is reported by the judge's first call, as without this.
        with contextlib.suppress(Exception):
            import_module(module)

    return warm


def _cache_may_answer_all(cfg: SweepConfig, cache_path: Path) -> bool:
    """True unless the cache holds fewer answers than the items file has lines."""
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
    return _lines_exceed(dataset_root(cfg.dataset) / cfg.dataset.items, answers) is False


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


def _survey_in_child(examples: Iterable[Example], warm: Callable[[], None]) -> DatasetSurvey | None:
    """The counts from a forked child, ``warm`` run meanwhile; None when the child did not
    deliver them."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        _child(examples, read_end, write_end)
    os.close(write_end)
    status: int | None = None
    try:
        warm()
        with os.fdopen(read_end, "rb") as pipe:
            read_end = -1  # the pipe object closes it
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
    finally:
        if read_end >= 0:
            os.close(read_end)
        if status is None:  # interrupted: the child's counts are not wanted any more
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    try:
        counts = pickle.loads(data)
    except Exception:
        return None
    return counts if isinstance(counts, DatasetSurvey) else None


def _child(examples: Iterable[Example], read_end: int, write_end: int) -> NoReturn:
    """The forked child: count, send the counts, leave without running any exit handler or
    flushing anything inherited (the parent owns the run's files and output)."""
    code = 1
    try:
        os.close(read_end)
        logging.disable(logging.CRITICAL)
        warnings.simplefilter("ignore")  # the parent's own pass over the items warns
        data = pickle.dumps(survey(examples))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        code = 0
    except BaseException:  # any failure: the parent checks the dataset itself
        pass
    finally:
        os._exit(code)
