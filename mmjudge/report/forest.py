"""Forest plots, a panel per dataset with judges as rows: κ with its interval, and the change
in κ when a model sees the image. Same width, colours and markers as :mod:`figures`."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mmjudge.report.analysis import Analysis, Judge
from mmjudge.report.figures import (
    CHANCE,
    CHANCE_STYLE,
    DPI,
    WIDTH,
    chance_handle,
    legend,
    legend_handles,
    save,
    used,
)
from mmjudge.report.style import MARKERS

MAX_ROWS = 40
"""Judges shown in the κ-by-dataset figure at most (the best by mean κ; all are in the table)."""


def _mean_kappa(analysis: Analysis, judge: Judge) -> float:
    values = [c.kappa.estimate for d in analysis.datasets for c in d.ranked if c.judge == judge]
    return sum(values) / len(values) if values else -math.inf


def shown_judges(analysis: Analysis) -> tuple[list[Judge], int]:
    """The judges of the κ-by-dataset figure (best mean κ first, at most MAX_ROWS) and how
    many judges there are in all."""
    judges = sorted(
        {c.judge for d in analysis.datasets for c in d.ranked},
        key=lambda j: (-_mean_kappa(analysis, j), j),
    )
    return judges[:MAX_ROWS], len(judges)


def by_dataset_figure(analysis: Analysis) -> Figure:
    """A forest plot per dataset: each judge's κ with its interval (rows shared), the
    dataset's human–human range shaded."""
    judges, total = shown_judges(analysis)
    datasets = analysis.datasets or []
    columns = max(1, len(datasets))
    fig = plt.figure(
        dpi=DPI, figsize=(WIDTH, 1.5 + 0.2 * max(len(judges), 3)), layout="constrained"
    )
    axes = fig.subplots(1, columns, sharey=True, squeeze=False)[0]
    rows = {judge: i for i, judge in enumerate(judges)}
    for ax, stats in zip(axes, datasets, strict=False):
        ax.axvline(CHANCE, **CHANCE_STYLE)
        if stats.ceiling is not None:
            ax.axvspan(*stats.ceiling, color="tab:green", alpha=0.15, linewidth=0)
            for value in set(stats.ceiling):
                ax.axvline(value, color="tab:green", linewidth=0.8, alpha=0.7)
        for cell in stats.ranked:
            y = rows.get(cell.judge)
            if y is None:
                continue
            colour = analysis.palette.of(cell.judge.model)
            if math.isfinite(cell.kappa.low) and math.isfinite(cell.kappa.high):
                ax.plot([cell.kappa.low, cell.kappa.high], [y, y], color=colour, linewidth=1.4)
            ax.scatter(
                cell.kappa.estimate,
                y,
                color=colour,
                marker=MARKERS.get(cell.judge.modality, "D"),
                edgecolor="black",
                linewidth=0.3,
                s=28,
                zorder=3,
            )
        ax.set_title(stats.name, fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel("Cohen's κ (95% interval)", fontsize=8)
    axes[0].set_yticks(range(len(judges)))
    axes[0].set_yticklabels([analysis.judge_name(j) for j in judges], fontsize=7.5)
    axes[0].set_ylim(max(len(judges), 1) - 0.5, -0.5)
    if total > len(judges):
        fig.suptitle(
            f"The {len(judges)} judges with the highest mean κ, of {total} (all are in the tables)",
            fontsize=9,
        )
    modalities = sorted({j.modality for j in judges})
    band = [Patch(color="tab:green", alpha=0.3, label="human–human κ (min–max)")]
    drawn = any(stats.ceiling is not None for stats in analysis.datasets)
    legend(
        fig,
        legend_handles(
            used(analysis.palette, {j.model for j in judges}),
            modalities,
            [*(band if drawn else []), chance_handle()],
        ),
    )
    return fig


def kappa_by_dataset(analysis: Analysis, path: Path) -> Path:
    return save(by_dataset_figure(analysis), path)


def image_figure(analysis: Analysis) -> Figure | None:
    """Δκ of image + text and of image only against text only, per model (and prompt) and
    dataset, with paired intervals; hollow where the interval contains 0. None when no
    model ran with and without the image."""
    datasets = [d for d in analysis.datasets if d.modality_effects]
    if not datasets:
        return None
    keys = sorted(
        {(c.a.judge.model, c.a.judge.prompt_id) for d in datasets for c in d.modality_effects}
    )
    rows = {key: i for i, key in enumerate(keys)}
    fig = plt.figure(dpi=DPI, figsize=(WIDTH, 1.6 + 0.22 * max(len(keys), 3)), layout="constrained")
    axes = fig.subplots(1, len(datasets), sharey=True, squeeze=False)[0]
    for ax, stats in zip(axes, datasets, strict=True):
        for c in stats.modality_effects:
            row = rows[(c.a.judge.model, c.a.judge.prompt_id)]
            y = row + (-0.17 if c.a.judge.modality == "mm" else 0.17)
            colour = analysis.palette.of(c.a.judge.model)
            if math.isfinite(c.low) and math.isfinite(c.high):
                ax.plot([c.low, c.high], [y, y], color=colour, linewidth=1.4)
            ax.scatter(
                c.difference,
                y,
                color=colour if c.distinguishable else "white",
                edgecolor=colour if not c.distinguishable else "black",
                linewidth=1.2 if not c.distinguishable else 0.3,
                marker=MARKERS.get(c.a.judge.modality, "D"),
                s=34,
                zorder=3,
            )
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_title(stats.name, fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=8)
        ax.set_xlabel("Δκ vs text only (paired 95% interval)", fontsize=8)
    names = [f"{m} · {p}" if analysis.with_prompt else m for m, p in keys]
    axes[0].set_yticks(range(len(keys)))
    axes[0].set_yticklabels(names, fontsize=7.5)
    axes[0].set_ylim(len(keys) - 0.5, -0.5)
    legend(
        fig,
        legend_handles(
            used(analysis.palette, {m for m, _ in keys}),
            ["mm", "image"],
            [
                Line2D(
                    [],
                    [],
                    marker="o",
                    linestyle="",
                    markerfacecolor="white",
                    color="0.4",
                    label="hollow: interval contains 0",
                ),
            ],
        ),
    )
    return fig


def image_vs_text(analysis: Analysis, path: Path) -> Path | None:
    fig = image_figure(analysis)
    return None if fig is None else save(fig, path)
