"""mmjudge's grid as a Hydra sweeper: a multirun's cells composed once by the grid
(:func:`mmjudge.grid.cells.compose_grid`, with the sweep's own config loader, which sees
``--config-dir`` as the jobs do), checked before the first call, and run by the grid's one loop
(:func:`mmjudge.grid.rounds.run_rounds`) with each round's cells as one batch of jobs for the
launcher the command names (``hydra/launcher=basic``: in this process, one after the other;
``joblib``: processes; ``ray``: Ray tasks).

- ``hydra/sweeper=mmjudge``: a sweep, one round of every cell at every item (``mmjudge sweep
  -m`` chooses it unless the command names another sweeper);
- ``hydra/sweeper=mmjudge_race``: a race (``mmjudge race`` with a ``hydra/launcher=…``),
  rounds until the race's rule decides, as :func:`mmjudge.run_race` runs it.

Hydra finds sweepers in the ``hydra_plugins`` namespace (an editable install's namespace
packages are not listed to it, so the command also registers the sweeper through Hydra's
``Plugins.register`` before it runs). The end of the sweep (its summary and report) is the
command's usual callback.
"""

# No ``from __future__ import annotations``: Hydra's plugin scan runs this module without
# entering it in sys.modules, where a dataclass could not resolve annotations kept as text.
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from hydra.plugins.launcher import Launcher
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf


@dataclass
class GridSweeperConf:
    """``hydra/sweeper=mmjudge``; ``params`` as the basic sweeper's, so an experiment's grid
    (``hydra.sweeper.params``) is swept as the basic sweeper would sweep it."""

    _target_: str = "hydra_plugins.mmjudge_grid.grid_sweeper.GridSweeper"
    params: dict[str, str] | None = field(default=None)
    race: bool = False


@dataclass
class RaceSweeperConf(GridSweeperConf):
    """``hydra/sweeper=mmjudge_race``: the grid raced."""

    race: bool = True


ConfigStore.instance().store(
    group="hydra/sweeper", name="mmjudge", node=GridSweeperConf, provider="mmjudge"
)
ConfigStore.instance().store(
    group="hydra/sweeper", name="mmjudge_race", node=RaceSweeperConf, provider="mmjudge"
)


class GridSweeper(Sweeper):
    """Runs the multirun's grid as a sweep or a race."""

    def __init__(self, params: dict[str, str] | None = None, race: bool = False) -> None:
        self.params = params
        self.race = race
        self.config: DictConfig | None = None
        self.hydra_context: HydraContext | None = None
        self.launcher: Launcher | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.hydra_context = hydra_context
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments: list[str]) -> Any:
        from mmjudge.grid.cells import compose_grid
        from mmjudge.grid.hydra_jobs import HydraJobs

        assert self.config is not None and self.hydra_context is not None
        assert self.launcher is not None
        loader = self.hydra_context.config_loader
        config = self.config

        def composer(cell: Sequence[str]) -> DictConfig:
            return loader.load_sweep_config(config, list(cell))

        grid = _checked(lambda: compose_grid(arguments, composer=composer, settings=config))
        grid.folder.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(config, grid.folder / "multirun.yaml")
        jobs = HydraJobs(grid, self.launcher)
        if self.race:
            return self._race(grid, jobs)
        return self._sweep(grid, jobs)

    def _sweep(self, grid: Any, jobs: Any) -> None:
        from mmjudge.grid.rounds import SweepRound, run_rounds

        stopped = run_rounds(SweepRound(grid), jobs)
        if stopped is not None:
            from mmjudge.cli.exits import resume_command

            again = resume_command(sys.argv[1:], str(grid.folder), multirun=True)
            print(
                "mmjudge: stopped; the judgments made are kept. Take the sweep up where it "
                f"stopped with:\n  {again}",
                file=sys.stderr,
            )
            raise SystemExit(128 + stopped)

    def _race(self, grid: Any, jobs: Any) -> Any:
        from mmjudge.api.race import race_grid
        from mmjudge.api.race_result import closing_lines
        from mmjudge.cli.race_lines import print_round, stopped_lines, waiting_lines
        from mmjudge.store.status import EXIT_GRADES_NEEDED

        result = race_grid(grid, jobs, print_round)
        if result.stop_signal is not None:
            print(stopped_lines(result), file=sys.stderr)
            raise SystemExit(128 + result.stop_signal)
        if result.waiting is not None:
            print(waiting_lines(result), file=sys.stderr)
            raise SystemExit(EXIT_GRADES_NEEDED)
        if result.outcome is not None:
            for line in closing_lines(result):
                print(line, file=sys.stderr)
        return result


def _checked(compose: Any) -> Any:
    """The grid, or the process ended in one line with exit code 2 when a cell cannot run (a
    missing key, a bad setting or dataset line): every cell is checked before the first call,
    so nothing has been paid for."""
    from mmjudge.config.hydra_errors import CONFIG_ERRORS, config_error_line, user_wants_full_errors
    from mmjudge.errors import MMJudgeError

    try:
        return compose()
    except MMJudgeError as error:
        print(f"mmjudge: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except CONFIG_ERRORS as error:
        if user_wants_full_errors():
            raise
        print(f"mmjudge: {config_error_line(error)}", file=sys.stderr)
        raise SystemExit(2) from None


def register() -> None:
    """Make the sweeper known to Hydra however mmjudge is installed (the config nodes are
    stored when this module is imported)."""
    Plugins.instance().register(GridSweeper)
