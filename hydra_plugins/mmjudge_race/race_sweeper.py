"""The race as a Hydra sweeper: the grid of a multirun, judged in rounds, each round's cells
launched through the launcher the command names (``hydra/launcher=joblib``: processes;
``hydra/launcher=ray``: Ray tasks), so a race outgrows one machine the way a sweep does.

Hydra finds sweepers in the ``hydra_plugins`` namespace (an editable install's namespace
packages are not listed to it, so ``mmjudge race`` also registers the sweeper through Hydra's
``Plugins.register`` before it runs); this one is a thin adapter over the
library's race (:mod:`mmjudge.api.race`): the grid is composed with the sweep's own config
loader, a round's cells are one batch of jobs for the launcher (each job an ordinary run of
the cell into its folder, with ``dataset.sample_items`` at the round's prefix), and the
decisions, ``race.json`` and the lines printed are the library's. The end of the sweep (its
summary and report) is the command's usual callback.
"""

# No ``from __future__ import annotations``: Hydra's plugin scan runs this module without
# entering it in sys.modules, where a dataclass could not resolve annotations kept as text.
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


@dataclass
class RaceSweeperConf:
    """``hydra/sweeper=mmjudge_race``; ``params`` as the basic sweeper's, so an experiment's
    grid (``hydra.sweeper.params``) is raced as it would be swept."""

    _target_: str = "hydra_plugins.mmjudge_race.race_sweeper.RaceSweeper"
    params: dict[str, str] | None = field(default=None)


ConfigStore.instance().store(
    group="hydra/sweeper", name="mmjudge_race", node=RaceSweeperConf, provider="mmjudge"
)


class RaceSweeper(Sweeper):
    """Runs mmjudge's race over the multirun's grid."""

    def __init__(self, params: dict[str, str] | None = None) -> None:
        self.params = params
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Launcher | None = None
        self.job_index = 0

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        from mmjudge.api.cells import sweep_grid
        from mmjudge.api.race import cell_of, prepare_race, race_rounds

        assert self.config is not None and self.hydra_context is not None
        folder = Path(str(self.config.hydra.sweep.dir))
        folder.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(self.config, folder / "multirun.yaml")
        loader = self.hydra_context.config_loader
        cells = [
            cell_of(tuple(c), loader.load_sweep_config(self.config, list(c)), folder)
            for c in sweep_grid(arguments, probe=self.config)
        ]
        result, population = prepare_race(folder, cells)
        race_rounds(result, population, self._launch, _print_round)
        if result.outcome is not None:
            for line in result.closing_lines():
                print(line, file=sys.stderr)
        return result

    def _launch(self, jobs: list[tuple[Any, list[str]]]) -> list[str]:
        """One round's cells as one batch of the launcher's jobs; their statuses, from the
        summaries the jobs wrote."""
        from mmjudge.store import read_summary

        assert self.launcher is not None
        batch = [list(overrides) for _, overrides in jobs]
        self.launcher.launch(batch, initial_job_idx=self.job_index)
        self.job_index += len(batch)
        statuses = []
        for cell, _ in jobs:
            summary = cell.run_dir / "summary.json"
            statuses.append(read_summary(cell.run_dir).status.status if summary.is_file() else "")
        return statuses


def register() -> None:
    """Make the sweeper known to Hydra however mmjudge is installed (the config node is
    stored when this module is imported)."""
    Plugins.instance().register(RaceSweeper)


def _print_round(result: Any, decision: Any) -> None:
    print(result.line(decision), file=sys.stderr, flush=True)
