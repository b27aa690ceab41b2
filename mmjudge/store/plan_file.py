"""``mmjudge plan --format json``: the human labels each dataset of a sweep needs
(:class:`LabelPlan`), as the planner works them out (:mod:`mmjudge.estimation.planning`).
:func:`plan_json` is its one writer (the command prints it; a user keeps it as a file) and
:func:`read_plan` its one reader; the table the command prints reads the records.

Every figure a plan cannot give (an undefined κ, a count that would take no number of labels)
is null. A count is a whole number of labels or queries; ``more_items`` may be written ``0.0``.
A dataset, judge, pair or budget split whose pilot is too small to plan from has the same keys
as a planned one: ``too_small`` holds the one line that says why (null when planned), and its
figures are null.

Layout versions (``schema_version``):

1. κ's and Δκ's ``half_width`` from the report's query bootstrap. Plans printed before the
   version key existed lack it and read the same. A version-1 plan reads with that
   half-width also as ``bootstrap_half_width`` (it was the bootstrap's), the jackknife's
   figures, ``too_small`` and ``plan_confidence`` null.
2. ``half_width`` from the jackknife over queries (t on their effective degrees of freedom),
   with its ``standard_error`` and ``degrees_of_freedom``, and the bootstrap's beside it as
   ``bootstrap_half_width``; ``too_small`` on a dataset, judge, pair and budget split (a
   refused judge's or pair's ``n_items`` and ``n_queries`` null); the plan's
   ``plan_confidence``; the pair's ``needed_items_central`` and ``needed_queries_central``.
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

#: The layout's version (see the module docstring); version 1 still reads.
PLAN_SCHEMA_VERSION = 2


@dataclass(frozen=True)
class BudgetPlan:
    """How to spend a budget on human and judge labels for the narrowest interval of the
    mean grade (:func:`mmjudge.estimation.budget.budget_split`)."""

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
    too_small: str | None
    """Why the pilot is too small to split a budget by (None: split)."""


@dataclass(frozen=True)
class JudgePlan:
    """One judge: the labels to know its κ to ± the target half-width, and their cost."""

    judge: str
    """The judge's cell (``model/prompt/modality``)."""
    usd_per_million: float
    """Its dollars per million judgments."""
    too_small: str | None
    """Why its pilot is too small to plan from (None: planned; else its figures are None)."""
    n_items: int | None
    """Pilot items (the judge and the consensus both graded)."""
    n_queries: int | None
    """Queries of the pilot items."""
    kappa: float | None
    """κ on the pilot."""
    standard_error: float | None
    """κ's jackknife standard error over the pilot's queries."""
    degrees_of_freedom: float | None
    """Of that standard error: the queries' effective number less one."""
    half_width: float | None
    """Half the pilot's 95% interval of κ that the plan starts from (jackknife, t)."""
    bootstrap_half_width: float | None
    """Half the report's interval of κ (percentile, query bootstrap), for comparison."""
    analytic_half_width: float | None
    """1.96 × κ's analytic standard error on the pilot's items."""
    needed_items: int | None
    """Items for the target, from the pilot's spread widened to its upper bound (the plan)."""
    needed_queries: int | None
    """Queries of the pilot's size for the target, as planned."""
    needed_items_central: int | None
    """Items for the target from the pilot's spread as it is."""
    needed_queries_central: int | None
    """Queries for that."""
    pilot_widening: float | None
    """The spread's upper bound over the spread itself (the factor the plan widens by)."""
    reachable_half_width: float | None
    """About the half-width every item of the pilot's queries would give (central)."""
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
    too_small: str | None
    """Why their shared pilot is too small to plan from (None: planned)."""
    n_items: int | None
    """Pilot items both judges and the consensus graded."""
    n_queries: int | None
    """Their queries."""
    difference: float | None
    """κ(best) − κ(runner-up) on those items."""
    standard_error: float | None
    """The difference's paired jackknife standard error over the queries."""
    degrees_of_freedom: float | None
    """Of that standard error: the queries' effective number less one."""
    half_width: float | None
    """Half the paired 95% interval of the difference (jackknife, t; None: no width)."""
    bootstrap_half_width: float | None
    """Half the report's paired query-bootstrap interval, for comparison."""
    separated: bool
    """The pilot already tells them apart."""
    needed_items: int | None
    """Items for the interval to exclude 0, from the spread's upper bound (None: Δκ is 0)."""
    needed_queries: int | None
    """Queries for that."""
    needed_items_central: int | None
    """Items for that from the pilot's spread as it is."""
    needed_queries_central: int | None
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
    too_small: str | None
    """Why its human labels are too small a pilot to plan from (None: planned)."""
    target_half_width: float
    """The half-width of κ's 95% interval planned for (written ``half_width``)."""
    plan_confidence: float | None
    """Confidence of the bound on the pilot's spread the counts come from (None: version 1)."""
    cost_per_label: float | None
    """What one human label costs (None: not given)."""
    budget: float | None
    """The budget to split (None: not given)."""
    judges: tuple[JudgePlan, ...]
    """Each single judge with a κ, highest κ first (none when the dataset is too small)."""
    separation: SeparationEntry | None
    """The best against the runner-up (None with fewer than two judges planned)."""
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
    first = (version or 1) == 1
    datasets = data.get("datasets") or []
    return LabelPlan(tuple(_dataset(d, first) for d in datasets if isinstance(d, dict)))


# --------------------------------------------------------------------------- the layout


def _dataset_layout(plan: DatasetPlan) -> dict[str, Any]:
    return {
        "dataset": plan.dataset,
        "too_small": plan.too_small,
        "half_width": plan.target_half_width,
        "plan_confidence": plan.plan_confidence,
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


def _dataset(data: Mapping[str, Any], first: bool) -> DatasetPlan:
    """A dataset's plan; ``first``: of the version-1 layout."""
    separation = data.get("separation")
    return DatasetPlan(
        dataset=str(data.get("dataset") or ""),
        too_small=_text(data.get("too_small")),
        target_half_width=float(data.get("half_width") or 0.0),
        plan_confidence=finite_number(data.get("plan_confidence")),
        cost_per_label=finite_number(data.get("cost_per_label")),
        budget=finite_number(data.get("budget")),
        judges=tuple(_judge(j, first) for j in data.get("judges") or [] if isinstance(j, dict)),
        separation=_separation(separation, first) if isinstance(separation, dict) else None,
        n_boot=int(data.get("n_boot") or 0),
        seed=int(data.get("seed") or 0),
    )


def _judge(data: Mapping[str, Any], first: bool) -> JudgePlan:
    split = data.get("budget_split")
    half_width = finite_number(data.get("half_width"))
    return JudgePlan(
        judge=str(data.get("judge") or ""),
        usd_per_million=float(data.get("usd_per_million") or 0.0),
        too_small=_text(data.get("too_small")),
        n_items=_count(data.get("n_items")),
        n_queries=_count(data.get("n_queries")),
        kappa=finite_number(data.get("kappa")),
        standard_error=finite_number(data.get("standard_error")),
        degrees_of_freedom=finite_number(data.get("degrees_of_freedom")),
        half_width=half_width,
        bootstrap_half_width=_bootstrap_half_width(data, half_width, first),
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
        too_small=_text(data.get("too_small")),
    )


def _separation(data: Mapping[str, Any], first: bool) -> SeparationEntry:
    half_width = finite_number(data.get("half_width"))
    return SeparationEntry(
        best=str(data.get("best") or ""),
        runner_up=str(data.get("runner_up") or ""),
        too_small=_text(data.get("too_small")),
        n_items=_count(data.get("n_items")),
        n_queries=_count(data.get("n_queries")),
        difference=finite_number(data.get("difference")),
        standard_error=finite_number(data.get("standard_error")),
        degrees_of_freedom=finite_number(data.get("degrees_of_freedom")),
        half_width=half_width,
        bootstrap_half_width=_bootstrap_half_width(data, half_width, first),
        separated=bool(data.get("separated")),
        needed_items=_count(data.get("needed_items")),
        needed_queries=_count(data.get("needed_queries")),
        needed_items_central=_count(data.get("needed_items_central")),
        needed_queries_central=_count(data.get("needed_queries_central")),
        more_items=finite_number(data.get("more_items")),
        usd=finite_number(data.get("usd")),
    )


def _bootstrap_half_width(
    data: Mapping[str, Any], half_width: float | None, first: bool
) -> float | None:
    """The query bootstrap's half-width: a version-1 plan's ``half_width`` was it."""
    return half_width if first else finite_number(data.get("bootstrap_half_width"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any) -> int | None:
    number = finite_number(value)
    return None if number is None else math.ceil(number)
