"""Hydra callbacks: when a multirun ends, build its ensembles, summarise it, build its report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class SweepReport(Callback):
    """Counts the cells in each status (a console line, ``sweep_summary.json``, and the
    process's exit code: that of the worst cell, see :mod:`mmjudge.runs.status`), builds the
    sweep's default ensembles (panels and cascades from the saved records, see
    :mod:`mmjudge.ensembles.defaults`), then writes ``sweep_summary.json`` (skipped
    cells with reasons) and the sweep's report, which shows the ensembles as extra points.

    ``ensembles=false`` (``+hydra.callbacks.sweep_report.ensembles=false`` on the command
    line) leaves the ensembles out.
    """

    def __init__(self, ensembles: bool = True) -> None:
        self.ensembles = ensembles

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mmjudge.cli.exits import note_exit
        from mmjudge.report import build_report
        from mmjudge.report.load import cell_table, judged_statuses, write_sweep_summary
        from mmjudge.running.cell import resolve_path
        from mmjudge.runs.status import count_statuses, status_line, sweep_exit_code

        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        if config.get("runner", {}).get("dry_run"):
            return
        cells = cell_table(sweep_dir)
        statuses = judged_statuses(cells)
        if statuses:
            # The sweep exits with the code of its most severe cell (see mmjudge.runs.status).
            note_exit(sweep_exit_code(statuses), replace=True)
            print(f"sweep: {status_line(count_statuses(statuses))}", file=sys.stderr)
            write_sweep_summary(sweep_dir, cells)
        if self.ensembles:
            from mmjudge.ensembles.defaults import build_default_ensembles

            built = build_default_ensembles(sweep_dir)
            if built:
                print(f"ensembles: {len(built)} under {sweep_dir / 'ensembles'}", file=sys.stderr)
        if not config.report.build:
            return
        out = build_report(sweep_dir, resolve_path(config.paths.reports))
        print(f"report: {out / 'index.html'}", file=sys.stderr)
