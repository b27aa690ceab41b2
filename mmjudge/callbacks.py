"""Hydra callbacks: when a multirun ends, summarise the sweep and build its report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class SweepReport(Callback):
    """Writes ``sweep_summary.json`` (skipped cells with reasons) and the sweep's report."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mmjudge.report import build_report
        from mmjudge.sweep import _resolve_path

        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        if config.get("runner", {}).get("dry_run"):
            return
        if not config.get("runner", {}).get("report", True):
            return
        out = build_report(sweep_dir, Path(_resolve_path(config.reports_dir)))
        print(f"report: {out / 'index.html'}", file=sys.stderr)
