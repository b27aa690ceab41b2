"""What a cell needs at its end is imported on a worker thread while its calls are out."""

from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path

import pytest

from mmjudge.running import aside


def test_the_summary_is_imported_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "probe_summary.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.delitem(sys.modules, "probe_summary", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(aside, "SUMMARY_MODULES", ("probe_summary",))
    monkeypatch.setattr(aside, "SUMMARY_IMPORT_DELAY_S", 0.0)

    async def run() -> None:
        aside.import_summary_aside()
        await asyncio.sleep(0.05)  # the calls' time, in which the thread starts

    asyncio.run(run())
    for thread in threading.enumerate():
        if thread.name == "mmjudge-summary-import":
            thread.join(5)
    assert "probe_summary" in sys.modules
