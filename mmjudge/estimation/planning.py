"""How many human labels a question needs: a finished sweep taken as a pilot.

Two questions per dataset:

- **κ to ± a half-width.** Each judge's κ on the pilot has an interval from the jackknife
  over its ``q₀`` queries, with Student's t on the queries' effective degrees of freedom
  (:mod:`mmjudge.metrics.jackknife`): half-width ``h₀ = t · SE`` on ``n₀`` items. New labels
  are counted as new queries like the pilot's (about ``n₀ / q₀`` items each), since more
  items of the pilot's own queries narrow the interval less (items of one query share its
  difficulty). The plan is the fewest queries whose interval is ``± H`` at most, from the
  per-query spread ``SE · √q₀`` widened to its upper 95% bound (a small pilot's spread is
  itself uncertain; :mod:`mmjudge.estimation.pilot`); the count from the spread itself
  (``central``) is beside it. The analytic large-sample standard error of κ (Fleiss, Cohen
  and Everitt, 1969) treats items as independent; the items it asks for are printed beside,
  and the ratio of the two variances is the design effect of the queries.
- **Best against runner-up.** The paired jackknife interval of Δκ = κ(best) − κ(runner-up)
  on the items both graded excludes 0 once its half-width is below ``|Δκ|``: the plan is the
  fewest queries for that, widened alike (Δκ taken as the pilot's).

A pilot too small to plan from (too few queries or labels, human grades that do not vary, a
spread of zero) is refused in one line that says what pilot would do. Counts are items of
the kind the pilot holds; the cost is the extra items (beyond the pilot's) at the human
price per label.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from mmjudge.estimation import pilot
from mmjudge.estimation.budget import budget_split
from mmjudge.estimation.next_items import Drawn, draw_next
from mmjudge.metrics import scoring
from mmjudge.metrics.jackknife import kappa_jackknife, paired_kappa_jackknife
from mmjudge.metrics.kappa import kappa_metric
from mmjudge.metrics.labels import as_labels
from mmjudge.metrics.resampling import bootstrap_ci
from mmjudge.store import SavedRun, common_keys, union_keys
from mmjudge.store.plan_file import BudgetPlan, DatasetPlan, JudgePlan, SeparationEntry
from mmjudge.studies.members import human_consensus
from mmjudge.studies.reference_grades import compare_runs, own_score

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


def _scored(
    scale: Sequence[float], query_ids: Any, *arrays: Any
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The query ids and label arrays on the items every array graded on the scale."""
    labels = [as_labels(a) for a in arrays]
    keep, _ = scoring.scored_items(np.asarray(scale, dtype=float), *labels)
    return np.asarray(query_ids, dtype=object)[keep], [a[keep] for a in labels]


class KappaPlan(NamedTuple):
    """Labels needed to know one judge's κ to ± the target half-width."""

    judge: str
    """The judge (its run's name)."""
    n_items: int
    """Pilot items (the judge and the consensus both graded)."""
    n_queries: int
    """Queries among them."""
    kappa: float
    """κ on the pilot."""
    standard_error: float
    """κ's jackknife standard error over the pilot's queries."""
    degrees_of_freedom: float
    """Of that standard error: the queries' effective number less one."""
    half_width: float
    """Half the pilot's 95% interval (jackknife over queries, t on its degrees of freedom)."""
    bootstrap_half_width: float
    """Half the report's interval (percentile, query bootstrap) on the same items, for
    comparison (``nan`` without resamples)."""
    analytic_half_width: float
    """1.96 × the analytic standard error on the pilot's items."""
    needed: float
    """Items for the target half-width from the pilot's own spread (``central``)."""
    needed_analytic: float
    """The same from the analytic standard error (items independent)."""
    needed_upper: float
    """Items for the target half-width from the spread's upper bound (the plan)."""
    widening: float
    """That bound over the pilot's own spread (:func:`pilot.pilot_widening`)."""
    reachable_half_width: float
    """About the half-width that every item of the pilot's queries would give, from the
    central spread (``nan`` when the items there are is unknown): no more labels in the same
    queries go below it."""
    pool_queries: int | None = None
    """Queries the dataset has (labelled or not), when known."""

    @property
    def design_effect(self) -> float:
        """How many times more items the queries' clustering asks for: the jackknife
        variance over the analytic (items-independent) one."""
        analytic = self.analytic_half_width / Z95
        return (self.standard_error / analytic) ** 2 if analytic > 0 else math.nan

    @property
    def queries_needed(self) -> float:
        """Queries of the pilot's size for the target, as planned (``needed_upper``)."""
        if not (math.isfinite(self.needed_upper) and self.n_queries):
            return math.nan
        return math.ceil(self.needed_upper / (self.n_items / self.n_queries) - 1e-9)

    def needs_more_queries(self, target: float) -> bool:
        """Whether ``target`` is below what all the items of the pilot's queries reach:
        then only new queries narrow κ's interval enough."""
        return math.isfinite(self.reachable_half_width) and target < self.reachable_half_width


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
    confidence: float = pilot.PLAN_CONFIDENCE,
) -> KappaPlan:
    """One judge's :class:`KappaPlan` from its pilot labels (aligned arrays, ``nan`` = none);
    ``items_there``: the items of the pilot's queries, labelled or not, and ``pool_queries``
    the dataset's queries, when known. A pilot too small to plan from raises
    :class:`pilot.PilotTooSmall`."""
    queries, (x, y) = _scored(grades, query_ids, reference, labels)
    problem = pilot.pilot_problem(queries, x, y)
    if problem is not None:
        raise pilot.PilotTooSmall(problem)
    spread = pilot.spread_of(kappa_jackknife(queries, x, y, grades), "κ")
    boot = math.nan
    if n_boot > 0:
        found = bootstrap_ci(kappa_metric(grades), queries, x, y, n_boot=n_boot, seed=seed)
        boot = _half(found.low, found.high)
    analytic = kappa_standard_error(x, y, grades)
    widening = pilot.pilot_widening(spread.degrees_of_freedom, confidence)
    per_query = spread.items_per_query
    return KappaPlan(
        judge,
        spread.n_items,
        spread.n_queries,
        spread.estimate,
        spread.standard_error,
        spread.degrees_of_freedom,
        spread.half_width,
        boot,
        Z95 * analytic,
        pilot.queries_for_half_width(spread, target) * per_query,
        items_for_half_width(spread.n_items, Z95 * analytic, target),
        pilot.queries_for_half_width(spread, target, widening) * per_query,
        widening,
        pilot.reachable(spread, analytic, items_there or 0),
        pool_queries,
    )


class SeparationPlan(NamedTuple):
    """Labels needed to tell the best judge from the runner-up."""

    best: str
    """The judge with the higher κ on the pilot."""
    runner_up: str
    """The judge with the next highest."""
    n_items: int
    """Pilot items both judges and the consensus graded."""
    n_queries: int
    """Queries among them."""
    difference: float
    """κ(best) − κ(runner-up) on those items."""
    half_width: float
    """Half the paired 95% interval of the difference."""
    needed: float
    """Items for the interval to exclude 0 from the pilot's own spread (``nan`` when the
    difference is 0)."""
    needed_upper: float = math.nan
    """The same from the spread's upper bound (the plan; ``nan`` from a bootstrap
    comparison, which has no bound)."""
    standard_error: float = math.nan
    """The difference's jackknife standard error (``nan`` from a bootstrap comparison)."""
    degrees_of_freedom: float = math.nan
    """Of that standard error."""
    bootstrap_half_width: float = math.nan
    """Half the report's paired bootstrap interval, for comparison."""

    @property
    def separated(self) -> bool:
        """The pilot already tells them apart (an interval of some width that excludes 0)."""
        return (
            math.isfinite(self.half_width)
            and self.half_width > 0
            and abs(self.difference) > self.half_width
        )


def plan_separation(
    best: str, runner_up: str, found: scoring.PairedComparison | None
) -> SeparationPlan | None:
    """The :class:`SeparationPlan` of a paired bootstrap comparison (the report's); ``None``
    without one, or when its interval has no width around a difference that is not 0
    (every resample alike, as from a single query: it says nothing about the judges)."""
    if found is None:
        return None
    half = _half(found.low, found.high)
    if found.difference != 0 and not half > 0:
        return None
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


def plan_separation_clustered(
    best: str,
    runner_up: str,
    query_ids: Any,
    reference: Any,
    labels_best: Any,
    labels_runner_up: Any,
    grades: Sequence[float],
    *,
    bootstrap_half_width: float = math.nan,
    confidence: float = pilot.PLAN_CONFIDENCE,
) -> SeparationPlan:
    """The :class:`SeparationPlan` from the paired jackknife over queries on the items both
    judges and the reference graded, planned from the spread's upper ``confidence`` bound.
    Two judges that gave every shared item the same grade get a difference of 0 and no
    interval (no number of labels tells them apart); a pilot too small to plan from raises
    :class:`pilot.PilotTooSmall`."""
    queries, (x, a, b) = _scored(grades, query_ids, reference, labels_best, labels_runner_up)
    problem = pilot.pilot_problem(queries, x)
    if problem is not None:
        raise pilot.PilotTooSmall(problem)
    found = paired_kappa_jackknife(queries, x, a, b, grades)
    if np.array_equal(a, b):
        nan = math.nan
        return SeparationPlan(
            best,
            runner_up,
            found.n_items,
            found.n_queries,
            0.0,
            nan,
            nan,
            nan,
            0.0,
            found.degrees_of_freedom,
            bootstrap_half_width,
        )
    spread = pilot.spread_of(found, "Δκ")
    target = abs(spread.estimate)
    widening = pilot.pilot_widening(spread.degrees_of_freedom, confidence)
    per_query = spread.items_per_query
    return SeparationPlan(
        best,
        runner_up,
        spread.n_items,
        spread.n_queries,
        spread.estimate,
        spread.half_width,
        pilot.queries_for_half_width(spread, target) * per_query,
        pilot.queries_for_half_width(spread, target, widening) * per_query,
        spread.standard_error,
        spread.degrees_of_freedom,
        bootstrap_half_width,
    )


def extra_labels(needed: float, have: int) -> float:
    """Labels to add to the ``have`` of the pilot (``nan`` when unknown)."""
    return math.nan if not math.isfinite(needed) else max(0.0, math.ceil(needed - 1e-9) - have)


def cost(labels: float, per_label: float | None) -> float | None:
    """The price of ``labels`` human labels, or ``None`` without a price."""
    if per_label is None:
        return None
    return math.nan if not math.isfinite(labels) else labels * per_label


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
    return math.ceil(value - 1e-9) if math.isfinite(value) else None


def _kappa_entry(
    run: SavedRun, found: KappaPlan, per_label: float | None, target: float
) -> JudgePlan:
    extra = extra_labels(found.needed_upper, found.n_items)
    per_query = found.n_items / found.n_queries
    queries = _number(found.queries_needed)
    return JudgePlan(
        judge=run.name,
        usd_per_million=run.usd_per_million,
        too_small=None,
        n_items=found.n_items,
        n_queries=found.n_queries,
        kappa=_number(found.kappa),
        standard_error=_number(found.standard_error),
        degrees_of_freedom=_number(found.degrees_of_freedom),
        half_width=_number(found.half_width),
        bootstrap_half_width=_number(found.bootstrap_half_width),
        analytic_half_width=_number(found.analytic_half_width),
        needed_items=_ceil(found.needed_upper),
        needed_queries=None if queries is None else int(queries),
        needed_items_central=_ceil(found.needed),
        needed_queries_central=_ceil(found.needed / per_query),
        pilot_widening=_number(found.widening),
        reachable_half_width=_number(found.reachable_half_width),
        needs_more_queries=found.needs_more_queries(target),
        pool_queries=found.pool_queries,
        needed_items_analytic=_ceil(found.needed_analytic),
        design_effect=_number(found.design_effect),
        more_items=_number(extra),
        usd=_number(cost(extra, per_label)),
    )


def _refused_judge(run: SavedRun, why: str) -> JudgePlan:
    """A judge whose pilot is too small to plan from: its name, its price and why, and no
    figure (the same fields as a planned one)."""
    return JudgePlan(
        judge=run.name,
        usd_per_million=run.usd_per_million,
        too_small=why,
        n_items=None,
        n_queries=None,
        kappa=None,
        standard_error=None,
        degrees_of_freedom=None,
        half_width=None,
        bootstrap_half_width=None,
        analytic_half_width=None,
        needed_items=None,
        needed_queries=None,
        needed_items_central=None,
        needed_queries_central=None,
        pilot_widening=None,
        reachable_half_width=None,
        needs_more_queries=False,
        pool_queries=None,
        needed_items_analytic=None,
        design_effect=None,
        more_items=None,
        usd=None,
    )


def _separation_entry(found: SeparationPlan, per_label: float | None) -> SeparationEntry:
    extra = extra_labels(found.needed_upper, found.n_items)
    per_query = found.n_items / found.n_queries
    return SeparationEntry(
        best=found.best,
        runner_up=found.runner_up,
        too_small=None,
        n_items=found.n_items,
        n_queries=found.n_queries,
        difference=_number(found.difference),
        standard_error=_number(found.standard_error),
        degrees_of_freedom=_number(found.degrees_of_freedom),
        half_width=_number(found.half_width),
        bootstrap_half_width=_number(found.bootstrap_half_width),
        separated=found.separated,
        needed_items=_ceil(found.needed_upper),
        needed_queries=_ceil(found.needed_upper / per_query),
        needed_items_central=_ceil(found.needed),
        needed_queries_central=_ceil(found.needed / per_query),
        more_items=_number(extra),
        usd=_number(cost(extra, per_label)),
    )


def _refused_pair(best: SavedRun, runner_up: SavedRun, why: str) -> SeparationEntry:
    """A pair whose shared pilot is too small to plan from: their names and why."""
    return SeparationEntry(
        best=best.name,
        runner_up=runner_up.name,
        too_small=why,
        n_items=None,
        n_queries=None,
        difference=None,
        standard_error=None,
        degrees_of_freedom=None,
        half_width=None,
        bootstrap_half_width=None,
        separated=False,
        needed_items=None,
        needed_queries=None,
        needed_items_central=None,
        needed_queries_central=None,
        more_items=None,
        usd=None,
    )


class PlanSettings(NamedTuple):
    """What :func:`plan_sweep` plans for."""

    half_width: float
    """The target half-width of κ's 95% interval."""
    cost_per_label: float | None
    """Dollars per human label, when given."""
    budget: float | None
    """Dollars to split between human and judge labels, when given."""
    pool: int | None
    """Items there are to label at most, for the split."""
    n_boot: int
    """Resamples of the report's bootstrap intervals shown beside."""
    seed: int
    """Their seed."""


def _judge_entry(run: SavedRun, settings: PlanSettings) -> JudgePlan:
    """One judge's labels for κ to ± the half-width, and its budget split when asked (a
    pilot too small for this judge gives a plan of unknowns that says why)."""
    keys = list(run.rows)
    reference = human_consensus([run], keys)
    labels = run.labels(keys)
    graded = ~(np.isnan(as_labels(reference)) | np.isnan(as_labels(labels)))
    pilot_queries = {key[0] for key, done in zip(keys, graded, strict=True) if done}
    try:
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
    except pilot.PilotTooSmall as small:
        return _refused_judge(run, str(small))
    entry = _kappa_entry(run, found, settings.cost_per_label, settings.half_width)
    if settings.budget is not None and settings.cost_per_label is not None:
        entry = dataclasses.replace(
            entry, budget_split=_split_entry(reference, labels, run, settings)
        )
    return entry


def _split_entry(reference: Any, labels: Any, run: SavedRun, settings: PlanSettings) -> BudgetPlan:
    """The budget split's numbers, or why there is none (``too_small``)."""
    assert settings.budget is not None and settings.cost_per_label is not None
    try:
        split = budget_split(
            reference,
            labels,
            budget=settings.budget,
            cost_per_label=settings.cost_per_label,
            judge_cost_per_label=run.usd_per_million / 1e6,
            pool=settings.pool,
        )
    except pilot.PilotTooSmall as small:
        return BudgetPlan(
            human_labels=None,
            judge_only_labels=None,
            cost=None,
            effective_n=None,
            human_only_n=None,
            correlation=None,
            too_small=str(small),
        )
    return BudgetPlan(
        human_labels=split.human_labels,
        judge_only_labels=split.judge_only_labels,
        cost=_number(split.cost),
        effective_n=_number(split.effective_n),
        human_only_n=split.human_only_n,
        correlation=_number(split.correlation),
        too_small=None,
    )


def _separation(ranked: Sequence[SavedRun], settings: PlanSettings) -> SeparationEntry | None:
    """The best judge against the runner-up, when there are two."""
    if len(ranked) < 2:
        return None
    best, runner = ranked[0], ranked[1]
    keys = common_keys([best, runner])
    compared = compare_runs(
        best, runner, n_boot=settings.n_boot, seed=settings.seed, level=scoring.LEVEL
    )
    boot = math.nan if compared is None else _half(compared.low, compared.high)
    try:
        found = plan_separation_clustered(
            best.name,
            runner.name,
            np.array([key[0] for key in keys], dtype=object),
            human_consensus([best, runner], keys),
            best.labels(keys),
            runner.labels(keys),
            best.grades,
            bootstrap_half_width=boot,
        )
    except pilot.PilotTooSmall as small:
        return _refused_pair(best, runner, str(small))
    return _separation_entry(found, settings.cost_per_label)


def _dataset_problem(group: Sequence[SavedRun]) -> str | None:
    """Why the human labels of a dataset's judges are too small a pilot (``None``: not)."""
    keys = union_keys(group)
    consensus = human_consensus(group, keys)
    return pilot.pilot_problem(np.array([key[0] for key in keys], dtype=object), consensus)


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
    ``budget`` its split between human and judge labels (:func:`budget_split`). A dataset
    (or a judge, or the pair) whose pilot is too small to plan from has ``too_small``: the
    one line that says why and what pilot would do, and no plan."""
    settings = PlanSettings(half_width, cost_per_label, budget, pool, n_boot, seed)
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    out = []
    for dataset in sorted(by_dataset):
        ranked = [run for _, run in _single_scores(by_dataset[dataset], seed)]
        if not ranked:
            continue
        too_small = _dataset_problem(ranked)
        judges = [] if too_small else [_judge_entry(run, settings) for run in ranked]
        ok = {j.judge for j in judges if j.too_small is None}
        planned = [run for run in ranked if run.name in ok]
        out.append(
            DatasetPlan(
                dataset=dataset,
                too_small=too_small,
                target_half_width=half_width,
                plan_confidence=pilot.PLAN_CONFIDENCE,
                cost_per_label=cost_per_label,
                budget=budget,
                judges=tuple(judges),
                separation=_separation(planned, settings),
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
