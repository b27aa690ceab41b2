"""The monitoring timeline: every check of the history (:mod:`mmjudge.monitor.history`) as a
table and an interactive chart, drawn offline from the history alone.

The chart follows the report's conventions: a Vega-Lite spec built with ``altair``, the
Vega script inlined so the page works from disk, intervals drawn as bars around each point.
Its panels share the time axis: the share of labels changed against the baseline, κ against
people, the grade distribution and the spend of each check; hovering a point shows the
check, the provider's model identifiers and fingerprints and the spend. A new model
identifier is marked on the time axis and named in the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt
import jinja2

from mmjudge.files import write_atomic
from mmjudge.monitor.history import read_history
from mmjudge.report.interactive import inline_script, script_json, vega_bundle

TEMPLATE = "monitor.html.j2"
SPEND = "spent per check ($)"


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * float(value):.1f}%"


def _num(value: Any) -> str:
    return "–" if value is None else f"{float(value):.3f}".replace("-", "−")


def _interval(block: dict[str, Any] | None, show: Any = _num) -> str:
    block = block or {}
    if block.get("estimate") is None:
        return "–"
    if block.get("low") is None or block.get("high") is None:
        return str(show(block["estimate"]))
    return f"{show(block['estimate'])} [{show(block['low'])}, {show(block['high'])}]"


def timeline_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One table row per check, oldest first."""
    rows = []
    seen: dict[str, set[str]] = {}
    for entry in entries:
        series = str(entry.get("series"))
        models = entry.get("models") or {}
        known = seen.setdefault(series, set())
        new = sorted(set(models) - known) if known else []
        known.update(models)
        drift = entry.get("drift") or {}
        sm = drift.get("stuart_maxwell") or {}
        rows.append(
            {
                "time": entry.get("time"),
                "check": entry.get("check"),
                "series": series,
                "status": entry.get("status"),
                "n": entry.get("n_items"),
                "models": ", ".join(sorted(models)) or "–",
                "new_model": ", ".join(new),
                "fingerprints": ", ".join(sorted(entry.get("fingerprints") or {})) or "–",
                "baseline": entry.get("baseline") or "(baseline)",
                "change": _interval(drift.get("change_share"), _pct),
                "kappa_checks": _interval(drift.get("kappa")),
                "p": "–" if sm.get("p") is None else f"{sm['p']:.3g}",
                "kappa_people": _interval(entry.get("kappa_people")),
                "grades": " · ".join(
                    f"{g}: {n}" for g, n in (entry.get("label_distribution") or {}).items()
                ),
                "spent": f"${float(entry.get('spent_usd') or 0.0):.4f}",
                "moved": "; ".join(entry.get("moved") or []) or "within thresholds",
                "ok": not entry.get("moved"),
            }
        )
    return rows


def _points(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chart's data: one row per check and measure (change share, κ vs people)."""
    points = []
    for entry in entries:
        base = {
            "time": entry.get("time"),
            "series": entry.get("series"),
            "check": entry.get("check"),
            "models": ", ".join(sorted(entry.get("models") or {})),
            "fingerprints": ", ".join(sorted(entry.get("fingerprints") or {})),
            "spent": f"${float(entry.get('spent_usd') or 0.0):.4f}",
        }
        change = (entry.get("drift") or {}).get("change_share") or {}
        measures = (
            ("share of labels changed", change),
            ("κ against people", entry.get("kappa_people") or {}),
        )
        for name, block in measures:
            if block.get("estimate") is None:
                continue
            points.append(
                {
                    **base,
                    "measure": name,
                    "value": block["estimate"],
                    "low": block.get("low", block["estimate"]),
                    "high": block.get("high", block["estimate"]),
                }
            )
        spent = float(entry.get("spent_usd") or 0.0)
        points.append({**base, "measure": SPEND, "value": spent, "low": spent, "high": spent})
        for grade, count in (entry.get("label_distribution") or {}).items():
            share = count / max(1, int(entry.get("n_items") or 0))
            points.append(
                {
                    **base,
                    "measure": "share of items per grade",
                    "grade": str(grade),
                    "value": share,
                    "low": share,
                    "high": share,
                }
            )
    return points


def _model_marks(entries: list[dict[str, Any]]) -> alt.LayerChart:
    """A dashed rule, labelled, at each check where the provider first named a model its
    series had not answered with before (never at a series' first check)."""
    marks = [
        {"time": row["time"], "new_model": row["new_model"]}
        for row in timeline_rows(entries)
        if row["new_model"]
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


def timeline_spec(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
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


def is_audit(entry: dict[str, Any]) -> bool:
    return entry.get("kind") == "audit"


def audit_table(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per scored audit period, in the order they were scored."""
    rows = []
    for entry in entries:
        change = entry.get("change") or {}
        rows.append(
            {
                "time": entry.get("time"),
                "dataset": entry.get("dataset"),
                "period": entry.get("period"),
                "n": f"{entry.get('n')} of {entry.get('n_sampled')}",
                "disagree": entry.get("n_disagree"),
                "rate": _interval(entry.get("disagreement"), _pct),
                "earlier": _pct(change.get("earlier_disagreement")) if change else "–",
                "p": "–" if change.get("p") is None else f"{change['p']:.3g}",
                "pattern_p": "–"
                if change.get("pattern_p") is None
                else f"{change['pattern_p']:.3g}",
                "confusion": " / ".join(
                    " ".join(str(c) for c in row) for row in entry.get("confusion") or []
                ),
                "moved": "; ".join(entry.get("moved") or []) or "no change found",
                "ok": not entry.get("moved"),
            }
        )
    return rows


def write_timeline(history: Path, out: Path) -> Path:
    """Write ``index.html`` of the history's timeline into ``out``; returns the page."""
    everything = read_history(history)
    entries = [e for e in everything if not is_audit(e)]
    audits = [e for e in everything if is_audit(e)]
    spec = timeline_spec(entries)
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
