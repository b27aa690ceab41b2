"""A sweep's grid, composed once: its cells (each with its overrides, its composed config, its
run folder and its display name), the sweep folder they go in, and the settings every cell
shares. The command's multirun (through mmjudge's Hydra sweeper), the library's sweep, the race
and the race's launchers all take their cells from :func:`compose_grid`.

The grid expands the overrides the way Hydra's basic sweeper does (``model=a,b
modality=text,mm`` is four cells, an experiment's ``hydra.sweeper.params`` come first and the
given overrides win) and checks every cell before the first call
(:func:`mmjudge.grid.preflight.check_cells`), so a grid with a missing key or a bad dataset line
stops before anything is paid for.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from mmjudge.config.compose import compose_raw, first_line
from mmjudge.config.names import cell_display_name, cell_prompt_id
from mmjudge.errors import ConfigError

#: Composes one cell from its overrides, with its ``hydra`` node (the library composes with
#: :func:`~mmjudge.config.compose.compose_raw`; Hydra's sweeper with its own config loader,
#: which sees ``--config-dir`` as the jobs do).
Composer = Callable[[Sequence[str]], DictConfig]

#: The override that has a cell judge the first N items of the race's order.
SAMPLE_ITEMS = "dataset.sample_items"
#: The override that has that order run over every item, graded or not.
SAMPLE_ITEMS_FROM = "dataset.sample_items_from"


@dataclass(frozen=True)
class GridCell:
    """One cell of a grid."""

    index: int
    """Its place in the grid (the index a race's records use)."""
    overrides: tuple[str, ...]
    """The overrides that make it, as the grid expands them."""
    config: DictConfig
    """Its composed config, without the ``hydra`` node (as Hydra hands a job its config)."""
    run_dir: Path
    """Its run folder, inside the sweep folder (``hydra.sweep.subdir``)."""
    name: str
    """Its display name (``dataset × model × modality``…, the prompt when prompts differ)."""

    def job_overrides(
        self, items: int | None = None, ungraded_too: bool = False
    ) -> tuple[str, ...]:
        """The overrides of a job that brings this cell to its first ``items`` items in the
        race's order (every item when None; with ``ungraded_too`` the order runs over items no
        person graded as well)."""
        if items is None:
            return self.overrides
        drawn = (f"{SAMPLE_ITEMS_FROM}=all",) if ungraded_too else ()
        return (*self.overrides, f"{SAMPLE_ITEMS}={items}", *drawn)


@dataclass(frozen=True)
class Grid:
    """A sweep folder's cells and the settings they share."""

    folder: Path
    """The sweep folder."""
    cells: tuple[GridCell, ...]
    """Every cell, in the grid's order."""
    settings: DictConfig
    """The config of the overrides that are not swept, with its ``hydra`` node: the sweep's own
    settings (``report.build``, ``paths.reports``, ``runner.dry_run``…)."""

    @property
    def dry_run(self) -> bool:
        """Whether every cell is forecast rather than judged (``runner.dry_run=true``)."""
        return bool(OmegaConf.select(self.settings, "runner.dry_run", default=False))

    @property
    def reports_dir(self) -> Path | None:
        """Where the sweep's report goes (None: ``report.build=false``)."""
        from mmjudge.locations import resolve_path

        if not OmegaConf.select(self.settings, "report.build", default=False):
            return None
        return resolve_path(str(self.settings.paths.reports))

    @property
    def ensembles(self) -> bool:
        """Whether the sweep's end builds panels and cascades from its cells."""
        found = OmegaConf.select(
            self.settings, "hydra.callbacks.sweep_report.ensembles", default=False
        )
        return bool(found)

    def report_setting(self, key: str) -> Any:
        """A ``report`` setting every cell shares (``human_cost_per_label``…)."""
        return OmegaConf.select(self.settings, f"report.{key}", default=None)

    def datasets(self) -> list[str]:
        """The datasets its cells judge, in order of first appearance."""
        return list(dict.fromkeys(str(cell.config.dataset.name) for cell in self.cells))


def compose_grid(
    overrides: Sequence[str],
    *,
    config_dir: str | Path | None = None,
    sweep_dir: str | Path | None = None,
    composer: Composer | None = None,
    settings: DictConfig | None = None,
    check: bool = True,
) -> Grid:
    """The grid of ``overrides`` (a multirun's: ``["model=a,b", "modality=text,mm"]``), its
    cells composed by ``composer`` (default: as :func:`mmjudge.compose` composes, with
    ``config_dir``) and, with ``check``, checked before anything runs. ``settings`` is the
    config of the overrides that are not swept, when the caller has it (Hydra's sweeper);
    ``sweep_dir`` defaults to its ``hydra.sweep.dir``.

    Raises:
        ConfigError: an override that does not parse, a bad setting, dataset or price in any
            cell (every problem named in one line).
        CredentialError: a cell's API key is not set (every missing one named).
    """
    from mmjudge.grid.preflight import check_cells

    if settings is None:
        settings = compose_raw(split_overrides(overrides)[0], config_dir, with_hydra=True)
    if composer is None:

        def composer(cell: Sequence[str]) -> DictConfig:
            return compose_raw(cell, config_dir, with_hydra=True)

    folder = Path(sweep_dir) if sweep_dir is not None else Path(str(settings.hydra.sweep.dir))
    composed = [(tuple(c), composer(c)) for c in sweep_grid(overrides, settings)]
    if check:
        check_cells((str(raw.hydra.sweep.subdir), raw) for _, raw in composed)
    prompts_differ = len({_prompt_id(raw) for _, raw in composed}) > 1
    cells = []
    for index, (combination, raw) in enumerate(composed):
        run_dir = folder / str(raw.hydra.sweep.subdir)
        with open_dict(raw):
            del raw["hydra"]
        name = cell_display_name(
            str(raw.dataset.name),
            str(raw.model.name),
            str(raw.modality.name),
            _prompt_id(raw),
            str(raw.perturb.name),
            prompt_named=prompts_differ,
        )
        cells.append(GridCell(index, combination, raw, run_dir, name))
    return Grid(folder, tuple(cells), settings)


def _prompt_id(raw: DictConfig) -> str:
    """The cell's prompt id as its rows and folder name it (the language told apart)."""
    return cell_prompt_id(
        raw.prompt.id, raw.prompt.language, OmegaConf.select(raw, "prompt.passages_per_call")
    )


# --------------------------------------------------------------------------- expansion


def grid(overrides: Sequence[str]) -> list[list[str]]:
    """The cells of a sweep's overrides: each override's values crossed with the others'
    (``a=1,2 b=x`` gives ``[a=1 b=x]`` and ``[a=2 b=x]``), a later override of the same key
    replacing an earlier one, as Hydra's basic sweeper does.

    Kept here rather than taken from Hydra: the basic sweeper's expansion
    (``BasicSweeper.split_arguments``) lives in ``hydra._internal``, which is not Hydra's
    public API (mmjudge uses only that: see docs/development.md), and it needs the sweeper
    instantiated with a launcher to reach it. This takes the same steps through the public
    override parser, and ``tests/api/test_cells.py::test_the_grid_is_the_basic_sweepers``
    holds it to the basic sweeper's cell folders (lists, an experiment's
    ``hydra.sweeper.params``, a later override replacing an earlier one).

    Raises:
        ConfigError: an override that does not parse, or a sweep of a range of real numbers.
    """
    lists: OrderedDict[str, list[str]] = OrderedDict()
    for override in _parse(overrides):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise ConfigError(f"{override.input_line}: only lists of values can be swept")
            lists[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            lists[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(cell) for cell in itertools.product(*lists.values())]


def sweep_grid(overrides: Sequence[str], settings: DictConfig) -> list[list[str]]:
    """The cells of a sweep: an experiment's ``hydra.sweeper.params`` (in ``settings``, the
    config composed from the overrides that are not swept) first, then the given overrides
    (which win), expanded by :func:`grid`."""
    params = OmegaConf.select(settings, "hydra.sweeper.params") or {}
    configured = [f"{key}={value}" for key, value in params.items()]
    return grid([*configured, *overrides])


def split_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """The overrides every cell shares, and those that are swept."""
    fixed: list[str] = []
    swept: list[str] = []
    for override in _parse(overrides):
        line = override.input_line or ""
        (swept if override.is_sweep_override() else fixed).append(line)
    return fixed, swept


def _parse(overrides: Sequence[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as error:
        raise ConfigError(first_line(error)) from None
