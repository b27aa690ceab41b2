"""The monitoring timeline: every check of the history (:mod:`mmjudge.store.monitor_history`) as a
table and an interactive chart, drawn offline from the history alone.

The chart follows the report's conventions: a Vega-Lite spec built with ``altair``, the
Vega script inlined so the page works from disk, intervals drawn as bars around each point.
Its panels share the time axis: the share of labels changed against the baseline, κ against
people, the grade distribution and the spend of each check; hovering a point shows the
check, the provider's model identifiers and fingerprints and the spend. A new model
identifier is marked on the time axis and named in the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import altair as alt
import jinja2

from mmjudge.files import write_atomic
from mmjudge.report.interactive import inline_script, script_json, vega_bundle
from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import AuditEntry, CheckEntry, read_history

TEMPLATE = "monitor.html.j2"
SPEND = "spent per check ($)"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * float(value):.1f}%"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{float(value):.3f}".replace("-", "−")


def _interval(block: Bounds | None, show: Callable[[float | None], str] = _num) -> str:
    if block is None or block.estimate is None:
        return "–"
    if block.low is None or block.high is None:
        return show(block.estimate)
    return f"{show(block.estimate)} [{show(block.low)}, {show(block.high)}]"


class TimelineRow(NamedTuple):
    """One check as the timeline's table shows it."""

    time: str
    """When it started."""
    check: str
    """Its name."""
    series: str
    """The checks it is compared with."""
    status: str
    """How its cell ended."""
    n: int
    """Items answered."""
    models: str
    """The model identifiers the provider named."""
    new_model: str
    """Those its series had not answered with before (empty: none)."""
    fingerprints: str
    """The system fingerprints."""
    baseline: str
    """The check it was compared with (``(baseline)``: it is the baseline)."""
    change: str
    """The share of labels changed against the baseline, with its interval."""
    kappa_checks: str
    """κ between the two checks, with its interval."""
    p: str
    """The Stuart–Maxwell p-value."""
    kappa_people: str
    """κ against people, with its interval."""
    grades: str
    """Answers per grade."""
    spent: str
    """Dollars spent."""
    moved: str
    """What moved past a threshold (or ``within thresholds``)."""
    ok: bool
    """Nothing moved."""


def timeline_rows(entries: Sequence[CheckEntry]) -> list[TimelineRow]:
    """One table row per check, oldest first."""
    rows = []
    seen: dict[str, set[str]] = {}
    for entry in entries:
        known = seen.setdefault(entry.series, set())
        new = sorted(set(entry.models) - known) if known else []
        known.update(entry.models)
        compared = entry.comparison
        drift = compared.drift if compared is not None else None
        p = drift.stuart_maxwell.p if drift is not None else None
        rows.append(
            TimelineRow(
                time=entry.time,
                check=entry.check,
                series=entry.series,
                status=entry.status,
                n=entry.n_items,
                models=", ".join(sorted(entry.models)) or "–",
                new_model=", ".join(new),
                fingerprints=", ".join(sorted(entry.fingerprints)) or "–",
                baseline=compared.baseline if compared is not None else "(baseline)",
                change=_interval(drift.change_share if drift else None, _pct),
                kappa_checks=_interval(drift.kappa if drift else None),
                p="–" if p is None else f"{p:.3g}",
                kappa_people=_interval(entry.kappa_people),
                grades=" · ".join(f"{g}: {n}" for g, n in entry.label_distribution.items()),
                spent=f"${entry.spent_usd:.4f}",
                moved="; ".join(entry.moved) or "within thresholds",
                ok=not entry.moved,
            )
        )
    return rows


def _points(entries: Sequence[CheckEntry]) -> list[dict[str, Any]]:
    """The chart's data: one row per check and measure (change share, κ vs people)."""
    points = []
    for entry in entries:
        base = {
            "time": entry.time,
            "series": entry.series,
            "check": entry.check,
            "models": ", ".join(sorted(entry.models)),
            "fingerprints": ", ".join(sorted(entry.fingerprints)),
            "spent": f"${entry.spent_usd:.4f}",
        }
        compared = entry.comparison
        measures = (
            ("share of labels changed", compared.drift.change_share if compared else Bounds()),
            ("κ against people", entry.kappa_people),
        )
        for name, block in measures:
            if block.estimate is None:
                continue
            points.append(
                {
                    **base,
                    "measure": name,
                    "value": block.estimate,
                    "low": block.estimate if block.low is None else block.low,
                    "high": block.estimate if block.high is None else block.high,
                }
            )
        spent = entry.spent_usd
        points.append({**base, "measure": SPEND, "value": spent, "low": spent, "high": spent})
        for grade, count in entry.label_distribution.items():
            share = count / max(1, entry.n_items)
            points.append(
                {
                    **base,
                    "measure": "share of items per grade",
                    "grade": grade,
                    "value": share,
                    "low": share,
                    "high": share,
                }
            )
    return points


def _model_marks(entries: Sequence[CheckEntry]) -> alt.LayerChart:
    """A dashed rule, labelled, at each check where the provider first named a model its
    series had not answered with before (never at a series' first check)."""
    marks = [
        {"time": row.time, "new_model": row.new_model}
        for row in timeline_rows(entries)
        if row.new_model
    ]
    base = alt.Chart(alt.Data(values=marks or [{"time": None, "new_model": ""}]))
    if not marks:
        base = base.transform_filter("false")
    rule = base.mark_rule(strokeDash=[4, 3], color="#a82a1f").encode(
        x="time:T", tooltip=["new_model:N"]
    )
    text = base.mark_text(align="right", dx=-3, dy=-4, color="#a82a1f").encode(
        x="time:T", y=alt.value(8), text="new_model:N"
    )
    return rule + text


def _timeline_spec(entries: Sequence[CheckEntry]) -> dict[str, Any] | None:
    """The interactive chart's Vega-Lite spec (None without a check to draw)."""
    points = _points(entries)
    if not points:
        return None
    tooltip = [
        "check:N",
        "series:N",
        "value:Q",
        "low:Q",
        "high:Q",
        "models:N",
        "fingerprints:N",
        "spent:N",
    ]
    base = alt.Chart(alt.Data(values=points)).encode(x=alt.X("time:T", title="check"))
    panels = []
    for number, measure in enumerate(
        ("share of labels changed", "κ against people", "share of items per grade", SPEND)
    ):
        chosen = base.transform_filter(alt.datum.measure == measure)
        colour = "grade:N" if measure == "share of items per grade" else "series:N"
        line = chosen.mark_line(point=True).encode(
            y=alt.Y("value:Q", title=measure),
            color=alt.Color(colour),
            detail="series:N",
            tooltip=tooltip,
        )
        bars = chosen.mark_rule().encode(y="low:Q", y2="high:Q", color=alt.Color(colour))
        zoom = alt.selection_interval(bind="scales", encodings=["x"], name=f"zoom{number}")
        layers = bars + line.add_params(zoom) + _model_marks(entries)
        panels.append(layers.properties(width="container", height=180))
    chart = alt.vconcat(*panels).resolve_scale(color="independent")
    spec: dict[str, Any] = chart.to_dict()
    return spec


class AuditRow(NamedTuple):
    """One scored audit period as the timeline's table shows it."""

    time: str
    """When it was scored."""
    dataset: str
    """Dataset name."""
    period: str
    """The period."""
    n: str
    """Items graded of items sampled."""
    disagree: int
    """Items whose grade the people changed."""
    rate: str
    """The disagreement rate with its interval."""
    earlier: str
    """The earlier periods' rate."""
    p: str
    """The change's p-value."""
    pattern_p: str
    """The pattern's p-value."""
    confusion: str
    """The confusion table, rows the judge's grades."""
    moved: str
    """What changed (or ``no change found``)."""
    ok: bool
    """Nothing changed."""


def audit_table(entries: Sequence[AuditEntry]) -> list[AuditRow]:
    """One row per scored audit period, in the order they were scored."""
    rows = []
    for entry in entries:
        figures, change = entry.figures, entry.change
        p = change.p if change else None
        pattern = change.pattern_p if change else None
        rows.append(
            AuditRow(
                time=entry.time,
                dataset=entry.dataset,
                period=entry.period,
                n=f"{figures.n_graded} of {figures.n_sampled}",
                disagree=figures.n_disagree,
                rate=_interval(figures.disagreement, _pct),
                earlier=_pct(change.earlier_disagreement) if change else "–",
                p="–" if p is None else f"{p:.3g}",
                pattern_p="–" if pattern is None else f"{pattern:.3g}",
                confusion=" / ".join(" ".join(str(c) for c in row) for row in figures.confusion),
                moved="; ".join(entry.moved) or "no change found",
                ok=not entry.moved,
            )
        )
    return rows


def write_timeline(history: Path, out: Path) -> Path:
    """Write ``index.html`` of the history's timeline into ``out``; returns the page."""
    everything = read_history(history)
    entries, audits = everything.checks, everything.audits
    spec = _timeline_spec(entries)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mmjudge", "report/templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
    )
    chart = None
    if spec is not None:
        chart = {"library": inline_script(vega_bundle()), "spec": script_json(spec)}
    html = env.get_template(TEMPLATE).render(
        history=str(history),
        rows=timeline_rows(entries),
        audits=audit_table(audits),
        chart=chart,
    )
    out.mkdir(parents=True, exist_ok=True)
    return write_atomic(out / "index.html", html)
