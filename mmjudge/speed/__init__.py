"""The speed machinery, and the one switch that turns all of it off.

A judgment's wall time is the provider's latency; the harness's share is its CPU per call and
its fixed cost before the first call and after the last. mmjudge keeps that share small with
a few pieces that each change *how* work is done, never *what* is done:

- the fast request path (:mod:`mmjudge.speed.wire`): a request the SDK built once is sent again
  with each new body through one aiohttp session, errors handed back to the SDK to raise;
- a catalogue checked and its items prepared in a forked child while the SDK loads
  (:mod:`mmjudge.speed.survey_child`, :mod:`mmjudge.speed.feed`);
- a single run's report imported and built by a child forked as the run starts
  (:mod:`mmjudge.speed.report_child`);
- the garbage collector frozen and its young threshold raised during the calls
  (:mod:`mmjudge.speed.collector`);
- the event loop: uvloop where installed, turned every 2 ms while items are taken without
  waiting (:mod:`mmjudge.speed.event_loop`);
- the judge's SDK imported while the dataset is checked, where a call is certain
  (:mod:`mmjudge.speed.sdk_warmup`);
- the run's first forecast, which loads the tokenizer, made on a worker thread while the first
  calls are out (:meth:`mmjudge.engine.policy.RunStats.forecast_first_aside`, ten lines that
  belong to the run's counts).

Each stays because ``benchmarks/ablate.py`` measured it saving 2 points of the ideal rate end
to end or more, on a real-shaped catalogue or on plain text, at 64 or 1,024 calls in flight, or
keeping a rerun from the cache quicker (figures in ``docs/figures.md``); pieces that saved less
were removed.

With ``MMJUDGE_FAST_PATH=0`` in the environment, none of them runs: every call goes through the
SDK's own client, nothing is forked or imported ahead, the collector and the loop are Python's
defaults. That is the reference the pieces are tested against (the same rows, labels and costs
either way), and the first thing to try when a run behaves unexpectedly.

The switch is read once, where a run starts (the command, the library's run functions, a
:class:`mmjudge.Judge`: :func:`read_switch`), and the decision is handed down as a
:class:`Speed` to every piece; no piece reads the environment itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mmjudge.errors import ConfigError

#: The environment variable that switches the speed machinery off (``0``) or on (``1``).
SWITCH = "MMJUDGE_FAST_PATH"

_ON = ("", "1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")


@dataclass(frozen=True)
class Speed:
    """Whether one run uses the speed machinery, decided where the run starts."""

    on: bool = True
    """True (the default): every piece runs; False: each stands aside, and every call takes
    the SDK's own path (the reference the pieces are held to)."""


#: The speed machinery on (the default).
FAST = Speed(on=True)
#: The speed machinery off: the reference path.
REFERENCE = Speed(on=False)


def read_switch() -> Speed:
    """The run's :class:`Speed` from :data:`SWITCH`: on unless it says ``0``.

    Called once by whatever starts a run, which hands the answer down; a test or a library
    caller can so switch it for one run. A value that is neither on nor off is refused in one
    line."""
    value = os.environ.get(SWITCH, "").strip().lower()
    if value in _ON:
        return FAST
    if value in _OFF:
        return REFERENCE
    raise ConfigError(
        f"{SWITCH}={os.environ[SWITCH]!r} is neither on nor off; use {SWITCH}=1 (the default: "
        f"the speed machinery runs) or {SWITCH}=0 (every call through the SDK's own path)"
    )
