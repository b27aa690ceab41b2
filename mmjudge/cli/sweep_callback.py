"""The end of a multirun of the command: the Hydra callback that finishes the sweep
(:func:`mmjudge.api.sweep_end.finish_sweep`, which the library's :func:`mmjudge.run_sweep`
calls too) and tells the console and the exit code what came of it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from mmjudge.api.sweep_end import finish_sweep
from mmjudge.cli.exits import fail, note_exit


class FoldersBefore(Callback):
    """Before Hydra makes a run's or a sweep's folder (it calls ``on_run_start`` and
    ``on_multirun_start`` first): stops the command in one line when it could not write
    where it is told to (:func:`mmjudge.config.run.output_problem`), else notes what the
    folder holds, so that a run that stops before judging anything removes only what it made
    (:func:`mmjudge.store.cleanup.note_existing`)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        from mmjudge.store.cleanup import note_existing

        _stop_on(config, multirun=False)
        note_existing(Path(str(config.hydra.run.dir)))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from mmjudge.store.cleanup import note_sweep_folder

        _stop_on(config, multirun=True)
        note_sweep_folder(Path(str(config.hydra.sweep.dir)))


def _stop_on(config: DictConfig, *, multirun: bool) -> None:
    """Stop the command (exit 2, one line) when it cannot write where ``config`` says."""
    from mmjudge.config.run import output_problem

    problem = output_problem(config, multirun=multirun)
    if problem:
        raise SystemExit(fail("mmjudge", problem))


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
