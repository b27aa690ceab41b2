"""Running an audit: the period's sample drawn and kept beside its review file, and the
people's grades scored and appended to the monitoring history (the figures are
:mod:`mmjudge.monitor.audit`'s)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from mmjudge.config import SweepConfig
from mmjudge.config.names import path_part
from mmjudge.data import load_dataset
from mmjudge.data.qrels import read_qrels
from mmjudge.errors import ConfigError, DatasetError
from mmjudge.locations import resolve_path
from mmjudge.monitor.audit import audit_rows, change_test, score_period, stratified_sample
from mmjudge.monitor.check import history_path
from mmjudge.store.audit_files import SAMPLE, read_labels, read_sample, write_sample
from mmjudge.store.monitor_history import AuditEntry, PeriodChange, append_entry, read_history
from mmjudge.store.review_file import ReviewRow, ShownItem

#: Each period's sample and review file, under ``paths.results``.
AUDITS = Path("monitor") / "audits"


class Drawn(NamedTuple):
    rows: list[ReviewRow]
    """The review file's rows."""
    strata: int
    """The (query, grade) strata drawn from."""
    n_labels: int
    """The period's labels."""


def period_folder(cfg: SweepConfig, period: str) -> Path:
    if not period or "/" in period or period.startswith("."):
        raise ConfigError(f"period={period!r}: give a plain name for the period, e.g. 2026-W48")
    return resolve_path(cfg.paths.results) / AUDITS / path_part(cfg.dataset.name) / period


def _texts(cfg: SweepConfig, keys: set[tuple[str, str]]) -> dict[tuple[str, str], ShownItem]:
    """Query, result text and image of the sampled items found in the dataset."""
    found: dict[tuple[str, str], ShownItem] = {}
    for example in load_dataset(cfg.dataset):
        key = (example.query_id, example.result_id)
        if key in keys:
            found[key] = ShownItem(
                query=example.query,
                result_text=" | ".join(f"{n}: {v}" for n, v in example.fields if v),
                image=example.images[0] if example.images else "",
            )
            if len(found) == len(keys):
                break
    return found


def draw(cfg: SweepConfig, labels_file: Path, period: str, *, per_stratum: int, seed: int) -> Drawn:
    """Sample the period's labels, keep the sample in its folder, return the review rows."""
    labels = read_labels(labels_file)
    if not labels:
        raise DatasetError(f"{labels_file}: no labels to sample")
    sample = stratified_sample(labels, per_stratum, seed)
    write_sample(period_folder(cfg, period), sample)
    keys = {(s.query_id, s.result_id) for s in sample}
    rows = audit_rows(
        sample, _texts(cfg, keys), cfg.dataset.name, list(cfg.dataset.scale.grades), period
    )
    strata = len({(s.query_id, s.label) for s in sample})
    return Drawn(rows, strata, sum(len(d) for d in labels.values()))


def score(
    cfg: SweepConfig,
    labels_file: Path,
    period: str,
    assessed_file: Path,
    history: Path | None,
    *,
    alpha: float,
) -> AuditEntry:
    """Score the period's sample against the people's grades and append the entry."""
    folder = period_folder(cfg, period)
    if not (folder / SAMPLE).is_file():
        raise ConfigError(
            f"no sample for period={period} at {folder / SAMPLE}; draw one first with "
            f"`mmjudge monitor audit {labels_file} period={period} dataset={cfg.dataset.name}`"
        )
    sample = read_sample(folder)
    figures = score_period(sample, read_qrels(assessed_file), list(cfg.dataset.scale.grades))
    if not figures.n_graded:
        raise DatasetError(
            f"{assessed_file}: grades none of the {len(sample)} sampled items of period {period}"
        )
    where = history or history_path(cfg)
    series = f"audit.{cfg.dataset.name}"
    earlier = [
        e.figures for e in read_history(where).audits if e.series == series and e.period != period
    ]
    change = change_test(figures, earlier)
    entry = AuditEntry(
        series=series,
        dataset=cfg.dataset.name,
        period=period,
        time=datetime.now(UTC).isoformat(timespec="seconds"),
        labels_file=str(labels_file),
        assessed_file=str(assessed_file),
        figures=figures,
        change=change,
        moved=_moved(change, alpha),
    )
    append_entry(where, entry)
    return entry


def _moved(change: PeriodChange | None, alpha: float) -> tuple[str, ...]:
    if change is None:
        return ()
    reasons = []
    if change.p is not None and change.p < alpha:
        reasons.append(
            f"disagreement rate changed by {100 * change.difference:+.1f} points against "
            f"earlier periods (p={change.p:.2g} < {alpha:g})"
        )
    if change.pattern_p is not None and change.pattern_p < alpha:
        reasons.append(
            f"disagreements fall in other cells than before (p={change.pattern_p:.2g} < {alpha:g})"
        )
    return tuple(reasons)
