"""What the stages of a cell hand each other (:func:`mmjudge.engine.cell.run_cell`): check →
prepare → judge (its rows recorded as they come) → summarise."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig

from mmjudge.config import SweepConfig
from mmjudge.engine.examples import ExampleStream
from mmjudge.engine.work import CellContext
from mmjudge.judges.base import JudgeAPI
from mmjudge.records import Forecast
from mmjudge.speed import Speed
from mmjudge.store import CallCounts, SummaryParts


@dataclass(frozen=True)
class CheckedCell:
    """A cell whose config, keys and endpoint were checked, its folder made."""

    cfg: SweepConfig
    """The typed config, its values checked."""
    raw_cfg: DictConfig | SweepConfig
    """The config as given, resolved and redacted into the summary."""
    run_dir: Path
    """The run folder."""
    judge_cls: type[JudgeAPI]
    """The judge's class (no judge is made before it is needed)."""
    skipped: str | None
    """Why the cell cannot run, known from the config alone."""
    speed: Speed
    """Whether the run uses the speed machinery (read once, where the run started)."""
    resume_setting: str | None = None
    """The command's setting that finds the run folder again, said when a stop signal comes."""


@dataclass(frozen=True)
class Skipped:
    """A cell that cannot run (its summary says why; it has no rows)."""

    reason: str | None
    """Why."""


@dataclass(frozen=True)
class PreparedCell:
    """A cell ready to judge: its dataset surveyed, its judge, bank and prices in place."""

    context: CellContext
    """What every call of the cell shares."""
    run_dir: Path
    """The run folder, where the rows go."""
    examples: ExampleStream
    """The items, streamed again for the calls."""
    n_items: int
    """Items the dataset holds for the cell."""
    parts: SummaryParts
    """The summary's blocks known before the calls (grading, testbank, n_items)."""


@dataclass(frozen=True)
class JudgedCell:
    """How the judging went, whichever way it ended."""

    calls: CallCounts
    """What the runner did."""
    forecast: Forecast
    """The cell's forecast (at batch prices in batch mode)."""
    stop: BaseException | None
    """The error that ended the calls early, or None."""
    refused: bool
    """Whether ``stop`` is a setting or key found wrong as the calls began: the summary is
    written, then it is raised."""
