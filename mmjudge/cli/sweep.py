"""``mmjudge sweep [OVERRIDES…] [-m]`` and ``python -m mmjudge.sweep``: run one cell, or a grid
with ``-m``, as a Hydra app."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from mmjudge.cli.exits import (
    fail,
    interrupted_lines,
    note_exit,
    pending_exit,
    status_note,
    stopped_between_calls,
)
from mmjudge.cli.report_ahead import ReportAhead
from mmjudge.config import register_configs
from mmjudge.config.hydra_errors import (
    CONFIG_ERRORS,
    config_error_line,
    config_errors_raised,
    user_wants_full_errors,
)
from mmjudge.config.keys import unknown_setting
from mmjudge.config.names import DEFAULT_PROMPT, cell_display_name, register_resolvers
from mmjudge.errors import MMJudgeError
from mmjudge.keyguard import check_overrides, keep_run_config
from mmjudge.locations import CONFIG_DIR as SHIPPED_CONFIG_DIR
from mmjudge.locations import CONFIG_SEARCH_PATH, resolve_path
from mmjudge.running.interrupt import raise_on_sigterm, signal_number_of
from mmjudge.runs import RunSummary
from mmjudge.runs.blocks import possible_extra
from mmjudge.runs.cleanup import removed_unless_judged
from mmjudge.runs.log import keeping_warnings, say
from mmjudge.runs.status import EXIT_CONFIG, INTERRUPTED

#: The shipped config groups on disk (package data), for the checks that read files.
CONFIG_DIR = str(SHIPPED_CONFIG_DIR)


def _resolve_path(value: str) -> str:
    return str(resolve_path(value))


def _log_level(verbose: object) -> str:
    """The level of mmjudge's and Hydra's own loggers: INFO, or DEBUG with ``hydra.verbose=true``
    (libraries stay at the root's WARNING unless the user turns them up; see conf/config.yaml)."""
    return "DEBUG" if verbose is True else "INFO"


register_resolvers()  # mmjudge_run_folder: the cells' folder names
if not OmegaConf.has_resolver("mmjudge_path"):
    OmegaConf.register_new_resolver("mmjudge_path", _resolve_path)
if not OmegaConf.has_resolver("mmjudge_log_level"):
    OmegaConf.register_new_resolver("mmjudge_log_level", _log_level)
register_configs()


@hydra.main(version_base="1.3", config_path=CONFIG_SEARCH_PATH, config_name="config")
def _app(cfg: DictConfig) -> None:
    from mmjudge.running.cell import run_cell

    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = hydra_cfg.mode == RunMode.MULTIRUN
    # A run that stops before judging anything leaves no folder (the error says why).
    # What the console shows for this run is kept in its sweep.log too (runs/log.py).
    # A single run's report is built by a child that imports it meanwhile (cli/report_ahead.py).
    report = not multirun and cfg.report.build and not cfg.runner.dry_run
    ahead = ReportAhead.start() if report else None
    with removed_unless_judged(run_dir), keeping_warnings(run_dir), _closing(ahead):
        try:
            keep_run_config(cfg, run_dir)
            summary = run_cell(cfg, run_dir, secrets_checked=True)
            prompt_named = prompt_chosen(hydra_cfg.overrides.task)
            if not isinstance(summary, RunSummary):
                say(cell_line(summary, prompt_named=prompt_named), run_dir, stream=sys.stdout)
                return
            if summary.status.stopped_because:
                say(f"mmjudge: {summary.status.stopped_because}", run_dir, level=logging.WARNING)
            line = cell_line(summary, prompt_named=prompt_named)
            say(line, run_dir, stream=sys.stdout if cfg.runner.dry_run else sys.stderr)
            code = summary.status.exit_code
            if summary.status.status == INTERRUPTED:
                where = str(hydra_cfg.sweep.dir) if multirun else str(run_dir)
                say(interrupted_lines(summary, where, multirun=multirun), run_dir)
                # A stopped multirun stops: the next cells are not started.
                raise SystemExit(code)
            note_exit(code)
            if report:
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


def _report(ahead: ReportAhead | None, *args: Any, **kwargs: Any) -> Path:
    """The run's report, built by ``ahead`` where there is one, else here."""
    if ahead is not None:
        return ahead.build(*args, **kwargs)
    from mmjudge.report.build import build_report  # plotting and tables, only now

    return build_report(*args, **kwargs)


@contextlib.contextmanager
def _closing(ahead: ReportAhead | None) -> Iterator[None]:
    try:
        yield
    finally:
        if ahead is not None:
            ahead.close()


def prompt_chosen(overrides: Sequence[str]) -> bool:
    """Whether the command line (or the sweep, for one of its cells) chooses the prompt:
    ``prompt=…``, ``prompt.id=…``, ``+prompt=…``. Hydra gives each cell of a multirun the
    overrides it was started with, the swept value included."""
    for override in overrides:
        key = override.lstrip("~+").split("=", 1)[0]
        if key.split("@", 1)[0].split(".", 1)[0] == "prompt":
            return True
    return False


def cell_line(summary: RunSummary | dict[str, Any], *, prompt_named: bool = False) -> str:
    """The closing line of a run: what was judged, agreement and spend (a dry run's:
    the forecast). It names every axis a sweep can vary
    (:func:`mmjudge.config.names.cell_display_name`)."""
    if not isinstance(summary, RunSummary):
        return forecast_line(summary, prompt_named=prompt_named)
    c = summary.cell
    cell = cell_display_name(
        c.dataset, c.model, c.modality, c.prompt_id, c.perturb, prompt_named=prompt_named
    )
    if summary.status.status == "skipped":
        return f"{cell}: skipped — {summary.status.skip_reason}"
    kappa = summary.metrics.kappa
    kappa_text = f"κ={kappa:.3f}" if isinstance(kappa, float) else "κ=n/a"
    scored = summary.metrics.n_scored
    answered = summary.n_judgments - summary.n_errors - summary.n_unparseable
    if isinstance(kappa, float) and scored is not None and scored < answered:
        # items no person graded (dataset.allow_unlabelled) or off the scale are not in κ
        kappa_text += f" on {scored:,} scored items"
    cost = summary.cost
    line = (
        f"{cell}: {summary.n_judgments} judgments, {summary.n_errors} errors, "
        f"{summary.n_unparseable} unparseable, {kappa_text}, "
        f"${cost.total_usd:.4f} (${cost.usd_per_million:,.2f} per million)"
    )
    possible = possible_extra(cost, summary.calls)
    if possible.sends:  # beside what is known, never added to it
        line += (
            f", possibly billed +${possible.usd:.4f} "
            f"({possible.sends} sends given up after they left)"
        )
    return line + stability_note(summary) + status_note(summary)


def stability_note(summary: RunSummary) -> str:
    """Test–retest (``runner.samples``): κ between the judge's samples with its interval,
    the unstable items, the human–human κ beside it and the repeats' cost; "" without
    samples."""
    block = summary.stability
    if not block:
        return ""
    kappa = block.get("kappa") or {}
    estimate, low, high = (kappa.get(k) for k in ("estimate", "low", "high"))
    text = "n/a" if estimate is None else f"{estimate:.3f}"
    if low is not None and high is not None:
        text += f" [{low:.3f}, {high:.3f}]"
    share = block.get("unstable_share")
    unstable = f"{block.get('n_unstable', 0)} unstable items"
    if share is not None:
        unstable += f", {100 * share:.1f}%"
    humans = [v for v in (summary.metrics.human_human_kappa or {}).values() if v is not None]
    ceiling = ""
    if humans:
        low_h, high_h = min(humans), max(humans)
        span = f"{low_h:.3f}" if low_h == high_h else f"{low_h:.3f}–{high_h:.3f}"
        ceiling = f"; human–human κ={span}"
    return (
        f"; self-agreement κ={text} over {block.get('samples')} samples ({unstable}{ceiling}), "
        f"repeats ${float(block.get('total_usd') or 0.0):.4f}"
    )


def forecast_line(data: dict[str, Any], *, prompt_named: bool = False) -> str:
    """The line of a dry run: the forecast at sync and batch prices."""
    cell = cell_display_name(
        data["dataset"],
        data["model"],
        data["modality"],
        str(data.get("prompt_id") or DEFAULT_PROMPT),
        data.get("perturb"),
        prompt_named=prompt_named,
    )
    f = data["forecast"]
    estimate = "" if f.get("exact_text_tokens", True) else " (text tokens estimated)"
    batch = data.get("forecast_batch")
    batch_text = ""
    if isinstance(batch, dict) and f["usd"]:
        usd, per_million = batch["usd"], batch["usd_per_million"]
        batch_text = f"; batch API ${usd:.4f}, ${per_million:,.2f} per million"
    return (
        f"{cell}: forecast {f['calls']} calls, {f['input_tokens']:,} input tokens "
        f"({f['image_tokens']:,} image), {f['output_tokens']:,} output tokens "
        f"(per call from {f.get('output_basis') or 'runner.forecast_output_tokens'}), "
        f"sync ${f['usd']:.4f}, ${f['usd_per_million']:,.2f} per million judgments"
        f"{batch_text}{estimate}{_cut_text(data.get('text_cut'))}"
    )


def _cut_text(cut: object) -> str:
    """What ``dataset.max_text_tokens`` cuts, for the dry run's line (empty when nothing)."""
    if not isinstance(cut, dict) or not cut.get("items"):
        return ""
    return (
        f"; text cut to dataset.max_text_tokens={cut['max_text_tokens']} in {cut['items']:,} "
        f"items (about {cut['tokens_removed']:,} tokens removed)"
    )


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
