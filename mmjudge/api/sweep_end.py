"""The end of a sweep: build its default ensembles, count its cells by status into
``sweep_summary.json``, build its report. The library's :func:`mmjudge.run_sweep` calls it, and
so does the command's Hydra callback when a multirun ends."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class FinishedSweep(NamedTuple):
    """What the end of a sweep wrote."""

    by_status: dict[str, int]
    """Judged cells per status (empty when no cell was judged)."""
    exit_code: int | None
    """The code of the sweep's most severe cell (None when no cell was judged)."""
    ensembles: list[Path]
    """The folders of the ensembles built."""
    report: Path | None
    """The report's folder, when one was built."""


def finish_sweep(
    sweep_dir: Path,
    reports_dir: Path | None,
    *,
    ensembles: bool,
    human_cost_per_label: float | None = None,
    label_budget_usd: float | None = None,
) -> FinishedSweep:
    """A finished sweep's end work: ``sweep_summary.json`` (every cell with its status,
    skipped ones with reasons), the default ensembles (panels and cascades from the saved
    records, see :mod:`mmjudge.ensembles.defaults`) when ``ensembles``, then the
    report under ``reports_dir`` (none when it is None, or when every cell failed or was
    skipped: a report of nothing is not built)."""
    from mmjudge.report.load import cell_table, judged_statuses, write_sweep_summary
    from mmjudge.store.status import anything_judged, count_statuses, sweep_exit_code

    cells = cell_table(sweep_dir)
    statuses = judged_statuses(cells)
    done = FinishedSweep({}, None, [], None)
    if statuses:
        done = done._replace(
            by_status=count_statuses(statuses), exit_code=sweep_exit_code(statuses)
        )
        write_sweep_summary(sweep_dir, cells)
    if ensembles:
        from mmjudge.ensembles.defaults import build_default_ensembles

        done = done._replace(ensembles=build_default_ensembles(sweep_dir))
    if reports_dir is not None and anything_judged(statuses):
        from mmjudge.report import build_report

        done = done._replace(
            report=build_report(
                sweep_dir,
                reports_dir,
                human_cost_per_label=human_cost_per_label,
                label_budget_usd=label_budget_usd,
            )
        )
    return done
