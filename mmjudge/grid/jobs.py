"""One cell judged, or forecast, into its run folder: what every launcher runs for a job, and
what the library's :func:`mmjudge.run_cell` and :func:`mmjudge.forecast` run. A cell that
stops before judging anything leaves no folder behind
(:func:`mmjudge.store.cleanup.removed_unless_judged`), as with the command."""

from __future__ import annotations

import copy
from pathlib import Path

from omegaconf import DictConfig, open_dict

from mmjudge.config import SweepConfig
from mmjudge.grid.cells import SAMPLE_ITEMS, SAMPLE_ITEMS_FROM
from mmjudge.store import RunSummary
from mmjudge.store.forecast_file import CellForecast


def judge(config: SweepConfig | DictConfig, run_dir: Path) -> RunSummary:
    """Judge the cell into ``run_dir`` (resuming what is there); its summary."""
    from mmjudge.engine.cell import run_cell
    from mmjudge.store.cleanup import removed_unless_judged

    with removed_unless_judged(run_dir):
        return run_cell(config, run_dir)


def forecast(config: SweepConfig | DictConfig, run_dir: Path) -> CellForecast:
    """Forecast the cell into ``run_dir`` (``forecast.json``); its forecast."""
    from mmjudge.engine.cell import forecast as forecast_cell
    from mmjudge.store.cleanup import removed_unless_judged

    with removed_unless_judged(run_dir):
        return forecast_cell(config, run_dir)


def with_items(config: DictConfig, items: int | None, ungraded_too: bool = False) -> DictConfig:
    """A copy of a composed config whose dataset serves its first ``items`` items in the race's
    order (``dataset.sample_items``; the config itself when ``items`` is None), an order over
    every item, graded or not, with ``ungraded_too``."""
    if items is None:
        return config
    found = copy.deepcopy(config)
    with open_dict(found):
        found.dataset[SAMPLE_ITEMS.split(".", 1)[1]] = items
        if ungraded_too:
            found.dataset[SAMPLE_ITEMS_FROM.split(".", 1)[1]] = "all"
    return found
