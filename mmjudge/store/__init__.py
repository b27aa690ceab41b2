"""Run folders: the one place that writes and reads them.

A run folder holds ``judgments.jsonl`` (:mod:`~mmjudge.store.rows`), ``summary.json``
(:mod:`~mmjudge.store.summary`, a typed :class:`RunSummary`), and in batch mode
``batches.json`` (:mod:`~mmjudge.store.batches`); a sweep folder holds run folders, an
``ensembles/`` folder of virtual runs and ``sweep_summary.json`` (:mod:`~mmjudge.store.folders`).
How a cell ended, and the exit code that goes with it, is :mod:`~mmjudge.store.status`.
"""

from mmjudge.store.blocks import (
    SINGLE,
    Agreement,
    CallCounts,
    CellInfo,
    CellStatus,
    CostFigures,
    Ensemble,
    Member,
    RowFigures,
    row_figures,
)
from mmjudge.store.folders import (
    ENSEMBLES,
    SWEEP_SUMMARY,
    Key,
    SavedRun,
    common_keys,
    completed_runs,
    in_ensembles_folder,
    load_run,
    read_summaries,
    run_dirs,
    union_keys,
    write_sweep_summary,
)
from mmjudge.store.rows import (
    JUDGMENTS,
    SAMPLES,
    SUMMARY,
    annotators,
    appending_rows,
    iter_rows,
    judgments_path,
    keep_finished_rows,
    load_judgments,
    read_records,
    read_sample_records,
    rows_at,
    write_rows,
    write_sample_rows,
)
from mmjudge.store.summary import (
    SUMMARY_SCHEMA_VERSION,
    RunSummary,
    build_summary,
    read_summary,
    write_summary,
)

__all__ = [
    "ENSEMBLES",
    "JUDGMENTS",
    "SAMPLES",
    "SINGLE",
    "SUMMARY",
    "SUMMARY_SCHEMA_VERSION",
    "SWEEP_SUMMARY",
    "Agreement",
    "CallCounts",
    "CellInfo",
    "CellStatus",
    "CostFigures",
    "Ensemble",
    "Key",
    "Member",
    "RowFigures",
    "RunSummary",
    "SavedRun",
    "annotators",
    "appending_rows",
    "build_summary",
    "common_keys",
    "completed_runs",
    "in_ensembles_folder",
    "iter_rows",
    "judgments_path",
    "keep_finished_rows",
    "load_judgments",
    "load_run",
    "read_records",
    "read_sample_records",
    "read_summaries",
    "read_summary",
    "row_figures",
    "rows_at",
    "run_dirs",
    "union_keys",
    "write_rows",
    "write_sample_rows",
    "write_summary",
    "write_sweep_summary",
]
