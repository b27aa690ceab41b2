# The types of mmjudge/__init__.py for type checkers: the library surface is imported there
# on first use (by name), and declared here as the imports it stands for.

from mmjudge.api.cells import forecast as forecast
from mmjudge.api.cells import run_cell as run_cell
from mmjudge.api.cells import run_sweep as run_sweep
from mmjudge.api.compose import compose as compose
from mmjudge.api.judge import Grade as Grade
from mmjudge.api.judge import Judge as Judge
from mmjudge.api.prices import PriceFigures as PriceFigures
from mmjudge.api.prices import RepricedRun as RepricedRun
from mmjudge.api.prices import reprice as reprice
from mmjudge.api.race import run_race as run_race
from mmjudge.api.saved import CellForecast as CellForecast
from mmjudge.api.saved import Run as Run
from mmjudge.api.saved import Sweep as Sweep
from mmjudge.api.saved import SweepCell as SweepCell
from mmjudge.api.saved import open_run as open_run
from mmjudge.api.saved import open_sweep as open_sweep
from mmjudge.api.scores import LabelScores as LabelScores
from mmjudge.api.scores import score_labels as score_labels
from mmjudge.config import SweepConfig as SweepConfig
from mmjudge.errors import ConfigError as ConfigError
from mmjudge.errors import CredentialError as CredentialError
from mmjudge.errors import MMJudgeError as MMJudgeError
from mmjudge.grid.race import RaceResult as RaceResult
from mmjudge.records import JudgmentRecord as JudgmentRecord
from mmjudge.store import RunSummary as RunSummary

__version__: str

__all__ = [
    "CellForecast",
    "ConfigError",
    "CredentialError",
    "Grade",
    "Judge",
    "JudgmentRecord",
    "LabelScores",
    "MMJudgeError",
    "PriceFigures",
    "RaceResult",
    "RepricedRun",
    "Run",
    "RunSummary",
    "Sweep",
    "SweepCell",
    "SweepConfig",
    "__version__",
    "compose",
    "forecast",
    "open_run",
    "open_sweep",
    "reprice",
    "run_cell",
    "run_race",
    "run_sweep",
    "score_labels",
]
