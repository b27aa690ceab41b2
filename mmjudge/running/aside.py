"""What a cell needs only at its end, imported on a worker thread while its calls are in flight.

Scoring a finished cell needs pandas and numpy (~0.25 s to import). Imported after the last
answer, that time adds to every run; imported on a thread while the event loop waits for
answers, it mostly uses time the loop leaves idle. The import starts
:data:`SUMMARY_IMPORT_DELAY_S` after the calls begin, once the first calls and the first
forecast are under way; a cell that ends sooner imports as before, when it needs them. (A
single run's report is imported by a child of its own: :mod:`mmjudge.cli.report_ahead`.)
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from importlib import import_module

#: The modules the cell's summary loads (:func:`mmjudge.running.cell.write_cell_summary`).
SUMMARY_MODULES = ("mmjudge.running.summarise",)

#: Seconds after the calls begin that the import starts.
SUMMARY_IMPORT_DELAY_S = 1.0


def import_summary_aside() -> None:
    """Schedule the summary's import on a worker thread (call on the event loop)."""
    asyncio.get_running_loop().call_later(SUMMARY_IMPORT_DELAY_S, _start, SUMMARY_MODULES)


def _start(modules: tuple[str, ...]) -> None:
    threading.Thread(
        target=_import, args=(modules,), name="mmjudge-summary-import", daemon=True
    ).start()


def _import(modules: tuple[str, ...]) -> None:
    # A module that fails to import fails again, with its traceback, where the cell needs it.
    for name in modules:
        with contextlib.suppress(Exception):
            import_module(name)
