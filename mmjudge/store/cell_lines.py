"""The lines a cell is told in, one definition each: the closing line of a run, headed by the
cell's display name (:func:`mmjudge.config.names.cell_display_name`), and its notes. A dry
run's line is its forecast's own (:meth:`~mmjudge.store.forecast_file.CellForecast.line`, which
the library returns too)."""

from __future__ import annotations

from collections.abc import Sequence

from mmjudge.config.names import cell_display_name
from mmjudge.display import interval, number, usd
from mmjudge.store import RunSummary
from mmjudge.store.blocks import possible_extra
from mmjudge.store.status import COMPLETE


def prompt_chosen(overrides: Sequence[str]) -> bool:
    """Whether the command line (or the sweep, for one of its cells) chooses the prompt:
    ``prompt=…``, ``prompt.id=…``, ``+prompt=…``. Hydra gives each cell of a multirun the
    overrides it was started with, the swept value included."""
    for override in overrides:
        key = override.lstrip("~+").split("=", 1)[0]
        if key.split("@", 1)[0].split(".", 1)[0] == "prompt":
            return True
    return False


def cell_line(summary: RunSummary, *, prompt_named: bool = False) -> str:
    """The closing line of a run: what was judged, agreement and spend. It names every axis a
    sweep can vary (:func:`mmjudge.config.names.cell_display_name`)."""
    c = summary.cell
    cell = cell_display_name(
        c.dataset, c.model, c.modality, c.prompt_id, c.perturb, prompt_named=prompt_named
    )
    if summary.status.status == "skipped":
        return f"{cell}: skipped — {summary.status.skip_reason}"
    kappa = summary.metrics.kappa
    kappa_text = f"κ={number(kappa if isinstance(kappa, float) else None)}"
    scored = summary.metrics.n_scored
    answered = summary.n_judgments - summary.n_errors - summary.n_unparseable
    if isinstance(kappa, float) and scored is not None and scored < answered:
        # items no person graded (dataset.allow_unlabelled) or off the scale are not in κ
        kappa_text += f" on {scored:,} scored items"
    cost = summary.cost
    line = (
        f"{cell}: {summary.n_judgments} judgments, {summary.n_errors} errors, "
        f"{summary.n_unparseable} unparseable, {kappa_text}, {spend_text(summary)}"
    )
    possible = possible_extra(cost)
    if possible.sends:  # beside what is known, never added to it
        line += (
            f", possibly billed +{usd(possible.usd)} "
            f"({possible.sends} sends given up after they left)"
        )
    return line + stability_note(summary) + status_note(summary)


def spend_text(summary: RunSummary) -> str:
    """What the run's judgments are worth at the price sheet and, where answers came from the
    response cache, what was paid beside it: ``$0 paid (all answers from the cache), worth
    $0.012 ($51.25 per million)``; the worth alone when every answer was paid for (or the
    judge is free)."""
    cost = summary.cost
    worth = f"{usd(cost.total_usd)} ({usd(cost.usd_per_million)} per million)"
    cached = summary.calls.cache_hits if summary.calls is not None else 0
    if not cached or cost.total_usd <= 0:
        return worth
    if cost.spent_usd <= 0:
        return f"$0 paid (all answers from the cache), worth {worth}"
    answers = "answer" if cached == 1 else "answers"
    return f"{usd(cost.spent_usd)} paid ({cached:,} {answers} from the cache), worth {worth}"


def stability_note(summary: RunSummary) -> str:
    """Test–retest (``runner.samples``): κ between the judge's samples with its interval,
    the unstable items, the human–human κ beside it and the repeats' cost; "" without
    samples."""
    block = summary.stability
    if block is None:
        return ""
    text = interval(block.kappa)
    unstable = f"{block.n_unstable} unstable items"
    if block.unstable_share is not None:
        unstable += f", {100 * block.unstable_share:.1f}%"
    humans = [v for v in (summary.metrics.human_human_kappa or {}).values() if v is not None]
    ceiling = ""
    if humans:
        low_h, high_h = min(humans), max(humans)
        span = f"{low_h:.3f}" if low_h == high_h else f"{low_h:.3f}–{high_h:.3f}"
        ceiling = f"; human–human κ={span}"
    return (
        f"; self-agreement κ={text} over {block.samples} samples ({unstable}{ceiling}), "
        f"repeats {usd(block.total_usd)}"
    )


def status_note(summary: RunSummary) -> str:
    """``; status partial: 2 of 16 judgments failed …`` for a cell's closing line ("" when
    complete)."""
    status = summary.status.status
    if status == COMPLETE:
        return ""
    reason = summary.status.status_reason
    if reason and reason != summary.status.stopped_because:
        return f"; status {status}: {reason}"
    return f"; status {status}"
