"""The interactive κ-against-cost chart: a Vega-Lite spec built with ``altair``, drawn in the
page by the Vega, Vega-Lite and vega-embed JavaScript that ``vl-convert-python`` bundles.

The bundle is embedded in the page (no network: the page works from disk), which adds about
0.9 MB; it is built once per vl-convert version and kept in ``.cache/report/`` because
building it takes seconds. Hovering a point shows the judge, its modality and prompt, κ with
its interval, dollars per million split into image and text, n and the sweep it came from;
the wheel or a drag zooms and pans; a click filters the page's tables to that judge (the
page's script listens to the view's clicks).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import altair as alt

from mmjudge.display import MISSING, price
from mmjudge.files import write_atomic
from mmjudge.locations import resolve_path
from mmjudge.report.analysis import MODALITY_NAMES, Analysis, Cell
from mmjudge.report.figures import ENSEMBLE_COLOURS, CostAxis
from mmjudge.report.findings.prose import interval
from mmjudge.report.style import SHAPES, ensemble_label


def bundle_cache() -> Path:
    """Where the chart's script bundle is kept between reports (under the working folder)."""
    return resolve_path(Path(".cache") / "report")


AVERAGE = "average over datasets"


@dataclass(frozen=True)
class ChartRow:
    """A point of the chart: one judge or ensemble on one dataset, or a judge averaged over
    datasets (the fields are the chart data's columns)."""

    dataset: str
    """The dataset, or :data:`AVERAGE`."""
    judge: str
    """The judge's (or ensemble's) name on the page."""
    model: str
    """The model, or the ensemble's name."""
    colour: str
    """What the point is coloured by: the model, or the ensemble's kind."""
    kind: str
    """``judge``, or the ensemble's kind."""
    modality: str
    """The modality's name on the page (the point's shape)."""
    prompt: str
    """The prompt id."""
    kappa: float | None
    """κ against the people's consensus."""
    low: float | None
    """The interval's lower end (None without one)."""
    high: float | None
    """The interval's upper end (None without one)."""
    ci: str
    """κ with its interval, as the tooltip shows it."""
    x: float
    """Where the point lies on the cost axis."""
    usd: str
    """Dollars per million judgments, as shown."""
    image_usd: str
    """The image part of them (– for an average)."""
    text_usd: str
    """The text part of them (– for an average)."""
    n: str
    """Items scored, as shown."""
    sweep: str
    """The sweep the cell ran in ("" for an average)."""
    frontier: str
    """``yes`` when the point is on the cost–κ frontier."""


@dataclass(frozen=True)
class ReferenceLine:
    """A horizontal rule of one panel of the chart: chance or a human–human κ."""

    dataset: str
    """The panel's dataset."""
    kappa: float
    """Where the rule lies."""
    line: str
    """:data:`CHANCE_LINE` or :data:`HUMAN_LINE`."""


def _row(analysis: Analysis, cell: Cell, axis: CostAxis) -> ChartRow:
    image, text = cell.cost_split
    judge = cell.judge
    score = cell.score
    return ChartRow(
        dataset=cell.dataset,
        judge=ensemble_label(judge.model) if cell.ensemble else analysis.judge_name(judge),
        model=judge.model,
        colour=cell.kind if cell.ensemble else judge.model,
        kind="judge" if not cell.ensemble else cell.kind,
        modality=MODALITY_NAMES.get(judge.modality, judge.modality),
        prompt=judge.prompt_id,
        kappa=_finite(cell.kappa.estimate),
        low=_finite(cell.kappa.low),
        high=_finite(cell.kappa.high),
        ci=interval(cell.kappa, 3),
        x=axis.x(cell.usd_per_million),
        usd=price(cell.usd_per_million),
        image_usd=price(image),
        text_usd=price(text),
        n=f"{score.n_items:,}" if score is not None else MISSING,
        sweep=cell.sweep,
        frontier="yes" if cell.frontier else "no",
    )


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def chart_rows(analysis: Analysis, axis: CostAxis) -> list[ChartRow]:
    """One row per judge and ensemble per dataset, and per judge averaged over datasets."""
    rows = [
        _row(analysis, cell, axis)
        for stats in analysis.datasets
        for cell in [*stats.cells, *stats.ensembles]
        if cell.kappa.known
    ]
    if len(analysis.datasets) > 1:
        for a in analysis.averages:
            if not a.kappa.known:
                continue
            rows.append(
                ChartRow(
                    dataset=AVERAGE,
                    judge=analysis.judge_name(a.judge),
                    model=a.judge.model,
                    colour=a.judge.model,
                    kind="judge",
                    modality=MODALITY_NAMES.get(a.judge.modality, a.judge.modality),
                    prompt=a.judge.prompt_id,
                    kappa=a.kappa.estimate,
                    low=_finite(a.kappa.low),
                    high=_finite(a.kappa.high),
                    ci=interval(a.kappa, 3),
                    x=axis.x(a.usd_per_million),
                    usd=price(a.usd_per_million),
                    image_usd=MISSING,
                    text_usd=MISSING,
                    n=f"mean over {len(a.datasets)} datasets",
                    sweep="",
                    frontier="yes" if a.frontier else "no",
                )
            )
    return rows


TOOLTIP = [
    alt.Tooltip("judge:N", title="judge"),
    alt.Tooltip("modality:N", title="modality"),
    alt.Tooltip("prompt:N", title="prompt"),
    alt.Tooltip("dataset:N", title="dataset"),
    alt.Tooltip("ci:N", title="κ [95% CI]"),
    alt.Tooltip("usd:N", title="$ per million"),
    alt.Tooltip("image_usd:N", title="  image part"),
    alt.Tooltip("text_usd:N", title="  text part"),
    alt.Tooltip("n:N", title="n items"),
    alt.Tooltip("sweep:N", title="sweep"),
    alt.Tooltip("frontier:N", title="on the frontier"),
]


def _controls(rows: list[ChartRow]) -> tuple[list[Any], alt.Chart]:
    """The dataset menu and, when there are ensembles, the box that shows them; the data
    filtered by both."""
    names = list(dict.fromkeys(r.dataset for r in rows))
    params: list[Any] = [
        alt.param(
            name="dataset",
            value=names[0],
            bind=alt.binding_select(options=names, name="dataset "),
        )
    ]
    values = [dataclasses.asdict(r) for r in rows]
    base = alt.Chart(alt.Data(values=values)).transform_filter("datum.dataset == dataset")
    if any(r.kind != "judge" for r in rows):
        params.append(
            alt.param(
                name="ensembles",
                value=False,
                bind=alt.binding_checkbox(name="show panels and cascades "),
            )
        )
        base = base.transform_filter("ensembles || datum.kind == 'judge'")
    else:
        base = base.transform_filter("datum.kind == 'judge'")
    return params, base


CHANCE_LINE = "chance (κ = 0)"
HUMAN_LINE = "human–human κ"


def reference_rows(analysis: Analysis, datasets: list[str]) -> list[ReferenceLine]:
    """Per panel of the chart: chance (κ 0) and the lowest and highest human–human κ (the
    average over datasets has chance only)."""
    ceilings = {d.name: d.ceiling for d in analysis.datasets}
    rows = []
    for name in dict.fromkeys(datasets):
        rows.append(ReferenceLine(dataset=name, kappa=0.0, line=CHANCE_LINE))
        ceiling = ceilings.get(name)
        for value in sorted(set(ceiling or ())):
            rows.append(ReferenceLine(dataset=name, kappa=value, line=HUMAN_LINE))
    return rows


def _reference_rules(analysis: Analysis, datasets: list[str]) -> alt.Chart:
    """Horizontal rules at chance and at the human–human κ of the dataset shown."""
    return (
        alt.Chart(
            alt.Data(values=[dataclasses.asdict(r) for r in reference_rows(analysis, datasets)])
        )
        .transform_filter("datum.dataset == dataset")
        .mark_rule(strokeDash=[6, 3], strokeWidth=1.2)
        .encode(
            y=alt.Y("kappa:Q"),
            color=alt.condition(
                f"datum.line == '{CHANCE_LINE}'", alt.value("#d62728"), alt.value("#2ca02c")
            ),
            tooltip=[alt.Tooltip("line:N", title="line"), alt.Tooltip("kappa:Q", format=".2f")],
        )
    )


def chart_spec(analysis: Analysis) -> dict[str, Any] | None:
    """The Vega-Lite spec (a dict), or None when no judge has a κ."""
    costs = [c.usd_per_million for d in analysis.datasets for c in [*d.cells, *d.ensembles]]
    axis = CostAxis.fit(costs)
    rows = chart_rows(analysis, axis)
    if not rows:
        return None
    params, base = _controls(rows)
    zoom = alt.selection_interval(bind="scales", name="zoom")
    used = {r.colour for r in rows}
    palette = analysis.palette
    colours = {**palette.colour, **ENSEMBLE_COLOURS}
    domain = [key for key in colours if key in used]
    shown = {r.modality for r in rows}
    shapes = {MODALITY_NAMES.get(m, m): shape for m, shape in SHAPES.items()}
    modalities = [m for m in shapes if m in shown]
    free = axis.free_x
    ticks = [free] + [10.0**k for k in range(axis.low_decade, axis.high_decade + 1)]
    x = alt.X(
        "x:Q",
        scale=alt.Scale(type="log", domain=[axis.band[0], 10.0 ** (axis.high_decade + 0.25)]),
        axis=alt.Axis(
            title="$ per million judgments (log scale)",
            values=ticks,
            labelExpr=f"datum.value <= {free!r} ? 'free' : '$' + format(datum.value, ',~s')",
        ),
    )
    y = alt.Y("kappa:Q", title="Cohen's κ vs people's grades", scale=alt.Scale(zero=False))
    colour = alt.Color(
        "colour:N",
        title="model / ensemble",
        scale=alt.Scale(domain=domain, range=[colours[k] for k in domain]),
        legend=alt.Legend(columns=2, symbolLimit=0, labelLimit=160),
    )
    bars = base.mark_rule(opacity=0.45).encode(x=x, y="low:Q", y2="high:Q", color=colour)
    points = (
        base.mark_point(filled=True, size=80, opacity=0.9, stroke="black", strokeWidth=0.4)
        .encode(
            x=x,
            y=y,
            color=colour,
            shape=alt.Shape(
                "modality:N",
                scale=alt.Scale(domain=modalities, range=[shapes[m] for m in modalities]),
                title="modality",
            ),
            tooltip=TOOLTIP,
        )
        .add_params(zoom)
    )
    rules = _reference_rules(analysis, [r.dataset for r in rows])
    chart = (
        alt.layer(rules, bars, points).add_params(*params).properties(width="container", height=460)
    )
    spec: dict[str, Any] = chart.to_dict()
    return spec


def vega_bundle() -> str:
    """vega-embed with Vega-Lite and Vega, as one script that defines ``vegaEmbed``."""
    import vl_convert

    version = getattr(vl_convert, "__version__", "unknown")
    cache = bundle_cache()
    path = cache / f"vega-embed-{version}.js"
    if path.is_file():
        return path.read_text(encoding="utf-8")
    bundle = vl_convert.javascript_bundle()  # type: ignore[call-arg]  # snippet is optional
    try:
        cache.mkdir(parents=True, exist_ok=True)
        write_atomic(path, bundle)
    except OSError:
        pass  # a read-only install: build it again next time
    return bundle


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<`` at all (written ``\\u003c``), so no
    dataset text can end the element or open a tag."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def inline_script(text: str) -> str:
    """Script text safe inside a ``<script>`` element."""
    return text.replace("</script", "<\\/script")


def embed(analysis: Analysis) -> dict[str, str] | None:
    """What the template needs: the library and the spec, both ready to inline."""
    spec = chart_spec(analysis)
    if spec is None:
        return None
    return {"library": inline_script(vega_bundle()), "spec": script_json(spec)}
