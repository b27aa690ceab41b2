"""``mmjudge sweep [OVERRIDES…] [-m]`` and ``python -m mmjudge.sweep``: run one cell, or a grid
with ``-m``, as a Hydra app."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from mmjudge.cli.exits import (
    fail,
    file_error_line,
    interrupted_lines,
    note_exit,
    pending_exit,
    stopped_between_calls,
)
from mmjudge.config.hydra_errors import (
    CONFIG_ERRORS,
    CONFIG_FILE_ERRORS,
    config_error_line,
    config_errors_raised,
    config_file_error_line,
    user_wants_full_errors,
)
from mmjudge.config.keys import config_dir_of, unknown_setting
from mmjudge.config.resolvers import register as register_resolvers
from mmjudge.engine.concurrency import announce_in_flight
from mmjudge.engine.interrupt import (
    raise_on_sigterm,
    redeliver_interrupts_lost_in_finalizers,
    signal_number_of,
)
from mmjudge.errors import MMJudgeError
from mmjudge.keyguard import check_overrides, keep_run_config
from mmjudge.locations import CONFIG_DIR as SHIPPED_CONFIG_DIR
from mmjudge.locations import CONFIG_SEARCH_PATH, resolve_path
from mmjudge.speed import Speed, read_switch
from mmjudge.speed.report_child import ReportChild
from mmjudge.store import RunSummary
from mmjudge.store.cell_lines import cell_line, prompt_chosen
from mmjudge.store.cleanup import removed_unless_judged
from mmjudge.store.log import keeping_warnings, say
from mmjudge.store.status import EXIT_CONFIG, INTERRUPTED, anything_judged

#: The shipped config groups on disk (package data), for the checks that read files.
CONFIG_DIR = str(SHIPPED_CONFIG_DIR)


register_resolvers()


@hydra.main(version_base="1.3", config_path=CONFIG_SEARCH_PATH, config_name="config")
def _app(cfg: DictConfig) -> None:
    from mmjudge.grid.hydra_jobs import (
        hold_stops_between_jobs,
        in_worker,
        job_running_here,
        stop_marked,
    )

    redeliver_interrupts_lost_in_finalizers()
    if not in_worker():
        with job_running_here():
            _job(cfg)
        return
    # A launcher's worker: a stop must end this job, never reach the launcher's code (which
    # would tear the other workers down with their calls in flight; grid/hydra_jobs.py).
    hold_stops_between_jobs()
    if stop_marked(Path(str(HydraConfig.get().sweep.dir))):
        note_exit(128 + signal.SIGINT)  # the sweep stops after this batch; this cell waits
        return
    try:
        with job_running_here():
            _job(cfg)
    except KeyboardInterrupt as stop:  # before the cell's calls began, or after they ended
        note_exit(128 + signal_number_of(stop))


def _job(cfg: DictConfig) -> None:
    """One cell of the command: judged (or forecast, ``runner.dry_run=true``) into the folder
    Hydra made for it, its line on the console, and for a single run its report."""
    from mmjudge.engine.cell import forecast, run_cell

    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    # A run that stops before judging anything leaves no folder (the error says why).
    # What the console shows for this run is kept in its sweep.log too (runs/log.py).
    # A single run's report is built by a child that imports it meanwhile (speed/report_child.py).
    report = not multirun and cfg.report.build and not cfg.runner.dry_run
    speed = _speed()  # read once, where the run starts, and handed to what runs it
    ahead = ReportChild.start(_report_builder, speed) if report else None
    with removed_unless_judged(run_dir), keeping_warnings(run_dir), _closing(ahead):
        try:
            keep_run_config(cfg, run_dir)
            # the overrides as given: one holding an interpolation is read when the cell is
            prompt_named = prompt_chosen(_given(hydra_cfg.overrides.task))
            if cfg.runner.dry_run:
                planned = forecast(cfg, run_dir, secrets_checked=True, speed=speed)
                say(planned.line(prompt_named=prompt_named), run_dir, stream=sys.stdout)
                return
            summary = run_cell(
                cfg,
                run_dir,
                secrets_checked=True,
                resume_setting=_folder_setting(run_dir),
                speed=speed,
            )
            if summary.status.stopped_because:
                say(f"mmjudge: {summary.status.stopped_because}", run_dir, level=logging.WARNING)
            say(cell_line(summary, prompt_named=prompt_named), run_dir, stream=sys.stderr)
            code = summary.status.exit_code
            if summary.status.status == INTERRUPTED:
                _interrupted(summary, run_dir, multirun)
            note_exit(code)
            if report and anything_judged([summary.status.status]):  # none of nothing
                out = _report(
                    ahead,
                    run_dir,
                    resolve_path(cfg.paths.reports),
                    human_cost_per_label=cfg.report.human_cost_per_label,
                    label_budget_usd=cfg.report.label_budget_usd,
                )
                say(f"report: {out / 'index.html'}", run_dir)
        except MMJudgeError as error:
            say(f"mmjudge: {error}", run_dir, level=logging.ERROR)
            sys.exit(EXIT_CONFIG)
        except CONFIG_ERRORS as error:
            # A value read only now (an interpolation such as ${nosuch}): said here in one
            # line, before Hydra would log the job's failure on a line of its own.
            if user_wants_full_errors():
                raise
            say(f"mmjudge: {config_error_line(error)}", run_dir, level=logging.ERROR)
            sys.exit(EXIT_CONFIG)


def _given(overrides: Any) -> list[str]:
    """Hydra's list of a job's overrides as the strings given, nothing in them resolved."""
    return [str(o) for o in OmegaConf.to_container(overrides, resolve=False) or []]


def _interrupted(summary: RunSummary, run_dir: Path, multirun: bool) -> None:
    """A cell a stop signal interrupted: in this process, say how to take the run (or the
    sweep) up and stop (a stopped multirun starts no further cell); in a launcher's worker,
    return: the sweep sees the status and stops after its batch, saying how to go on."""
    from mmjudge.grid.hydra_jobs import in_worker

    if multirun and in_worker():
        note_exit(summary.status.exit_code)
        return
    where = str(HydraConfig.get().sweep.dir) if multirun else str(run_dir)
    say(interrupted_lines(summary, where, multirun=multirun), run_dir)
    raise SystemExit(summary.status.exit_code)


def _speed() -> Speed:
    """Whether this run uses the speed machinery (``MMJUDGE_FAST_PATH``); a value that says
    neither on nor off stops it in one line, before anything runs."""
    try:
        return read_switch()
    except MMJudgeError as error:
        sys.exit(fail("mmjudge", error))


def _folder_setting(run_dir: Path) -> str:
    """The setting that has the same command find this run's folder again: the sweep's, in a
    multirun."""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode == RunMode.MULTIRUN:
        return f"hydra.sweep.dir={hydra_cfg.sweep.dir}"
    return f"hydra.run.dir={run_dir}"


def _report_builder() -> Callable[..., Path]:
    """The report's builder, imported only now (plotting and tables take a while to load)."""
    from mmjudge.report.build import build_report

    return build_report


def _report(ahead: ReportChild | None, *args: Any, **kwargs: Any) -> Path:
    """The run's report, built by ``ahead`` where there is one, else here."""
    if ahead is not None:
        return ahead.build(*args, **kwargs)
    return _report_builder()(*args, **kwargs)


@contextlib.contextmanager
def _closing(ahead: ReportChild | None) -> Iterator[None]:
    try:
        yield
    finally:
        if ahead is not None:
            ahead.close()


def _last_run_dir() -> Path | None:
    """The folder of the run Hydra started last (None before it started one), whose log keeps
    a stop that came between its calls."""
    if not HydraConfig.initialized():
        return None
    try:
        output_dir = HydraConfig.get().runtime.output_dir
    except (AttributeError, ValueError, MissingMandatoryValue):  # no job started yet
        return None
    return Path(output_dir) if output_dir else None


def with_grid_sweeper(argv: Sequence[str]) -> list[str]:
    """A multirun's arguments with mmjudge's sweeper chosen (``hydra/sweeper=mmjudge``: the
    grid composed and checked once, run by the grid's loop through the launcher named),
    unless they choose a sweeper of their own."""
    from hydra_plugins.mmjudge_grid.grid_sweeper import register

    arguments = list(argv)
    if not any(a in ("-m", "--multirun") for a in arguments):
        return arguments
    register()
    if any(a.lstrip("+~").startswith("hydra/sweeper=") for a in arguments):
        return arguments
    return [*arguments, "hydra/sweeper=mmjudge"]


def run_app() -> None:
    """Run the Hydra app with ``sys.argv`` as its command line; exits with the sweep's code."""
    problem = check_overrides(sys.argv[1:])
    if problem:
        sys.exit(fail("mmjudge", problem))
    # Hydra's own message for a misspelt key spans several lines and lists no valid keys.
    problem = unknown_setting(sys.argv[1:], Path(CONFIG_DIR))
    if problem:
        sys.exit(fail("mmjudge", problem))
    raise_on_sigterm()
    announce_in_flight()  # the calls-in-flight line, once for the whole sweep
    sys.argv = [sys.argv[0], *with_grid_sweeper(sys.argv[1:])]
    full_errors = user_wants_full_errors()
    try:
        # Hydra prints a config it cannot compose in several lines and exits 1; raised
        # instead, it is said in one line and exits 2 like every other configuration error.
        with config_errors_raised():
            _app()
    except CONFIG_ERRORS as error:
        if full_errors:
            raise
        sys.exit(fail("mmjudge", config_error_line(error)))
    except CONFIG_FILE_ERRORS as error:
        if full_errors:
            raise
        sys.exit(fail("mmjudge", config_file_error_line(error, config_dir_of(sys.argv[1:]))))
    except MMJudgeError as error:  # a check before the run's own (a callback's, say)
        sys.exit(fail("mmjudge", error))
    except OSError as error:
        if full_errors or error.filename is None:
            raise
        sys.exit(fail("mmjudge", file_error_line(error)))
    except KeyboardInterrupt as error:
        number = signal_number_of(error)
        print(file=sys.stderr)  # off the progress bar's line
        line = f"mmjudge: {stopped_between_calls(number, sys.argv[1:])}"
        say(line, _last_run_dir(), level=logging.WARNING)
        sys.exit(128 + number)
    sys.exit(pending_exit())


def main(argv: Sequence[str]) -> int:
    """``mmjudge sweep``: run the sweep with ``argv`` as its command line (Hydra reads
    ``sys.argv``)."""
    sys.argv = [sys.argv[0], *argv]
    try:
        run_app()
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return 0
