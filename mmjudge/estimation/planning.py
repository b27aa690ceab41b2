"""How many human labels a question needs: a finished sweep taken as a pilot.

Two questions per dataset:

- **κ to ± a half-width.** Each judge's κ interval on the pilot (the report's: a percentile
  interval from resampling whole queries) has half-width ``h₀`` on ``n₀`` items in ``q₀``
  queries. Resampling queries, the interval narrows as one over the square root of the number
  of queries, so new labels are counted as new queries like the pilot's (about ``n₀ / q₀``
  items each): ``q = q₀ · (h₀ / H)²`` queries, ``n = n₀ · (h₀ / H)²`` items, give a half-width of
  about ``H``. More items of the pilot's own queries narrow it less, since items of one query
  share its difficulty. The analytic large-sample standard error of κ (Fleiss, Cohen and
  Everitt, 1969) treats items as independent; the items it asks for are printed beside, and
  the ratio of the two counts is the design effect of the queries.
- **Best against runner-up.** The paired interval of Δκ = κ(best) − κ(runner-up) (the report's
  paired query bootstrap) has half-width ``h₀`` on the ``n₀`` items both graded; it excludes 0
  once its half-width is below ``|Δκ|``, at ``n = n₀ · (h₀ / |Δκ|)²`` items (Δκ taken as the
  pilot's).

Counts are items of the kind the pilot holds; the cost is the extra items (beyond the pilot's)
at the human price per label.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from mmjudge.estimation.next_items import Drawn, draw_next
from mmjudge.metrics import scoring
from mmjudge.metrics.labels import as_labels
from mmjudge.store import SavedRun
from mmjudge.store.plan_file import BudgetPlan, DatasetPlan, JudgePlan, SeparationEntry
from mmjudge.studies.frontier import compare_runs, own_score
from mmjudge.studies.members import human_consensus

Z95 = 1.959963984540054


def kappa_standard_error(reference: Any, judge: Any, grades: Sequence[float]) -> float:
    """Large-sample standard error of unweighted Cohen's κ (Fleiss, Cohen and Everitt,
    1969), items taken as independent; ``nan`` where κ is undefined."""
    x, y = as_labels(reference), as_labels(judge)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = x.size
    scale = np.asarray(sorted(grades), dtype=float)
    if n == 0:
        return math.nan
    i = np.searchsorted(scale, x)
    j = np.searchsorted(scale, y)
    k = scale.size
    table = np.zeros((k, k))
    np.add.at(table, (i, j), 1.0)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    agree = float(np.trace(p))
    chance = float(rows @ cols)
    if chance >= 1.0:
        return math.nan
    kappa = (agree - chance) / (1.0 - chance)
    diagonal = np.diag(p) * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2
    spread = (cols[:, None] + rows[None, :]) ** 2  # (p.i + pj.)² at cell (i, j)
    off = p * spread
    np.fill_diagonal(off, 0.0)
    variance = (
        diagonal.sum() + (1.0 - kappa) ** 2 * off.sum() - (kappa - chance * (1.0 - kappa)) ** 2
    ) / (n * (1.0 - chance) ** 2)
    return math.sqrt(max(variance, 0.0))


def items_for_half_width(n_pilot: int, half_width: float, target: float) -> float:
    """Items for an interval of half-width ``target`` when ``n_pilot`` items gave
    ``half_width`` (widths going as one over the square root of the items)."""
    if not (math.isfinite(half_width) and target > 0 and n_pilot > 0):
        return math.nan
    return n_pilot * (half_width / target) ** 2


def _half(low: float, high: float) -> float:
    return (high - low) / 2.0 if math.isfinite(low) and math.isfinite(high) else math.nan


class KappaPlan(NamedTuple):
    """Labels needed to know one judge's κ to ± the target half-width."""

    judge: str
    n_items: int
    """Pilot items (the judge and the consensus both graded)."""
    n_queries: int
    kappa: float
    half_width: float
    """Half the pilot's 95% interval (query bootstrap, as the report)."""
    analytic_half_width: float
    """1.96 × the analytic standard error on the pilot's items."""
    needed: float
    """Items for the target half-width, from the bootstrap."""
    needed_analytic: float
    """The same from the analytic standard error (items independent)."""
    needed_upper: float = math.nan
    """Items for the target half-width from the pilot's half-width widened for its own
    uncertainty (:func:`pilot_widening`): the plan."""
    reachable_half_width: float = math.nan
    """About the half-width that every item of the pilot's queries would give (``nan``
    when the items there are is unknown): no more labels in the same queries go below it."""
    pool_queries: int | None = None
    """Queries the dataset has (labelled or not), when known."""

    @property
    def design_effect(self) -> float:
        """How many times more items the queries' clustering asks for."""
        return self.needed / self.needed_analytic if self.needed_analytic > 0 else math.nan

    @property
    def queries_needed(self) -> float:
        """Queries of the pilot's size for the target, as planned (``needed_upper``)."""
        if not (math.isfinite(self.needed_upper) and self.n_queries):
            return math.nan
        return math.ceil(self.needed_upper / (self.n_items / self.n_queries))

    def needs_more_queries(self, target: float) -> bool:
        """Whether ``target`` is below what all the items of the pilot's queries reach:
        then only new queries narrow κ's interval enough."""
        return math.isfinite(self.reachable_half_width) and target < self.reachable_half_width


#: The one-sided confidence with which the plan's half-width bounds the pilot's true one.
PILOT_CONFIDENCE = 0.8


def pilot_widening(n_queries: int, confidence: float = PILOT_CONFIDENCE) -> float:
    """How much wider than the pilot's bootstrap half-width to plan with, so that a pilot
    of ``n_queries`` queries asks too few labels in about ``1 − confidence`` of cases.

    A pilot's squared half-width is a variance estimated from its queries, about
    ``σ² χ²_{q−1} / q`` (the bootstrap divides by ``q``, not ``q − 1``): the upper
    ``confidence`` bound of ``σ`` is ``h₀ · √(q / χ²_{q−1}(1 − confidence))``. With 8 queries
    the factor is about 1.45 (twice the items); with 200 about 1.05."""
    from scipy import stats

    if n_queries < 2:
        return math.nan
    return math.sqrt(n_queries / float(stats.chi2.ppf(1 - confidence, n_queries - 1)))


def reachable(half_width: float, analytic: float, n_items: int, items_there: int) -> float:
    """The half-width with every one of ``items_there`` items of the pilot's queries
    labelled: the part of the pilot's squared half-width the analytic (items-independent)
    one explains shrinks with the items, the rest (the queries' own) does not."""
    if not (math.isfinite(half_width) and math.isfinite(analytic) and items_there > 0):
        return math.nan
    between = max(half_width**2 - analytic**2, 0.0)
    within = min(analytic, half_width) ** 2 * n_items / max(items_there, n_items)
    return math.sqrt(between + within)


def plan_kappa(
    judge: str,
    query_ids: Any,
    reference: Any,
    labels: Any,
    grades: Sequence[float],
    target: float,
    *,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    items_there: int | None = None,
    pool_queries: int | None = None,
) -> KappaPlan:
    """One judge's :class:`KappaPlan` from its pilot labels (aligned arrays, ``nan`` = none);
    ``items_there``: the items of the pilot's queries, labelled or not, and ``pool_queries``
    the dataset's queries, when known."""
    score = scoring.score_judge(query_ids, reference, labels, grades, n_boot=n_boot, seed=seed)
    half = _half(score.kappa.low, score.kappa.high)
    se = kappa_standard_error(reference, labels, grades)
    analytic = Z95 * se
    upper = half * pilot_widening(score.n_queries)
    return KappaPlan(
        judge,
        score.n_items,
        score.n_queries,
        score.kappa.estimate,
        half,
        analytic,
        items_for_half_width(score.n_items, half, target),
        items_for_half_width(score.n_items, analytic, target),
        items_for_half_width(score.n_items, upper, target),
        reachable(upper, analytic, score.n_items, items_there or 0),
        pool_queries,
    )


class SeparationPlan(NamedTuple):
    """Labels needed to tell the best judge from the runner-up."""

    best: str
    runner_up: str
    n_items: int
    """Pilot items both judges and the consensus graded."""
    n_queries: int
    difference: float
    """κ(best) − κ(runner-up) on those items."""
    half_width: float
    """Half the paired 95% interval of the difference."""
    needed: float
    """Items for the interval to exclude 0 (``nan`` when the difference is 0)."""

    @property
    def separated(self) -> bool:
        """The pilot already tells them apart."""
        return math.isfinite(self.half_width) and abs(self.difference) > self.half_width


def plan_separation(
    best: str, runner_up: str, found: scoring.PairedComparison | None
) -> SeparationPlan | None:
    """The :class:`SeparationPlan` of a paired comparison (``None`` without one)."""
    if found is None:
        return None
    half = _half(found.low, found.high)
    target = abs(found.difference)
    return SeparationPlan(
        best,
        runner_up,
        found.n_items,
        found.n_queries,
        found.difference,
        half,
        items_for_half_width(found.n_items, half, target) if target > 0 else math.nan,
    )


def extra_labels(needed: float, have: int) -> float:
    """Labels to add to the ``have`` of the pilot (``nan`` when unknown)."""
    return math.nan if not math.isfinite(needed) else max(0.0, math.ceil(needed) - have)


def cost(labels: float, per_label: float | None) -> float | None:
    """The price of ``labels`` human labels, or ``None`` without a price."""
    if per_label is None:
        return None
    return math.nan if not math.isfinite(labels) else labels * per_label


class BudgetSplit(NamedTuple):
    """How to spend a budget on human and judge labels for the narrowest PPI interval of the
    mean grade (``ppi_py.ppi_mean_power``)."""

    human_labels: int
    """Items to label by people (the judge labels them too)."""
    judge_only_labels: int | None
    """Further items only the judge labels (``None``: as many as there are, for a free judge
    and no limit on items)."""
    cost: float
    effective_n: float
    """Human-only labels that would give as narrow an interval."""
    human_only_n: int
    """Human labels the whole budget buys without a judge."""
    correlation: float
    """Correlation of judge and human grades on the pilot (what the split rests on)."""


def budget_split(
    human: Any,
    judge: Any,
    *,
    budget: float,
    cost_per_label: float,
    judge_cost_per_label: float,
    pool: int | None = None,
) -> BudgetSplit:
    """The split of ``budget`` between human labels (``cost_per_label`` each, plus the
    judge's price) and judge-only labels that narrows the mean grade's PPI interval most,
    from the pilot's paired grades; ``pool`` caps all items labelled. A free judge labels
    every item there is (with no cap, the effective sample size is its limit,
    ``n / (1 − ρ²)``)."""
    from mmjudge.estimation.prediction import load_ppi

    x, y = as_labels(human), as_labels(judge)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    human_only = math.floor(budget / cost_per_label + 1e-9)
    if judge_cost_per_label > 0:
        found = load_ppi().ppi_mean_power(
            x, y, cost_Y=cost_per_label, cost_Yhat=judge_cost_per_label, budget=budget, n_max=pool
        )
        return BudgetSplit(
            int(found["n"]),
            int(found["N"]),
            float(found["cost"]),
            float(found["effective_n"]),
            human_only,
            float(found["ppi_corr"]),
        )
    # A free judge: every label bought is a human one, and the judge labels every item
    # (ppi_mean_power's optimum is then unbounded); the effective sample size follows the
    # same formula, at its limit when the items are unlimited.
    rho = min(float(np.corrcoef(x, y)[0, 1]), 1 - 1 / x.size) if x.size > 1 else 0.0
    shrink = 1 - (0.0 if math.isnan(rho) else rho) ** 2
    n = human_only if pool is None else min(human_only, pool)
    if pool is None:
        return BudgetSplit(n, None, n * cost_per_label, n / shrink, human_only, rho)
    rest = pool - n
    effective = n * (n + rest) / (n + shrink * rest) if n else 0.0
    return BudgetSplit(n, rest, n * cost_per_label, effective, human_only, rho)


def _single_scores(runs: Sequence[SavedRun], seed: int) -> list[tuple[float, SavedRun]]:
    """Each single judge's κ on its own items (no interval), highest first (ties: cheaper)."""
    scored = []
    for run in runs:
        if run.kind != "single":
            continue
        value = own_score(run, n_boot=0, seed=seed, level=scoring.LEVEL).kappa.estimate
        if not math.isnan(value):
            scored.append((value, run))
    return sorted(scored, key=lambda pair: (-pair[0], pair[1].usd_per_million, pair[1].name))


def _number(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _ceil(value: float) -> int | None:
    return math.ceil(value) if math.isfinite(value) else None


def _kappa_entry(
    run: SavedRun, found: KappaPlan, per_label: float | None, target: float
) -> JudgePlan:
    extra = extra_labels(found.needed_upper, found.n_items)
    per_query = found.n_items / found.n_queries if found.n_queries else math.nan
    queries = _number(found.queries_needed)
    return JudgePlan(
        judge=run.name,
        usd_per_million=run.usd_per_million,
        n_items=found.n_items,
        n_queries=found.n_queries,
        kappa=_number(found.kappa),
        half_width=_number(found.half_width),
        analytic_half_width=_number(found.analytic_half_width),
        needed_items=_ceil(found.needed_upper),
        needed_queries=None if queries is None else int(queries),
        needed_items_central=_ceil(found.needed),
        needed_queries_central=_ceil(found.needed / per_query),
        pilot_widening=_number(pilot_widening(found.n_queries)),
        reachable_half_width=_number(found.reachable_half_width),
        needs_more_queries=found.needs_more_queries(target),
        pool_queries=found.pool_queries,
        needed_items_analytic=_ceil(found.needed_analytic),
        design_effect=_number(found.design_effect),
        more_items=_number(extra),
        usd=_number(cost(extra, per_label)),
    )


def _separation_entry(found: SeparationPlan, per_label: float | None) -> SeparationEntry:
    extra = extra_labels(found.needed, found.n_items)
    per_query = found.n_items / found.n_queries if found.n_queries else math.nan
    return SeparationEntry(
        best=found.best,
        runner_up=found.runner_up,
        n_items=found.n_items,
        n_queries=found.n_queries,
        difference=_number(found.difference),
        half_width=_number(found.half_width),
        separated=found.separated,
        needed_items=_ceil(found.needed),
        needed_queries=_ceil(found.needed / per_query),
        more_items=_number(extra),
        usd=_number(cost(extra, per_label)),
    )


class PlanSettings(NamedTuple):
    """What :func:`plan_sweep` plans for."""

    half_width: float
    cost_per_label: float | None
    budget: float | None
    pool: int | None
    n_boot: int
    seed: int


def _judge_entry(run: SavedRun, settings: PlanSettings) -> JudgePlan:
    """One judge's labels for κ to ± the half-width, and its budget split when asked."""
    keys = list(run.rows)
    reference = human_consensus([run], keys)
    labels = run.labels(keys)
    graded = ~(np.isnan(as_labels(reference)) | np.isnan(as_labels(labels)))
    pilot_queries = {key[0] for key, done in zip(keys, graded, strict=True) if done}
    found = plan_kappa(
        run.name,
        np.array([key[0] for key in keys], dtype=object),
        reference,
        labels,
        run.grades,
        settings.half_width,
        n_boot=settings.n_boot,
        seed=settings.seed,
        items_there=sum(key[0] in pilot_queries for key in keys),
        pool_queries=len({key[0] for key in keys}),
    )
    entry = _kappa_entry(run, found, settings.cost_per_label, settings.half_width)
    if settings.budget is not None and settings.cost_per_label is not None:
        split = budget_split(
            reference,
            labels,
            budget=settings.budget,
            cost_per_label=settings.cost_per_label,
            judge_cost_per_label=run.usd_per_million / 1e6,
            pool=settings.pool,
        )
        entry = dataclasses.replace(
            entry,
            budget_split=BudgetPlan(
                human_labels=split.human_labels,
                judge_only_labels=split.judge_only_labels,
                cost=_number(split.cost),
                effective_n=_number(split.effective_n),
                human_only_n=split.human_only_n,
                correlation=_number(split.correlation),
            ),
        )
    return entry


def _separation(ranked: Sequence[SavedRun], settings: PlanSettings) -> SeparationEntry | None:
    """The best judge against the runner-up, when there are two."""
    if len(ranked) < 2:
        return None
    best, runner = ranked[0], ranked[1]
    compared = compare_runs(
        best, runner, n_boot=settings.n_boot, seed=settings.seed, level=scoring.LEVEL
    )
    found = plan_separation(best.name, runner.name, compared)
    return None if found is None else _separation_entry(found, settings.cost_per_label)


def plan_sweep(
    runs: Sequence[SavedRun],
    *,
    half_width: float = 0.05,
    cost_per_label: float | None = None,
    budget: float | None = None,
    pool: int | None = None,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
) -> list[DatasetPlan]:
    """Per dataset of a sweep's completed runs: labels for each single judge's κ to
    ± ``half_width`` and to separate the best judge from the runner-up (see the module
    docstring), with their cost at ``cost_per_label`` dollars when given, and with
    ``budget`` its split between human and judge labels (:func:`budget_split`)."""
    settings = PlanSettings(half_width, cost_per_label, budget, pool, n_boot, seed)
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    out = []
    for dataset in sorted(by_dataset):
        ranked = [run for _, run in _single_scores(by_dataset[dataset], seed)]
        if not ranked:
            continue
        out.append(
            DatasetPlan(
                dataset=dataset,
                target_half_width=half_width,
                cost_per_label=cost_per_label,
                budget=budget,
                judges=tuple(_judge_entry(run, settings) for run in ranked),
                separation=_separation(ranked, settings),
                n_boot=n_boot,
                seed=seed,
            )
        )
    return out


def draw_unlabelled(runs: Sequence[SavedRun], n: int, seed: int) -> dict[str, Drawn]:
    """Per dataset: ``n`` of the items its single judges graded and no person has, drawn by
    :func:`mmjudge.estimation.next_items.draw_next` (fewer when fewer are unlabelled)."""
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        if run.kind == "single":
            by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    out = {}
    for dataset in sorted(by_dataset):
        group = by_dataset[dataset]
        keys = sorted({key for run in group for key in run.rows})
        consensus = human_consensus(group, keys)
        pool = [key for key, grade in zip(keys, consensus, strict=True) if grade != grade]
        if not pool:
            continue
        grades = np.column_stack([run.labels(pool) for run in group])
        out[dataset] = draw_next(pool, grades, min(n, len(pool)), seed)
    return out
