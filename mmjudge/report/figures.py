"""Figures of κ against dollars per million judgments: the judges, and the ensembles apart
(the forest plots, κ by dataset and the image's effect, are in :mod:`mmjudge.report.forest`).

Every figure is drawn for a 1,400-pixel-wide page: 12.5 inches at 110 dpi. The model family
is the colour and the modality the marker in all of them (:mod:`mmjudge.report.style`).
Only the points a reader needs carry a label, placed by :mod:`mmjudge.report.label_placement` where
it overlaps nothing; the legend sits inside the image, under the plots.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, NullLocator

from mmjudge.display import usd_tick
from mmjudge.report.analysis import (
    MODALITY_NAMES,
    Analysis,
    AverageCell,
    Cell,
    DatasetStats,
    Interval,
    Judge,
)
from mmjudge.report.label_placement import Label, place_labels
from mmjudge.report.style import MARKERS, Palette, ensemble_label
from mmjudge.report.verdicts import baseline, best_role, recommended

DPI = 110
WIDTH = 12.5
"""Inches: 1,375 pixels at DPI, the width of the page's content."""
ENSEMBLE_COLOURS = {"panel": "#1b7f79", "cascade": "#b5541c"}
CHANCE = 0.0
"""The κ of a judge answering at random: drawn in every figure that shows κ."""
CHANCE_STYLE = {"color": "tab:red", "linestyle": "-.", "linewidth": 0.9, "alpha": 0.8}


def chance_handle() -> Line2D:
    """The legend entry of the chance line."""
    return Line2D([], [], label="chance (κ = 0, a judge answering at random)", **CHANCE_STYLE)  # type: ignore[arg-type]


class Point(NamedTuple):
    judge: Judge
    cost: float
    kappa: Interval
    frontier: bool
    colour: str
    label: str = ""
    """Text shown beside the point; empty for points identified by the legend only."""


def is_ensemble(model: str) -> bool:
    """Panels and cascades are virtual judges built from saved records (``mmjudge.metrics``)."""
    return model.startswith(("panel:", "cascade:"))


def save(fig: Figure, path: Path) -> Path:
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
        ax.axvspan(*self.band, color="0.93", zorder=0)
        ax.axvline(self.band[1], color="0.6", linestyle=":", linewidth=0.8, zorder=1)
        ticks = [self.free_x] + [10.0**k for k in range(self.low_decade, self.high_decade + 1)]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels(["free"] + [usd_tick(t) for t in ticks[1:]], fontsize=8)
        ax.set_xlim(self.band[0], 10.0 ** (self.high_decade + 0.25))


def _kappa_limits(
    points: Sequence[Point], ceiling: tuple[float, float] | None
) -> tuple[float, float]:
    values = [v for p in points for v in (p.kappa.low, p.kappa.high, p.kappa.estimate)]
    values = [v for v in values if math.isfinite(v)] + list(ceiling or ())
    if not values:
        return -0.05, 1.0
    values.append(CHANCE)  # chance is always on the axis, however far above it the judges are
    low, high = min(values), max(values)
    pad = max(0.04, 0.08 * (high - low))
    return low - pad, min(1.02, high + 2 * pad)


def _draw_points(
    ax: Axes, points: Sequence[Point], axis: CostAxis, marker_of: dict[str, str]
) -> None:
    """Interval bars and markers, one collection per marker and emphasis (a collection per
    point would take seconds on a large sweep)."""
    groups: dict[tuple[str, bool], list[Point]] = {}
    for p in points:
        if p.kappa.known:
            groups.setdefault((marker_of.get(p.judge.modality, "D"), bool(p.label)), []).append(p)
    for (marker, strong), group in sorted(groups.items()):
        bars = [p for p in group if math.isfinite(p.kappa.low) and math.isfinite(p.kappa.high)]
        if bars:
            ax.vlines(
                [axis.x(p.cost) for p in bars],
                [p.kappa.low for p in bars],
                [p.kappa.high for p in bars],
                colors=[to_rgba(p.colour, 0.9 if strong else 0.3) for p in bars],
                linewidth=1.2 if strong else 0.8,
                zorder=2,
            )
        ax.scatter(
            [axis.x(p.cost) for p in group],
            [p.kappa.estimate for p in group],
            marker=marker,
            c=[to_rgba(p.colour, 1.0 if strong or p.frontier else 0.75) for p in group],
            s=46 if strong else 26,
            edgecolors="black",
            linewidths=[1.3 if p.frontier else 0.3 for p in group],
            zorder=5 if strong else 4,
        )


def _frontier_line(ax: Axes, points: Sequence[Point], axis: CostAxis, **style: object) -> None:
    front = sorted((p for p in points if p.frontier), key=lambda p: (p.cost, p.kappa.estimate))
    if front:
        ax.plot(
            [axis.x(p.cost) for p in front],
            [p.kappa.estimate for p in front],
            drawstyle="steps-post",
            zorder=3,
            **style,  # type: ignore[arg-type]
        )


def _cost_panel(
    ax: Axes,
    title: str,
    points: list[Point],
    ceiling: tuple[float, float] | None,
    axis: CostAxis,
    background: Sequence[Point] = (),
) -> list[Label]:
    """One dataset's panel; returns the labels to place once the layout is fixed."""
    axis.apply(ax)
    ax.axhline(CHANCE, zorder=1, **CHANCE_STYLE)  # type: ignore[arg-type]
    if ceiling is not None:
        ax.axhspan(ceiling[0], ceiling[1], color="tab:green", alpha=0.15, zorder=0)
        for value in set(ceiling):
            ax.axhline(value, color="tab:green", linewidth=0.8, alpha=0.7, zorder=1)
    known = [p for p in background if p.kappa.known]
    if known:
        ax.scatter(
            [axis.x(p.cost) for p in known],
            [p.kappa.estimate for p in known],
            s=10,
            color="0.75",
            zorder=2,
            linewidth=0,
        )
    _frontier_line(ax, background, axis, color="0.55", linestyle=":", linewidth=1.0)
    _draw_points(ax, points, axis, MARKERS)
    _frontier_line(ax, points, axis, color="black", linestyle="--", linewidth=1.0)
    ax.set_ylim(*_kappa_limits([*points, *background], ceiling))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("$ per million judgments (log scale)", fontsize=8)
    ax.set_ylabel("Cohen's κ vs people's grades", fontsize=8)
    ax.grid(True, alpha=0.3)
    ax.tick_params(axis="y", labelsize=8)
    return [
        Label(ax, p.label, axis.x(p.cost), p.kappa.estimate)
        for p in points
        if p.label and p.kappa.known
    ]


def judge_label(analysis: Analysis, judge: Judge, role: str = "") -> str:
    """A labelled point's text: the model (and prompt, when the report has several); the
    modality is the marker. Within a panel, :func:`distinct_labels` adds what tells two
    labels apart."""
    text = f"{judge.model} · {judge.prompt_id}" if analysis.with_prompt else judge.model
    return f"{text} ({role})" if role else text


class Named(NamedTuple):
    """A point to label: its judge, the sweep it came from and its role (may be empty)."""

    judge: Judge
    sweep: str = ""
    role: str = ""


def distinct_labels(named: Sequence[Named], with_prompt: bool, ensemble: bool = False) -> list[str]:
    """One label per point, none repeated within the panel: the model (the ensemble's short
    name), with the prompt when the report has several; where two labels would read the same,
    the modality is added, then the prompt, then the sweep. The role follows in brackets."""
    shown: list[set[str]] = [{"prompt"} if with_prompt and not ensemble else set() for _ in named]

    def text(index: int) -> str:
        judge, sweep, _ = named[index]
        parts = [ensemble_label(judge.model) if ensemble else judge.model]
        if "modality" in shown[index]:
            parts.append(MODALITY_NAMES.get(judge.modality, judge.modality))
        if "prompt" in shown[index]:
            parts.append(judge.prompt_id)
        if "sweep" in shown[index] and sweep:
            parts.append(sweep)
        return " · ".join(parts)

    for extra in ("modality", "prompt", "sweep"):
        groups: dict[str, list[int]] = {}
        for index in range(len(named)):
            groups.setdefault(text(index), []).append(index)
        for indices in groups.values():
            if len(indices) > 1:
                for index in indices:
                    shown[index].add(extra)
    return [f"{text(i)} ({item.role})" if item.role else text(i) for i, item in enumerate(named)]


def _point(cell: Cell | AverageCell, colour: str, label: str = "") -> Point:
    """A judge (a cell, or its average over datasets) as a point: κ against its price."""
    return Point(cell.judge, cell.usd_per_million, cell.kappa, cell.frontier, colour, label)


def _roles(stats: DatasetStats) -> dict[int, str]:
    """The roles worth a label: the free baseline, the recommended judge (never one that
    may be no better than chance) and the best, called "highest κ" when its interval
    reaches 0."""
    roles: dict[int, str] = {}
    free = baseline(stats.cells)
    if free is not None:
        roles[id(free)] = "free baseline"
    chosen = recommended(stats)
    if chosen is not None:
        roles[id(chosen)] = "recommended"
    if stats.ranked:
        best = stats.ranked[0]
        top = best_role(stats)
        roles[id(best)] = top if best is not chosen else f"{top}, recommended"
    return roles


def _labelled(
    analysis: Analysis, cells: Sequence[Cell | AverageCell], roles: dict[int, str]
) -> list[str]:
    """Each cell's label ("" for a point the legend identifies), unique within the panel."""
    wanted = [i for i, c in enumerate(cells) if c.frontier or id(c) in roles]
    texts = distinct_labels(
        [
            Named(cells[i].judge, getattr(cells[i], "sweep", ""), roles.get(id(cells[i]), ""))
            for i in wanted
        ],
        analysis.with_prompt,
    )
    labels = [""] * len(cells)
    for i, text in zip(wanted, texts, strict=True):
        labels[i] = text
    return labels


def judge_panels(analysis: Analysis) -> list[tuple[str, list[Point], tuple[float, float] | None]]:
    """(title, points, human ceiling) per dataset, then the average over datasets."""
    palette = analysis.palette
    panels = []
    for stats in analysis.datasets:
        labels = _labelled(analysis, stats.cells, _roles(stats))
        points = [
            _point(c, palette.of(c.judge.model), label)
            for c, label in zip(stats.cells, labels, strict=True)
        ]
        panels.append((stats.name, points, stats.ceiling))
    if len(analysis.datasets) > 1:
        ranked = [a for a in analysis.averages if a.kappa.known]
        top = max(ranked, key=lambda a: a.kappa.estimate) if ranked else None
        roles = {}
        if top is not None and top.frontier:
            roles[id(top)] = "best" if top.kappa.above_chance else "highest κ"
        averages = [a for a in analysis.averages if a.frontier]
        labels = _labelled(analysis, averages, roles)
        by_id = {id(a): label for a, label in zip(averages, labels, strict=True)}
        points = [
            _point(a, palette.of(a.judge.model), by_id.get(id(a), "")) for a in analysis.averages
        ]
        panels.append(("average over datasets", points, None))
    return panels


#: Inches a legend entry takes besides its text (the handle and the gaps), and per character
#: of its text at the legend's 8-point type (a generous average, so that rows never overflow).
LEGEND_ENTRY_IN = 0.6
LEGEND_CHAR_IN = 0.072


def legend_handles(
    palette: Palette, modalities: Sequence[str], extra: list[Line2D | Patch]
) -> list[Line2D | Patch]:
    """The legend's entries: the modalities' markers, the models' colours, then ``extra``."""
    handles: list[Line2D | Patch] = [
        Line2D(
            [],
            [],
            marker=MARKERS.get(m, "D"),
            linestyle="",
            color="0.55",
            markeredgecolor="black",
            label=MODALITY_NAMES.get(m, m),
        )
        for m in modalities
    ]
    for family, models in palette.families.items():
        handles += [Patch(color=palette.of(m), label=f"{m} ({family})") for m in models]
    return handles + extra


def legend_columns(handles: Sequence[Line2D | Patch]) -> int:
    """As many columns as fit the figure's width when every column is as wide as the
    longest entry (matplotlib sizes each column by its widest entry)."""
    if not handles:
        return 1
    longest = max(len(str(h.get_label())) for h in handles)
    fits = int(WIDTH * 0.96 // (LEGEND_ENTRY_IN + LEGEND_CHAR_IN * longest))
    return max(1, min(len(handles), fits))


def legend(fig: Figure, handles: Sequence[Line2D | Patch]) -> None:
    fig.legend(
        handles=list(handles),
        loc="outside lower center",
        ncol=legend_columns(handles),
        fontsize=8,
        frameon=False,
    )


def legend_rows(handles: Sequence[Line2D | Patch]) -> int:
    return math.ceil(len(handles) / legend_columns(handles))


def drawn_frontier(points: Sequence[Point]) -> bool:
    """Whether a frontier line is drawn: it takes two points on the frontier."""
    return sum(1 for p in points if p.frontier) >= 2


def _grid(n_panels: int, row_height: float, legend_rows: int) -> tuple[Figure, list[Axes]]:
    columns = 1 if n_panels == 1 else 2
    rows = math.ceil(n_panels / columns)
    fig = plt.figure(
        dpi=DPI,
        figsize=(WIDTH, row_height * rows + 0.3 + 0.22 * legend_rows),
        layout="constrained",
    )
    axes = fig.subplots(rows, columns, squeeze=False).ravel().tolist()
    for ax in axes[n_panels:]:
        ax.axis("off")
    return fig, axes[:n_panels]


def _finish(fig: Figure, labels: list[Label]) -> Figure:
    """Fix the layout, then place the labels where they overlap nothing."""
    fig.canvas.draw()
    fig.set_layout_engine("none")
    place_labels(fig, labels)
    return fig


def cost_figure(analysis: Analysis) -> Figure:
    """κ (y, 95% bootstrap interval) against $ per million judgments (x, log; free judges in
    a band at the left), one point per judge; a panel per dataset and one averaged over the
    datasets. Labelled: the Pareto frontier (dashed), the best judge ("highest κ" when its
    interval reaches 0), the recommended one (cheapest not distinguishable from the best,
    above chance) and the free baseline. Every panel draws chance (κ 0) and the human–human
    range on its κ axis."""
    panels = judge_panels(analysis) or [("(no completed runs)", [], None)]
    axis = CostAxis.fit([p.cost for _, points, _ in panels for p in points])
    modalities = sorted({p.judge.modality for _, points, _ in panels for p in points})
    # Entries only for what some panel draws: a frontier of two points or more, a human band
    # (which takes two annotators).
    extra: list[Line2D | Patch] = []
    if any(drawn_frontier(points) for _, points, _ in panels):
        extra.append(
            Line2D([], [], color="black", linestyle="--", label="Pareto frontier (outlined)")
        )
    if any(ceiling is not None for _, _, ceiling in panels):
        extra.append(Patch(color="tab:green", alpha=0.3, label="human–human κ (min–max)"))
    handles = legend_handles(analysis.palette, modalities, [*extra, chance_handle()])
    fig, axes = _grid(len(panels), 4.6 if len(panels) > 1 else 5.2, legend_rows(handles))
    labels: list[Label] = []
    for ax, (title, points, ceiling) in zip(axes, panels, strict=True):
        labels += _cost_panel(ax, title, points, ceiling, axis)
    legend(fig, handles)
    return _finish(fig, labels)


def kappa_vs_cost(analysis: Analysis, path: Path) -> Path:
    return save(cost_figure(analysis), path)


def ensemble_figure(analysis: Analysis) -> Figure | None:
    """Panels and cascades against cost, per dataset, over the judges in grey (their
    frontier dotted); the ensembles on the frontier of judges and ensembles are labelled."""
    datasets = [d for d in analysis.datasets if d.ensembles]
    if not datasets:
        return None
    panels = []
    for stats in datasets:
        front = [c for c in stats.ensembles if c.frontier]
        names = distinct_labels(
            [Named(c.judge, c.sweep) for c in front], analysis.with_prompt, ensemble=True
        )
        by_id = {id(c): name for c, name in zip(front, names, strict=True)}
        points = [
            _point(c, ENSEMBLE_COLOURS.get(c.kind, "0.3"), by_id.get(id(c), ""))
            for c in stats.ensembles
        ]
        judges = [_point(c, "0.7") for c in stats.cells]
        panels.append((stats.name, points, stats.ceiling, judges))
    axis = CostAxis.fit([p.cost for _, pts, _, js in panels for p in [*pts, *js]])
    modalities = sorted({p.judge.modality for _, pts, _, _ in panels for p in pts})
    kinds = {c.kind for stats in datasets for c in stats.ensembles}
    extra: list[Line2D | Patch] = [
        Patch(color=ENSEMBLE_COLOURS[kind], label=kind)
        for kind in ("panel", "cascade")
        if kind in kinds
    ]
    if any(drawn_frontier(points) for _, points, _, _ in panels):
        extra.append(Line2D([], [], color="black", linestyle="--", label="frontier with ensembles"))
    extra.append(
        Line2D([], [], color="0.55", linestyle=":", marker="o", markersize=3, label="judges alone")
    )
    handles = legend_handles(Palette(), modalities, [*extra, chance_handle()])
    fig, axes = _grid(len(panels), 4.6 if len(panels) > 1 else 5.2, legend_rows(handles))
    labels: list[Label] = []
    for ax, (title, points, ceiling, judges) in zip(axes, panels, strict=True):
        labels += _cost_panel(ax, title, points, ceiling, axis, background=judges)
    legend(fig, handles)
    return _finish(fig, labels)


def ensembles_vs_cost(analysis: Analysis, path: Path) -> Path | None:
    fig = ensemble_figure(analysis)
    return None if fig is None else save(fig, path)


def used(palette: Palette, models: set[str]) -> Palette:
    """The palette restricted to ``models`` (for a legend of the models drawn)."""
    return Palette(
        {m: f for m, f in palette.family.items() if m in models},
        {m: c for m, c in palette.colour.items() if m in models},
    )
