"""``race.json``: a race's state (``mmjudge race``), kept in its sweep folder beside the cells'
run folders — the cells that race and those that cannot, each round's decision with its
evidence, the money so far and how the race ended. Written after every round, so a race
stopped between rounds or in one is taken up where it stopped; read by the race itself, the
report and the race's verdict for the card and ``mmjudge frontier``.

The records here are the file's: :class:`RaceFile` and its parts, one writer
(:func:`write_race_file`) and one reader (:func:`read_race_file`). Files written by earlier
versions read as this layout (version 1: the item count as ``population``, rounds' dollars as
``usd``, intervals of the items themselves).

Dollars in a round and in the outcome are list-price forecasts (judgments times the dry run's
price per judgment: ``list_usd``), which is what the race's rule weighs; the money the ledgers
counted is the file's ``worth_usd``, ``paid_usd`` and ``full_grid_usd``.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mmjudge.config.race import RaceConfig
from mmjudge.display import MISSING, bracketed, number
from mmjudge.errors import MMJudgeError
from mmjudge.files import write_atomic

#: The file's name in the sweep folder.
RACE_FILE = "race.json"
#: The file's layout. 2: the item count as ``n_items``, the money on the ledger's basis
#: (``worth_usd``, ``paid_usd``), the cells that take no part; 1 still reads.
RACE_SCHEMA_VERSION = 2
#: Version of a round's and an outcome's layout. 2: dollars named ``list_usd`` (forecasts at
#: list prices, not spending), and each round says what its intervals target; version-1
#: rounds (``usd``, finite-population intervals) still read.
SCHEMA_VERSION = 2

#: What a race's κ are of (``race.target``); see :mod:`mmjudge.studies.race_rule`.
Target = Literal["population", "items"]

#: Why a cell is settled against the candidate (see :mod:`mmjudge.studies.race_rule`).
Reason = Literal[
    "not better, not cheaper",
    "below the candidate",
    "dominated",
    "cannot judge",
    "cannot separate at this size",
]
#: Why a race ended.
Ending = Literal["settled", "items ran out", "dollar cap", "one cell", "cannot separate"]


@dataclass(frozen=True)
class Evidence:
    """Why one cell is settled against the candidate, or why it is not."""

    cell: int
    """The cell."""
    reason: Reason | None
    """Which rule settles it (None: not settled)."""
    comparator: int
    """The cell it is compared with: the candidate, or the cell dominating it."""
    difference: float
    """κ̂_cell − κ̂_comparator on the pair's items."""
    low: float
    """Lower end of the round's interval for the difference."""
    high: float
    """Upper end of the round's interval for the difference."""
    n_items: int
    """Items both graded within the shorter prefix."""

    def bounds_text(self, *, items: bool = False) -> str:
        """``+0.296 [+0.004, +0.587]`` (``items``: followed by ``on 40 items``): the difference
        with its interval, as every view of a race prints it; a figure that is not known reads
        :data:`~mmjudge.display.MISSING`, and a pair that shares no graded item (a cell whose
        every answer failed) says so."""
        if self.n_items == 0:
            return f"{MISSING} (no item graded by both)"

        text = bracketed(
            self.difference, self.low, self.high, show=lambda x: number(x, 3, sign=True)
        )
        return f"{text} on {self.n_items:,} items" if items else text


@dataclass(frozen=True)
class CellChange:
    """A cell that stops or resumes judging after a round."""

    cell: int
    """The cell."""
    action: Literal["stopped", "resumed"]
    """What it does from the next round on."""
    evidence: Evidence
    """The comparison that settles it (stopped) or no longer does (resumed)."""


@dataclass(frozen=True)
class RoundDecision:
    """What one round decided."""

    schema_version: int
    """Version of this record's layout."""
    round: int
    """Round number (1, 2, ...)."""
    prefix: int
    """Items every active cell had reached by this round."""
    alpha_round: float
    """α spent by this round (α(u_t) − α(u_{t−1}))."""
    alpha_total: float
    """α spent by this round and the ones before."""
    z: float
    """Normal quantile of this round's intervals."""
    kappas: tuple[float, ...]
    """Each cell's κ̂ on its own prefix."""
    candidate: int
    """The cheapest cell with κ̂ ≥ max κ̂ − δ."""
    chosen: int | None
    """The cell chosen when the race ends here, else None."""
    ending: Ending | None
    """Why the race ends here, or None when it goes on."""
    active: tuple[int, ...]
    """The cells that judge the next round (empty when the race ends)."""
    changes: tuple[CellChange, ...]
    """Cells that stop or resume after this round, with their evidence."""
    settled: tuple[Evidence, ...]
    """Every other cell against the candidate (settled or not)."""
    judgments: int
    """Judgments made so far, every cell's prefix together."""
    list_usd: float
    """Those judgments at the forecast's list price per judgment (what the rule weighs; not
    what the ledgers spent: answers from the response cache are free)."""
    target: Target = "population"
    """What this round's intervals are of: the population the items were drawn from, or the
    items themselves (finite-population intervals)."""


#: Where a race's human grades came from (``race.labels``).
LabelDesign = Literal["uniform", "ask"]


@dataclass(frozen=True)
class HumanLabels:
    """The people's grades a race needed: every item it judged (``uniform``), or those asked
    round by round (``ask``)."""

    design: LabelDesign
    """How the items to grade were chosen (``race.labels``)."""
    per_round: tuple[int, ...]
    """Grades each round added."""
    total: int
    """Grades in all."""


@dataclass(frozen=True)
class RaceOutcome:
    """How a race ended."""

    schema_version: int
    """Version of this record's layout."""
    chosen: int
    """The chosen cell (its index in the inputs)."""
    name: str
    """The chosen cell's name."""
    kappa: float
    """Its κ̂ on its own prefix."""
    runner_up: int | None
    """The other cell with the highest κ̂ (None with one cell)."""
    versus_runner_up: Evidence | None
    """κ̂_chosen − κ̂_runner-up with the last round's interval."""
    ending: Ending
    """Why the race ended."""
    guarantee: bool
    """Whether the α guarantee holds (not when the dollar cap ended the race)."""
    rounds: tuple[RoundDecision, ...]
    """Every round's decision, in order."""
    prefixes: tuple[int, ...]
    """Items each cell judged."""
    judgments: int
    """Judgments made by every cell together."""
    list_usd: float
    """Those judgments at the forecast's list price per judgment."""
    full_judgments: int
    """Judgments of the full grid (every cell on every graded item)."""
    full_list_usd: float
    """The full grid's judgments at the forecast's list price per judgment."""
    names: tuple[str, ...] = field(default=())
    """Every cell's name."""
    human_labels: HumanLabels | None = None
    """The people's grades the race needed, per round and in all (None in files written
    before it was kept)."""


@dataclass(frozen=True)
class RaceFileCell:
    """A cell of the race, as the file keeps it."""

    index: int
    """Its place among the race's cells (the index rounds and the outcome use)."""
    name: str
    """Its display name."""
    overrides: tuple[str, ...]
    """The overrides that make it."""
    run_dir: str
    """Its run folder's name in the sweep folder."""
    usd_per_judgment: float
    """Its dry run's list-price dollars per judgment (what the rule ranks cells by)."""
    forecast_usd: float
    """Its dry run's list-price dollars for every item."""


@dataclass(frozen=True)
class RaceFileSkipped:
    """A cell of the grid that takes no part in the race."""

    name: str
    """Its display name."""
    reason: str
    """Why it cannot run."""


@dataclass(frozen=True)
class RaceFile:
    """Everything ``race.json`` holds."""

    settings: RaceConfig
    """The race's settings (``race.*``)."""
    seed: int
    """The seed of the item order."""
    n_items: int
    """Graded items the race draws from."""
    cells: tuple[RaceFileCell, ...]
    """The cells that race."""
    skipped: tuple[RaceFileSkipped, ...] = ()
    """The cells of the grid that cannot run."""
    rounds: tuple[RoundDecision, ...] = ()
    """Each decided round, in order."""
    worth_usd: float = 0.0
    """What the cells' judgments are worth at the ledger's prices (cache hits included)."""
    paid_usd: float = 0.0
    """What was paid for them (cache hits free)."""
    full_grid_usd: float = 0.0
    """What every cell on every item would be worth (see :mod:`mmjudge.grid.race`)."""
    outcome: RaceOutcome | None = None
    """How the race ended; None while it has not."""
    schema_version: int = RACE_SCHEMA_VERSION
    """The file's layout."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every racing cell's display name, in index order."""
        return tuple(cell.name for cell in self.cells)


# --------------------------------------------------------------------------- writing


def finite(value: Any) -> Any:
    """``value`` with every number that is not finite written as null (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def write_race_file(folder: Path, record: RaceFile) -> None:
    """Write ``record`` as the folder's ``race.json`` (numbers that are not finite as null)."""
    data = dataclasses.asdict(record)
    if record.outcome is not None:  # its rounds are the file's own
        data["outcome"].pop("rounds")
    text = json.dumps(finite(data), indent=1, allow_nan=False) + "\n"
    write_atomic(Path(folder) / RACE_FILE, text)


# --------------------------------------------------------------------------- reading


def read_race_file(folder: Path) -> RaceFile | None:
    """The sweep folder's ``race.json``, or None when it holds none.

    Raises:
        MMJudgeError: the file cannot be read, or is not a race file (one line, the path and
            the fix)."""
    path = Path(folder) / RACE_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MMJudgeError(f"{path}: cannot be read ({error}); move it aside") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if version not in (1, RACE_SCHEMA_VERSION):
        raise MMJudgeError(f"{path}: not a race file this version of mmjudge wrote; move it aside")
    try:
        return _race_file(data)
    except (KeyError, TypeError, ValueError) as error:
        raise MMJudgeError(f"{path}: not a race file ({error!r} is wrong); move it aside") from None


def settings_of(settings: Mapping[str, Any]) -> RaceConfig:
    """A race's settings as its file gives them, with those an earlier layout did not write at
    their defaults (``target``, new with version-2 rounds), so a race started before an
    upgrade is taken up by the same command."""
    known = {f.name for f in dataclasses.fields(RaceConfig)}
    return RaceConfig(**{k: v for k, v in settings.items() if k in known})


def _race_file(data: Mapping[str, Any]) -> RaceFile:
    rounds = tuple(_round(r) for r in data["rounds"])
    outcome = data.get("outcome")
    return RaceFile(
        settings=settings_of(data["settings"]),
        seed=int(data["seed"]),
        n_items=int(data["n_items"] if "n_items" in data else data["population"]),
        cells=tuple(
            RaceFileCell(
                int(c["index"]),
                str(c["name"]),
                tuple(str(o) for o in c["overrides"]),
                str(c["run_dir"]),
                float(c.get("usd_per_judgment") or 0.0),
                float(c.get("forecast_usd") or 0.0),
            )
            for c in data["cells"]
        ),
        skipped=tuple(
            RaceFileSkipped(str(s["name"]), str(s["reason"])) for s in data.get("skipped") or ()
        ),
        rounds=rounds,
        worth_usd=_number(data.get("worth_usd"), 0.0),
        paid_usd=_number(data.get("paid_usd", data.get("spent_usd")), 0.0),
        full_grid_usd=_number(data.get("full_grid_usd"), 0.0),
        outcome=None if outcome is None else _outcome(outcome, rounds),
        schema_version=RACE_SCHEMA_VERSION,
    )


def _number(value: Any, missing: float = math.nan) -> float:
    """A float written to JSON, where a number that is not finite is written as null."""
    return missing if value is None else float(value)


def _evidence(data: Mapping[str, Any]) -> Evidence:
    return Evidence(
        cell=int(data["cell"]),
        reason=data["reason"],
        comparator=int(data["comparator"]),
        difference=_number(data["difference"]),
        low=_number(data["low"]),
        high=_number(data["high"]),
        n_items=int(data["n_items"]),
    )


def _round(data: Mapping[str, Any]) -> RoundDecision:
    """A round of this layout or version 1's (its ``usd`` read as ``list_usd``; its intervals
    were the items' own, finite-population ones)."""
    first = data.get("schema_version", 1) == 1
    return RoundDecision(
        schema_version=SCHEMA_VERSION,
        round=int(data["round"]),
        prefix=int(data["prefix"]),
        alpha_round=float(data["alpha_round"]),
        alpha_total=float(data["alpha_total"]),
        z=_number(data["z"]),
        kappas=tuple(_number(k) for k in data["kappas"]),
        candidate=int(data["candidate"]),
        chosen=None if data["chosen"] is None else int(data["chosen"]),
        ending=data["ending"],
        active=tuple(int(c) for c in data["active"]),
        changes=tuple(
            CellChange(int(c["cell"]), c["action"], _evidence(c["evidence"]))
            for c in data["changes"]
        ),
        settled=tuple(_evidence(e) for e in data["settled"]),
        judgments=int(data["judgments"]),
        list_usd=float(data["usd"] if first else data["list_usd"]),
        target="items" if first else data.get("target", "population"),
    )


def _outcome(data: Mapping[str, Any], rounds: tuple[RoundDecision, ...]) -> RaceOutcome:
    versus = data.get("versus_runner_up")
    first = data.get("schema_version", 1) == 1
    return RaceOutcome(
        schema_version=SCHEMA_VERSION,
        chosen=int(data["chosen"]),
        name=str(data["name"]),
        kappa=_number(data["kappa"]),
        runner_up=None if data.get("runner_up") is None else int(data["runner_up"]),
        versus_runner_up=None if versus is None else _evidence(versus),
        ending=data["ending"],
        guarantee=bool(data["guarantee"]),
        rounds=rounds,
        prefixes=tuple(int(p) for p in data["prefixes"]),
        judgments=int(data["judgments"]),
        list_usd=float(data["usd"] if first else data["list_usd"]),
        full_judgments=int(data["full_judgments"]),
        full_list_usd=float(data["full_usd"] if first else data["full_list_usd"]),
        names=tuple(str(n) for n in data.get("names") or ()),
        human_labels=_human_labels(data.get("human_labels")),
    )


def _human_labels(data: Mapping[str, Any] | None) -> HumanLabels | None:
    if data is None:
        return None
    design = data["design"]
    if design not in ("uniform", "ask"):
        raise ValueError(f"human_labels.design {design!r}")
    return HumanLabels(design, tuple(int(n) for n in data["per_round"]), int(data["total"]))
