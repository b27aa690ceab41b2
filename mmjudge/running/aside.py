"""What a cell needs only at its end, imported on a worker thread while its calls are in flight.

Scoring a finished cell needs pandas and numpy (~0.25 s to import), and the report a sweep
builds after its cells needs matplotlib, altair and jinja2 (~0.5 s more). Imported after the
last answer, that time adds to every run; imported on a thread while the event loop waits for
answers, it mostly uses time the loop leaves idle. The import starts
:data:`SUMMARY_IMPORT_DELAY_S` after the calls begin, once the first calls and the first
forecast are under way; a cell that ends sooner imports as before, when it needs them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from importlib import import_module

#: The modules the cell's summary loads (:func:`mmjudge.running.cell.write_cell_summary`).
SUMMARY_MODULES = ("mmjudge.running.summarise",)
#: The modules the sweep's report loads (``report.build``).
REPORT_MODULES = ("mmjudge.report.build",)

#: Seconds after the calls begin that the import starts.
SUMMARY_IMPORT_DELAY_S = 1.0


def import_summary_aside(report: bool = False) -> None:
    """Schedule the summary's import, and with ``report`` the report's, on a worker thread
    (call on the event loop)."""
    modules = SUMMARY_MODULES + (REPORT_MODULES if report else ())
    asyncio.get_running_loop().call_later(SUMMARY_IMPORT_DELAY_S, _start, modules)


def _start(modules: tuple[str, ...]) -> None:
    threading.Thread(
        target=_import, args=(modules,), name="mmjudge-summary-import", daemon=True
    ).start()


def _import(modules: tuple[str, ...]) -> None:
    # A module that fails to import fails again, with its traceback, where the cell needs it.
    for name in modules:
        with contextlib.suppress(Exception):
            import_module(name)
