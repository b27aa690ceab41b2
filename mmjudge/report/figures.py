"""Figures: κ against dollars per million judgments, κ by dataset, and the image's effect."""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, NullLocator

from mmjudge.report.analysis import MODALITY_NAMES, Analysis, Interval, Judge

MARKERS = {"text": "o", "mm": "s", "image": "^"}
DPI = 110


class Point(NamedTuple):
    judge: Judge
    cost: float
    kappa: Interval
    frontier: bool


def _colours(analysis: Analysis) -> dict[str, tuple[float, float, float, float]]:
    models = sorted({c.judge.model for d in analysis.datasets for c in d.cells})
    cmap = plt.get_cmap("tab10")
    return {m: cmap(i % 10) for i, m in enumerate(models)}


def is_ensemble(model: str) -> bool:
    """Panels and cascades are virtual judges built from saved records (``mmjudge.panels``)."""
    return model.startswith(("panel:", "cascade:"))


def _save(fig: plt.Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


class CostAxis(NamedTuple):
    """A log axis of $ per million with a band at the left where free judges ($0) sit."""

    free_x: float
    band: tuple[float, float]
    low_decade: int
    high_decade: int

    @classmethod
    def fit(cls, costs: list[float]) -> CostAxis:
        positive = [c for c in costs if c > 0 and math.isfinite(c)]
        low = math.floor(math.log10(min(positive))) if positive else 0
        high = math.ceil(math.log10(max(positive))) if positive else low + 1
        high = max(high, low + 1)
        return cls(10.0 ** (low - 1), (10.0 ** (low - 1.5), 10.0 ** (low - 0.5)), low, high)

    def x(self, cost: float) -> float:
        return cost if cost > 0 else self.free_x

    def apply(self, ax: Axes) -> None:
        ax.set_xscale("log")
        ax.axvspan(*self.band, color="0.92", zorder=0)
        ax.axvline(self.band[1], color="0.6", linestyle=":", linewidth=0.8, zorder=1)
        ticks = [self.free_x] + [10.0**k for k in range(self.low_decade, self.high_decade + 1)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels(["free"] + [_money(t) for t in ticks[1:]], fontsize=8)
        ax.set_xlim(self.band[0], 10.0 ** (self.high_decade + 0.3))


def _money(value: float) -> str:
    if value >= 1e6:
        return f"${value / 1e6:g}M"
    if value >= 1e3:
        return f"${value / 1e3:g}k"
    return f"${value:g}"


def _panel(
    ax: Axes,
    title: str,
    points: list[Point],
    ceiling: tuple[float, float] | None,
    axis: CostAxis,
    colours: dict[str, tuple[float, float, float, float]],
) -> None:
    axis.apply(ax)
    if ceiling is not None:
        ax.axhspan(ceiling[0], ceiling[1], color="tab:green", alpha=0.15, zorder=0)
        for value in set(ceiling):
            ax.axhline(value, color="tab:green", linewidth=0.8, alpha=0.7, zorder=1)
    for p in points:
        if not p.kappa.known:
            continue
        x, y = axis.x(p.cost), p.kappa.estimate
        colour = colours.get(p.judge.model, (0.3, 0.3, 0.3, 1.0))
        if math.isfinite(p.kappa.low) and math.isfinite(p.kappa.high):
            ax.errorbar(
                x,
                y,
                yerr=[[y - p.kappa.low], [p.kappa.high - y]],
                fmt="none",
                ecolor=colour,
                elinewidth=1.0,
                capsize=2.5,
                alpha=0.8,
                zorder=2,
            )
        ax.scatter(
            x,
            y,
            marker=MARKERS.get(p.judge.modality, "D"),
            color=colour,
            s=55,
            edgecolor="black",
            linewidth=1.6 if p.frontier else 0.4,
            zorder=4,
        )
        if is_ensemble(p.judge.model):
            ax.scatter(x, y, marker="o", s=170, facecolors="none", edgecolors=colour, zorder=4)
        ax.annotate(
            p.judge.model,
            (x, y),
            textcoords="offset points",
            xytext=(6, 3),
            fontsize=7,
            color="0.25",
        )
    front = sorted((p for p in points if p.frontier), key=lambda p: (p.cost, p.kappa.estimate))
    if front:
        ax.plot(
            [axis.x(p.cost) for p in front],
            [p.kappa.estimate for p in front],
            color="black",
            linestyle="--",
            linewidth=1.0,
            drawstyle="steps-post",
            zorder=3,
        )
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("$ per million judgments", fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.tick_params(axis="y", labelsize=8)


def kappa_vs_cost(analysis: Analysis, path: Path) -> Path:
    """κ (y, 95% bootstrap interval) against $ per million judgments (x, log; free judges
    in a band at the left), one point per judge, the Pareto frontier dashed, the human–human
    range as a green band; a panel per dataset and one averaged over datasets."""
    colours = _colours(analysis)
    panels: list[tuple[str, list[Point], tuple[float, float] | None]] = [
        (
            stats.name,
            [Point(c.judge, c.usd_per_million, c.kappa, c.frontier) for c in stats.cells],
            stats.ceiling,
        )
        for stats in analysis.datasets
    ]
    if len(analysis.datasets) > 1:
        panels.append(
            (
                "average over datasets",
                [Point(a.judge, a.usd_per_million, a.kappa, a.frontier) for a in analysis.averages],
                None,
            )
        )
    if not panels:
        panels.append(("(no completed runs)", [], None))
    axis = CostAxis.fit([p.cost for _, points, _ in panels for p in points])
    columns = min(len(panels), 3)
    rows = math.ceil(len(panels) / columns)
    width = max(6.4, 4.8 * columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(width, 3.9 * rows + 0.9), squeeze=False, sharey=True
    )
    for index, (title, points, ceiling) in enumerate(panels):
        ax = axes[index // columns][index % columns]
        _panel(ax, title, points, ceiling, axis, colours)
        if index % columns == 0:
            ax.set_ylabel("Cohen's κ vs human consensus", fontsize=8)
    for index in range(len(panels), rows * columns):
        axes[index // columns][index % columns].axis("off")
    modalities = sorted({p.judge.modality for _, points, _ in panels for p in points})
    handles: list[Line2D | Patch] = [
        Line2D(
            [],
            [],
            marker=MARKERS.get(m, "D"),
            linestyle="",
            color="0.5",
            markeredgecolor="black",
            label=MODALITY_NAMES.get(m, m),
        )
        for m in modalities
    ]
    handles += [Patch(color=colour, label=model) for model, colour in colours.items()]
    if any(is_ensemble(p.judge.model) for _, points, _ in panels for p in points):
        handles.append(
            Line2D(
                [],
                [],
                marker="o",
                markersize=10,
                markerfacecolor="none",
                linestyle="",
                color="0.3",
                label="panel or cascade (ringed)",
            )
        )
    handles.append(Line2D([], [], color="black", linestyle="--", label="Pareto frontier"))
    handles.append(Patch(color="tab:green", alpha=0.3, label="human–human κ (min–max)"))
    ncol = max(1, min(len(handles), int(width / 1.75)))
    fig.legend(handles=handles, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    legend_rows = math.ceil(len(handles) / ncol)
    legend_height = (0.22 * legend_rows + 0.15) / (3.9 * rows + 0.9)
    fig.tight_layout(rect=(0, min(0.4, legend_height), 1, 1))
    return _save(fig, path)


def kappa_by_dataset(analysis: Analysis, path: Path) -> Path:
    """A forest plot: each judge's κ with its interval, one colour per dataset, and each
    dataset's human–human range as dotted lines."""
    judges = sorted(
        {c.judge for d in analysis.datasets for c in d.ranked},
        key=lambda j: (-_mean_kappa(analysis, j), j),
    )
    n = max(len(judges), 1)
    fig, ax = plt.subplots(figsize=(8.5, 1.2 + 0.42 * n * max(1, len(analysis.datasets)) ** 0.5))
    cmap = plt.get_cmap("Dark2")
    k = max(len(analysis.datasets), 1)
    for d_index, stats in enumerate(analysis.datasets):
        colour = cmap(d_index % 8)
        offset = (d_index - (k - 1) / 2) * (0.7 / k)
        for cell in stats.ranked:
            y = judges.index(cell.judge) + offset
            lo, hi = cell.kappa.low, cell.kappa.high
            if math.isfinite(lo) and math.isfinite(hi):
                ax.plot([lo, hi], [y, y], color=colour, linewidth=1.4)
            ax.scatter(
                cell.kappa.estimate,
                y,
                color=colour,
                marker=MARKERS.get(cell.judge.modality, "D"),
                s=32,
                zorder=3,
            )
        ceiling = stats.ceiling
        if ceiling is not None:
            for value in set(ceiling):
                ax.axvline(value, color=colour, linestyle=":", linewidth=1.0)
    ax.set_yticks(range(len(judges)))
    ax.set_yticklabels([analysis.judge_name(j) for j in judges], fontsize=8)
    ax.set_ylim(max(len(judges), 1) - 0.5, -0.5)
    ax.set_xlabel("Cohen's κ vs human consensus (95% bootstrap interval by query)", fontsize=8)
    ax.grid(True, axis="x", alpha=0.3)
    handles = [
        Line2D([], [], color=cmap(i % 8), marker="o", label=s.name)
        for i, s in enumerate(analysis.datasets)
    ]
    if handles:
        ax.legend(handles=handles, fontsize=8, loc="best", title="dataset", title_fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


def _mean_kappa(analysis: Analysis, judge: Judge) -> float:
    values = [c.kappa.estimate for d in analysis.datasets for c in d.ranked if c.judge == judge]
    return sum(values) / len(values) if values else -math.inf


def image_vs_text(analysis: Analysis, path: Path) -> Path | None:
    """Δκ (image + text or image only, minus text only) per model and dataset, with the
    paired bootstrap interval; None when no model ran with and without the image."""
    rows = [(d.name, c) for d in analysis.datasets for c in d.modality_effects]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8.5, 1.2 + 0.38 * len(rows)))
    for y, (_, c) in enumerate(rows):
        colour = "tab:blue" if c.distinguishable else "0.55"
        if math.isfinite(c.low) and math.isfinite(c.high):
            ax.plot([c.low, c.high], [y, y], color=colour, linewidth=1.6)
        ax.scatter(
            c.difference,
            y,
            color=colour if c.distinguishable else "white",
            edgecolor=colour,
            marker=MARKERS.get(c.a.judge.modality, "D"),
            s=40,
            zorder=3,
        )
    ax.axvline(0.0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(
        [
            f"{c.a.judge.model}: {MODALITY_NAMES.get(c.a.judge.modality, c.a.judge.modality)}"
            f" − text only · {name}"
            for name, c in rows
        ],
        fontsize=8,
    )
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(
        "Δκ vs text only (paired bootstrap 95% interval; hollow: interval contains 0)", fontsize=8
    )
    ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    return _save(fig, path)
