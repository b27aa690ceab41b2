"""``mmjudge plan --format json``: the human labels each dataset of a sweep needs
(:class:`LabelPlan`), as the planner works them out (:mod:`mmjudge.estimation.planning`).
:func:`plan_json` is its one writer (the command prints it; a user keeps it as a file) and
:func:`read_plan` its one reader; the table the command prints reads the records.

Every figure a plan cannot give (an undefined κ, a count that would take no number of labels)
is null. A count is a whole number of labels or queries; ``more_items`` may be written ``0.0``.

Layout versions (``schema_version``):

1. The first layout. Plans printed before the version key existed lack it and read the
   same.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.errors import MMJudgeError
from mmjudge.store.bounds import finite_number

#: The layout's version (see the module docstring).
PLAN_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class BudgetPlan:
    """How to spend a budget on human and judge labels for the narrowest interval of the
    mean grade (:func:`mmjudge.estimation.planning.budget_split`)."""

    human_labels: int | None
    """Items to label by people (the judge labels them too)."""
    judge_only_labels: int | None
    """Further items only the judge labels (None: every item there is)."""
    cost: float | None
    """What the split costs."""
    effective_n: float | None
    """Human-only labels that would give as narrow an interval."""
    human_only_n: int | None
    """Human labels the whole budget buys without a judge."""
    correlation: float | None
    """Correlation of judge and human grades on the pilot (what the split rests on)."""


@dataclass(frozen=True)
class JudgePlan:
    """One judge: the labels to know its κ to ± the target half-width, and their cost."""

    judge: str
    """The judge's cell (``model/prompt/modality``)."""
    usd_per_million: float
    """Its dollars per million judgments."""
    n_items: int
    """Pilot items (the judge and the consensus both graded)."""
    n_queries: int
    """Queries of the pilot items."""
    kappa: float | None
    """κ on the pilot."""
    half_width: float | None
    """Half the pilot's 95% interval of κ (query bootstrap)."""
    analytic_half_width: float | None
    """1.96 × κ's analytic standard error on the pilot's items."""
    needed_items: int | None
    """Items for the target, from the pilot's half-width widened for its own uncertainty."""
    needed_queries: int | None
    """Queries of the pilot's size for the target, as planned."""
    needed_items_central: int | None
    """Items for the target from the pilot's half-width as it is."""
    needed_queries_central: int | None
    """Queries for that."""
    pilot_widening: float | None
    """The factor the pilot's half-width was widened by."""
    reachable_half_width: float | None
    """About the half-width every item of the pilot's queries would give."""
    needs_more_queries: bool
    """Whether only new queries reach the target."""
    pool_queries: int | None
    """Queries the dataset has, labelled or not."""
    needed_items_analytic: int | None
    """Items for the target from the analytic standard error (items independent)."""
    design_effect: float | None
    """How many times more items the queries' clustering asks for."""
    more_items: float | None
    """Labels to add to the pilot's."""
    usd: float | None
    """Their price at the cost per label (None without one)."""
    budget_split: BudgetPlan | None = None
    """The budget's split, when a budget was given."""


@dataclass(frozen=True)
class SeparationEntry:
    """The labels to tell the best judge from the runner-up."""

    best: str
    """The judge with the highest κ."""
    runner_up: str
    """The next one."""
    n_items: int
    """Pilot items both judges and the consensus graded."""
    n_queries: int
    """Their queries."""
    difference: float | None
    """κ(best) − κ(runner-up) on those items."""
    half_width: float | None
    """Half the paired 95% interval of the difference."""
    separated: bool
    """The pilot already tells them apart."""
    needed_items: int | None
    """Items for the interval to exclude 0 (None when the difference is 0)."""
    needed_queries: int | None
    """Queries for that."""
    more_items: float | None
    """Labels to add to the pilot's."""
    usd: float | None
    """Their price at the cost per label (None without one)."""


@dataclass(frozen=True)
class DatasetPlan:
    """One dataset's plan: each judge, and the best against the runner-up."""

    dataset: str
    """Dataset name."""
    target_half_width: float
    """The half-width of κ's 95% interval planned for (written ``half_width``)."""
    cost_per_label: float | None
    """What one human label costs (None: not given)."""
    budget: float | None
    """The budget to split (None: not given)."""
    judges: tuple[JudgePlan, ...]
    """Each single judge with a κ, highest κ first."""
    separation: SeparationEntry | None
    """The best against the runner-up (None with fewer than two judges)."""
    n_boot: int
    """Bootstrap resamples behind the intervals."""
    seed: int
    """Their seed."""


@dataclass(frozen=True)
class LabelPlan:
    """What ``mmjudge plan --format json`` prints: a plan per dataset."""

    datasets: tuple[DatasetPlan, ...]
    """One per dataset with a judge that has a κ, by name."""
    schema_version: int = PLAN_SCHEMA_VERSION
    """Version of this layout."""


def plan_json(plan: LabelPlan) -> str:
    """The plan as JSON text (what the command prints), ending in a newline."""
    data = {
        "schema_version": plan.schema_version,
        "datasets": [_dataset_layout(d) for d in plan.datasets],
    }
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def read_plan(path: Path) -> LabelPlan:
    """A plan the command printed and a user kept, of this layout or an earlier one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MMJudgeError(f"{path}: cannot be read as a plan ({error})") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(data, dict) or (version or 1) > PLAN_SCHEMA_VERSION:
        raise MMJudgeError(f"{path}: not a plan this version of mmjudge reads")
    return LabelPlan(tuple(_dataset(d) for d in data.get("datasets") or [] if isinstance(d, dict)))


# --------------------------------------------------------------------------- the layout


def _dataset_layout(plan: DatasetPlan) -> dict[str, Any]:
    return {
        "dataset": plan.dataset,
        "half_width": plan.target_half_width,
        "cost_per_label": plan.cost_per_label,
        "budget": plan.budget,
        "judges": [_judge_layout(j) for j in plan.judges],
        "separation": None if plan.separation is None else dataclasses.asdict(plan.separation),
        "n_boot": plan.n_boot,
        "seed": plan.seed,
    }


def _judge_layout(judge: JudgePlan) -> dict[str, Any]:
    data = dataclasses.asdict(judge)
    if judge.budget_split is None:
        del data["budget_split"]  # written only when a budget was given
    return data


def _dataset(data: Mapping[str, Any]) -> DatasetPlan:
    separation = data.get("separation")
    return DatasetPlan(
        dataset=str(data.get("dataset") or ""),
        target_half_width=float(data.get("half_width") or 0.0),
        cost_per_label=finite_number(data.get("cost_per_label")),
        budget=finite_number(data.get("budget")),
        judges=tuple(_judge(j) for j in data.get("judges") or [] if isinstance(j, dict)),
        separation=_separation(separation) if isinstance(separation, dict) else None,
        n_boot=int(data.get("n_boot") or 0),
        seed=int(data.get("seed") or 0),
    )


def _judge(data: Mapping[str, Any]) -> JudgePlan:
    split = data.get("budget_split")
    return JudgePlan(
        judge=str(data.get("judge") or ""),
        usd_per_million=float(data.get("usd_per_million") or 0.0),
        n_items=int(data.get("n_items") or 0),
        n_queries=int(data.get("n_queries") or 0),
        kappa=finite_number(data.get("kappa")),
        half_width=finite_number(data.get("half_width")),
        analytic_half_width=finite_number(data.get("analytic_half_width")),
        needed_items=_count(data.get("needed_items")),
        needed_queries=_count(data.get("needed_queries")),
        needed_items_central=_count(data.get("needed_items_central")),
        needed_queries_central=_count(data.get("needed_queries_central")),
        pilot_widening=finite_number(data.get("pilot_widening")),
        reachable_half_width=finite_number(data.get("reachable_half_width")),
        needs_more_queries=bool(data.get("needs_more_queries")),
        pool_queries=_count(data.get("pool_queries")),
        needed_items_analytic=_count(data.get("needed_items_analytic")),
        design_effect=finite_number(data.get("design_effect")),
        more_items=finite_number(data.get("more_items")),
        usd=finite_number(data.get("usd")),
        budget_split=_budget(split) if isinstance(split, dict) else None,
    )


def _budget(data: Mapping[str, Any]) -> BudgetPlan:
    return BudgetPlan(
        human_labels=_count(data.get("human_labels")),
        judge_only_labels=_count(data.get("judge_only_labels")),
        cost=finite_number(data.get("cost")),
        effective_n=finite_number(data.get("effective_n")),
        human_only_n=_count(data.get("human_only_n")),
        correlation=finite_number(data.get("correlation")),
    )


def _separation(data: Mapping[str, Any]) -> SeparationEntry:
    return SeparationEntry(
        best=str(data.get("best") or ""),
        runner_up=str(data.get("runner_up") or ""),
        n_items=int(data.get("n_items") or 0),
        n_queries=int(data.get("n_queries") or 0),
        difference=finite_number(data.get("difference")),
        half_width=finite_number(data.get("half_width")),
        separated=bool(data.get("separated")),
        needed_items=_count(data.get("needed_items")),
        needed_queries=_count(data.get("needed_queries")),
        more_items=finite_number(data.get("more_items")),
        usd=finite_number(data.get("usd")),
    )


def _count(value: Any) -> int | None:
    number = finite_number(value)
    return None if number is None else math.ceil(number)
