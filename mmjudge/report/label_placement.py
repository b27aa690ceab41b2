"""Point labels placed by a rule, so that no two overlap and none leaves its plot.

Each label tries positions around its point, nearest first (eight directions at growing
distances, with a thin leader line unless it touches its point); it takes the first position whose
text box lies inside its axes and clear of every label placed before it and of every
labelled point. A label with no free position is left off (the legend still identifies the
point by colour and marker); :func:`collisions` checks a drawn figure.

Written by hand rather than with ``adjustText``: that library moves labels iteratively and
does not promise a result free of overlaps, which is what the report needs to guarantee.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox

RADII = (5.0, 12.0, 22.0, 34.0, 48.0, 64.0)
"""Distances (points) from the point to the label, tried in order."""
DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
MARKER_PX = 7.0
"""Half the side of the box kept clear around each labelled point."""


class Label(NamedTuple):
    ax: Axes
    text: str
    x: float
    y: float


def _alignment(dx: int, dy: int) -> tuple[str, str]:
    ha = "left" if dx > 0 else "right" if dx < 0 else "center"
    va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
    return ha, va


def _clear(box: Bbox, inside: Bbox, taken: Sequence[Bbox]) -> bool:
    fits = (
        box.x0 >= inside.x0 + 1
        and box.x1 <= inside.x1 - 1
        and box.y0 >= inside.y0 + 1
        and box.y1 <= inside.y1 - 1
    )
    return fits and not any(box.overlaps(other) for other in taken)


def _point_box(ax: Axes, x: float, y: float) -> Bbox:
    px, py = ax.transData.transform((x, y))
    return Bbox.from_extents(px - MARKER_PX, py - MARKER_PX, px + MARKER_PX, py + MARKER_PX)


def place_labels(fig: Figure, labels: Iterable[Label]) -> list[Annotation]:
    """Add each label at its first free position (see the module's rule); returns the
    labels placed. The figure's layout must be final."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    labels = list(labels)
    taken = [_point_box(label.ax, label.x, label.y) for label in labels]
    placed = []
    for label in labels:
        inside = label.ax.get_window_extent(renderer)
        own = _point_box(label.ax, label.x, label.y)
        others = [box for box in taken if box is not own]
        for radius, (dx, dy) in itertools.product(RADII, DIRECTIONS):
            ha, va = _alignment(dx, dy)
            far = radius > RADII[0]
            annotation = label.ax.annotate(
                label.text,
                (label.x, label.y),
                xytext=(dx * radius, dy * radius),
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=7.5,
                color="0.1",
                zorder=6,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85},
                arrowprops=(
                    {"arrowstyle": "-", "color": "0.3", "lw": 0.7, "shrinkA": 0, "shrinkB": 3}
                    if far
                    else None
                ),
            )
            annotation.update_positions(renderer)
            box = Text.get_window_extent(annotation, renderer).padded(1.5)
            if _clear(box, inside, others):
                taken.append(box)
                placed.append(annotation)
                break
            annotation.remove()
    return placed


def _ticks_in_view(axis: Any) -> list[Any]:
    """The ticks a drawn axis shows: those of its locators' positions that fall inside its
    view (in display space, with a tolerance for rounding), as the axis picks them to draw."""
    major, minor = axis.get_majorticklocs(), axis.get_minorticklocs()
    placed = [
        *zip(axis.get_major_ticks(len(major)), major, strict=True),
        *zip(axis.get_minor_ticks(len(minor)), minor, strict=True),
    ]
    if not placed:
        return []
    transform = axis.get_transform()
    low, high = sorted(float(v) for v in transform.transform(sorted(axis.get_view_interval())))
    slack = 1e-10 * max(high - low, 1.0)
    shown = []
    for tick, loc in placed:
        where = float(transform.transform([loc])[0])
        if low - slack <= where <= high + slack:
            shown.append(tick)
    return shown


def _drawn_texts(fig: Figure) -> list[Text]:
    """The texts a drawn figure shows: tick labels only for the ticks inside the view."""
    ticks: set[int] = set()
    shown: list[Text] = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                ticks.update((id(tick.label1), id(tick.label2)))
            if not (ax.get_visible() and ax.axison and axis.get_visible()):
                continue
            for tick in _ticks_in_view(axis):
                shown += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    others = [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible()]
    return [t for t in [*others, *shown] if t.axes is None or t.axes.get_visible()]


def text_boxes(fig: Figure) -> list[tuple[str, Bbox]]:
    """Every visible, non-empty text of a drawn figure with its box in pixels."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    return [
        (t.get_text(), Text.get_window_extent(t, renderer))
        for t in _drawn_texts(fig)
        if t.get_text().strip()
    ]


def collisions(fig: Figure) -> list[str]:
    """What is wrong with a figure's texts: any two that overlap, any that leaves the
    image. Empty when every label is readable."""
    fig.canvas.draw()
    width, height = fig.canvas.get_width_height()
    boxes = text_boxes(fig)
    problems = [
        f"clipped: {text!r}"
        for text, box in boxes
        if box.x0 < 0 or box.y0 < 0 or box.x1 > width or box.y1 > height
    ]
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        inter = Bbox.intersection(box_a, box_b)
        if inter is not None and inter.width > 0.5 and inter.height > 0.5:
            problems.append(f"overlap: {a!r} and {b!r}")
    return problems
