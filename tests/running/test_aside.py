"""What a cell needs at its end is imported on a worker thread while its calls are out."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

from mmjudge.running import aside


def _imported_during_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, report: bool
) -> set[str]:
    for name in ("probe_summary", "probe_report"):
        (tmp_path / f"{name}.py").write_text("VALUE = 1\n", encoding="utf-8")
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(aside, "SUMMARY_MODULES", ("probe_summary",))
    monkeypatch.setattr(aside, "REPORT_MODULES", ("probe_report",))
    monkeypatch.setattr(aside, "SUMMARY_IMPORT_DELAY_S", 0.0)

    async def run() -> None:
        aside.import_summary_aside(report=report)
        await asyncio.sleep(0.05)  # the calls' time, in which the thread starts

    asyncio.run(run())
    for thread in threading.enumerate():
        if thread.name == "mmjudge-summary-import":
            thread.join(5)
    return {name for name in ("probe_summary", "probe_report") if name in sys.modules}


def test_the_summary_is_imported_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _imported_during_a_run(tmp_path, monkeypatch, report=False) == {"probe_summary"}


def test_a_run_that_builds_a_report_imports_it_aside_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _imported_during_a_run(tmp_path, monkeypatch, report=True)
    assert found == {"probe_summary", "probe_report"}
