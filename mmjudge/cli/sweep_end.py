"""Hydra callbacks: when a multirun ends, build its ensembles, summarise it, build its report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NamedTuple

from hydra.experimental.callback import Callback
from omegaconf import DictConfig


class FinishedSweep(NamedTuple):
    """What the end of a sweep wrote."""

    by_status: dict[str, int]
    """Judged cells per status (empty when no cell was judged)."""
    exit_code: int | None
    """The code of the sweep's most severe cell (None when no cell was judged)."""
    ensembles: list[Path]
    """The folders of the ensembles built."""
    report: Path | None
    """The report's folder, when one was built."""


def finish_sweep(
    sweep_dir: Path,
    reports_dir: Path | None,
    *,
    ensembles: bool,
    human_cost_per_label: float | None = None,
    label_budget_usd: float | None = None,
) -> FinishedSweep:
    """A finished sweep's end work: ``sweep_summary.json`` (every cell with its status,
    skipped ones with reasons), the default ensembles (panels and cascades from the saved
    records, see :mod:`mmjudge.ensembles.defaults`) when ``ensembles``, then the
    report under ``reports_dir`` (none when it is None)."""
    from mmjudge.report.load import cell_table, judged_statuses, write_sweep_summary
    from mmjudge.store.status import count_statuses, sweep_exit_code

    cells = cell_table(sweep_dir)
    statuses = judged_statuses(cells)
    done = FinishedSweep({}, None, [], None)
    if statuses:
        done = done._replace(
            by_status=count_statuses(statuses), exit_code=sweep_exit_code(statuses)
        )
        write_sweep_summary(sweep_dir, cells)
    if ensembles:
        from mmjudge.ensembles.defaults import build_default_ensembles

        done = done._replace(ensembles=build_default_ensembles(sweep_dir))
    if reports_dir is not None:
        from mmjudge.report import build_report

        done = done._replace(
            report=build_report(
                sweep_dir,
                reports_dir,
                human_cost_per_label=human_cost_per_label,
                label_budget_usd=label_budget_usd,
            )
        )
    return done


class SweepReport(Callback):
    """Counts the cells in each status (a console line, ``sweep_summary.json``, and the
    process's exit code: that of the worst cell, see :mod:`mmjudge.store.status`), builds the
    sweep's default ensembles (panels and cascades from the saved records, see
    :mod:`mmjudge.ensembles.defaults`), then writes ``sweep_summary.json`` (skipped
    cells with reasons) and the sweep's report, which shows the ensembles as extra points
    (:func:`finish_sweep`).

    ``ensembles=false`` (``+hydra.callbacks.sweep_report.ensembles=false`` on the command
    line) leaves the ensembles out.
    """

    def __init__(self, ensembles: bool = True) -> None:
        self.ensembles = ensembles

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from mmjudge.cli.exits import note_exit
        from mmjudge.locations import resolve_path
        from mmjudge.store.status import status_line

        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.is_dir():
            return
        if config.get("runner", {}).get("dry_run"):
            return
        reports = resolve_path(config.paths.reports) if config.report.build else None
        done = finish_sweep(
            sweep_dir,
            reports,
            ensembles=self.ensembles,
            human_cost_per_label=config.report.get("human_cost_per_label"),
            label_budget_usd=config.report.get("label_budget_usd"),
        )
        if done.exit_code is not None:
            # The sweep exits with the code of its most severe cell (see mmjudge.store.status).
            note_exit(done.exit_code, replace=True)
            print(f"sweep: {status_line(done.by_status)}", file=sys.stderr)
        if done.ensembles:
            print(
                f"ensembles: {len(done.ensembles)} under {sweep_dir / 'ensembles'}",
                file=sys.stderr,
            )
        if done.report is not None:
            print(f"report: {done.report / 'index.html'}", file=sys.stderr)
