"""The files mmjudge writes: the one place that writes and reads each, as a typed record with
its layout's version. No module outside this package parses one of them
(``tests/project/test_architecture.py`` holds this); every other module takes the record.

A run folder holds ``judgments.jsonl`` and ``samples.jsonl`` (:mod:`~mmjudge.store.rows`),
``summary.json`` (:mod:`~mmjudge.store.summary`, a :class:`RunSummary`), a dry run's
``forecast.json`` (:mod:`~mmjudge.store.forecast_file`), in batch mode ``batches.json``
(:mod:`~mmjudge.store.batches`) and its re-pricings, ``repriced_*.json``
(:mod:`~mmjudge.store.repriced_file`). A sweep folder holds run folders, an ``ensembles/``
folder of virtual runs (:mod:`~mmjudge.store.folders`), ``sweep_summary.json``
(:mod:`~mmjudge.store.sweep_file`) and, for a race, ``race.json``
(:mod:`~mmjudge.store.race_file`). Monitoring keeps its history
(:mod:`~mmjudge.store.monitor_history`) and each audited period's sample
(:mod:`~mmjudge.store.audit_files`). The review file people fill in
(:mod:`~mmjudge.store.review_file`) and ``mmjudge plan``'s JSON
(:mod:`~mmjudge.store.plan_file`) are written and read here too. How a cell ended, and the
exit code that goes with it, is :mod:`~mmjudge.store.status`.
"""

from mmjudge.store.agreement import Agreement
from mmjudge.store.blocks import (
    SINGLE,
    CallCounts,
    CallPositions,
    CellInfo,
    CellStatus,
    CostFigures,
    Ensemble,
    Member,
    PromptCacheUse,
    RowFigures,
    Stability,
    UnstableItem,
    row_figures,
)
from mmjudge.store.bounds import Bounds
from mmjudge.store.folders import (
    ENSEMBLES,
    Key,
    SavedRun,
    common_keys,
    common_scored_keys,
    completed_runs,
    in_ensembles_folder,
    load_run,
    read_summaries,
    run_dirs,
    union_keys,
)
from mmjudge.store.grading_blocks import BankInfo, BankRule, Grading, ScaleCuts, TrainedOn
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
    SummaryParts,
    build_summary,
    read_summary,
    write_summary,
)
from mmjudge.store.sweep_file import (
    SWEEP_SUMMARY,
    SweepSummary,
    SweepSummaryCell,
    read_sweep_summary,
    write_sweep_summary,
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
    "BankInfo",
    "BankRule",
    "Bounds",
    "CallCounts",
    "CallPositions",
    "CellInfo",
    "CellStatus",
    "CostFigures",
    "Ensemble",
    "Grading",
    "Key",
    "Member",
    "PromptCacheUse",
    "RowFigures",
    "RunSummary",
    "SavedRun",
    "ScaleCuts",
    "Stability",
    "SummaryParts",
    "SweepSummary",
    "SweepSummaryCell",
    "TrainedOn",
    "UnstableItem",
    "annotators",
    "appending_rows",
    "build_summary",
    "common_keys",
    "common_scored_keys",
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
    "read_sweep_summary",
    "row_figures",
    "rows_at",
    "run_dirs",
    "union_keys",
    "write_rows",
    "write_sample_rows",
    "write_summary",
    "write_sweep_summary",
]
