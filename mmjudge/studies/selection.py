"""What choosing a prompt (or model × prompt) by κ costs, measured on queries it was not chosen
on: random query splits, the winner on one half scored on the other (optimism, regret, wins
over a baseline, how often each candidate is chosen). The command is ``mmjudge select``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from mmjudge.errors import MMJudgeError
from mmjudge.store import SavedRun, common_scored_keys
from mmjudge.studies.frontier import HumanCeiling, human_ceiling
from mmjudge.studies.members import human_consensus

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class BaselineResult:
    """How choosing by κ fares against always taking the baseline candidate."""

    name: str
    """The baseline's name (``model/prompt/modality``)."""
    beaten_rate: float
    """Share of splits whose chosen candidate is another one with a higher held-out κ."""
    chosen_rate: float
    """Share of splits in which the baseline itself was chosen."""
    mean_gain: float | None
    """Mean held-out κ of the chosen candidate minus the baseline's (None when undefined)."""


@dataclass(frozen=True)
class CandidateResult:
    """One candidate: how often it was chosen and its κ then."""

    name: str
    """The candidate's name (``model/prompt/modality``)."""
    run_dir: str
    """Its run folder."""
    chosen_rate: float
    """Share of splits in which it was chosen."""
    held_out_kappa_when_chosen: float | None
    """Its mean κ on the held-out half over the splits that chose it (None if never)."""
    selection_kappa_when_chosen: float | None
    """Its mean κ on the half it was chosen on, over those splits (None if never)."""
    mean_half_kappa: float | None
    """Its mean κ on a random half, whether chosen or not."""


@dataclass(frozen=True)
class SelectionStudy:
    """The held-out evaluation of choosing among one dataset's candidates by κ on half of the
    queries (the fields are the keys of ``mmjudge select --format json``)."""

    dataset: str
    """The dataset the candidates judged."""
    n_candidates: int
    """Candidates chosen among."""
    n_items: int
    """Items every candidate judged that have a human grade."""
    n_queries: int
    """Queries among those items (what the halvings split)."""
    splits: int
    """Random halvings of the queries."""
    seed: int
    """Seed of the halvings."""
    held_out_kappa: float | None
    """Mean κ of the chosen candidate on the held-out half."""
    held_out_kappa_range: list[float] | None
    """The 5th and 95th percentiles of that κ over the splits."""
    at_chance_rate: float | None
    """Share of splits whose chosen candidate is at or below chance on the held-out half."""
    human_kappa: HumanCeiling | None
    """The lowest and highest κ of one annotator against another (None without two)."""
    selection_kappa: float | None
    """Mean κ of the chosen candidate on the half it was chosen on."""
    optimism: float | None
    """``selection_kappa`` minus ``held_out_kappa``, split by split, averaged."""
    expected_regret: float | None
    """Mean best held-out κ of any candidate minus the chosen one's."""
    baseline: BaselineResult | None
    """Against the baseline candidate (None without one)."""
    candidates: list[CandidateResult]
    """Every candidate, most chosen first."""


def query_tables(
    human: FloatArray, labels: FloatArray, queries: Any, grades: Sequence[float]
) -> tuple[FloatArray, list[Any]]:
    """Per-query contingency tables of one judge against the reference, shape (Q, k, k),
    and the query ids in table order. Items with a missing label are left out."""
    codes, uniques = pd.factorize(np.asarray(queries))
    scale = np.sort(np.asarray(grades, dtype=float))
    k = scale.size

    def position(values: FloatArray) -> npt.NDArray[np.intp]:
        pos = np.clip(np.searchsorted(scale, values), 0, k - 1)
        return np.where(scale[pos] == values, pos, -1)

    h, j = position(human), position(labels)
    keep = (h >= 0) & (j >= 0)  # nan and grades off the scale match no position
    cells = codes[keep] * k * k + h[keep] * k + j[keep]
    counts = np.bincount(cells, minlength=len(uniques) * k * k).astype(np.float64)
    return counts.reshape(len(uniques), k, k), list(uniques)


def kappa_of_tables(tables: FloatArray) -> FloatArray:
    """Unweighted Cohen's κ of each contingency table in a stack (..., k, k); ``nan`` where
    it is undefined (no items, or chance agreement already perfect)."""
    n = tables.sum(axis=(-2, -1))
    observed = np.trace(tables, axis1=-2, axis2=-1)
    expected = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed * n - expected) / (n * n - expected)
    return np.where((n > 0) & (n * n - expected > 0), kappa, math.nan)


def resolve_baseline(runs: Sequence[SavedRun], wanted: str | None) -> int | None:
    """Index of the baseline among ``runs``: by run directory name, by label
    (``model/prompt/modality``), by prompt id, or by model, whichever names exactly one.
    Without ``wanted``: the one run with prompt ``default``, if there is exactly one."""
    if wanted is None:
        found = [i for i, r in enumerate(runs) if r.summary.cell.prompt_id == "default"]
        return found[0] if len(found) == 1 else None
    for field in ("run_dir", "name", "prompt_id", "model"):
        found = [i for i, r in enumerate(runs) if _field(r, field) == wanted]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(runs[i].name for i in found)
            raise MMJudgeError(
                f"--baseline {wanted!r} matches {len(found)} candidates ({names}); "
                "name one run (model/prompt/modality or its directory)"
            )
    names = ", ".join(r.name for r in runs)
    raise MMJudgeError(f"--baseline {wanted!r} matches no candidate; candidates: {names}")


def _field(run: SavedRun, field: str) -> str:
    if field == "run_dir":
        return run.run_dir.name
    if field == "name":
        return run.name
    return str(getattr(run.summary.cell, field))


def selection_study(
    runs: Sequence[SavedRun],
    *,
    baseline: int | None = None,
    splits: int = 200,
    seed: int = 0,
) -> SelectionStudy:
    """The held-out evaluation of choosing among ``runs`` (one dataset) by κ on half of the
    queries; see the module docstring for what is reported."""
    if not runs:
        raise MMJudgeError("no candidates to choose from")
    if splits < 1:
        raise MMJudgeError(f"--splits must be at least 1, got {splits}")
    n_items, per_query = _per_query_tables(runs)
    kappa_a, kappa_b = _half_kappas(per_query, len(runs[0].grades), splits, seed)
    chosen = np.argmax(np.where(np.isnan(kappa_a), -np.inf, kappa_a), axis=1)
    rows = np.arange(splits)
    chosen_a, chosen_b = kappa_a[rows, chosen], kappa_b[rows, chosen]
    best_b = np.nanmax(np.where(np.isnan(kappa_b), -np.inf, kappa_b), axis=1)
    regret = best_b - chosen_b
    return SelectionStudy(
        dataset=runs[0].summary.cell.dataset,
        n_candidates=len(runs),
        n_items=n_items,
        n_queries=per_query.shape[1],
        splits=splits,
        seed=seed,
        held_out_kappa=_mean(chosen_b),
        held_out_kappa_range=_range(chosen_b),
        at_chance_rate=_at_chance_rate(chosen_b),
        human_kappa=human_ceiling(runs[0]),
        selection_kappa=_mean(chosen_a),
        optimism=_mean(chosen_a - chosen_b),
        expected_regret=_mean(regret),
        baseline=None if baseline is None else _baseline(runs, baseline, chosen, kappa_b),
        candidates=_candidates(runs, chosen, kappa_a, kappa_b),
    )


def _per_query_tables(runs: Sequence[SavedRun]) -> tuple[int, FloatArray]:
    """The items every run judged (with a human grade) and, per candidate and query, the
    flattened confusion table (candidates × queries × k²)."""
    grades = runs[0].grades
    keys = common_scored_keys(runs)  # never an item a trained candidate learnt from
    human = human_consensus(runs, keys)
    present = ~np.isnan(human)
    keys = [key for key, ok in zip(keys, present, strict=True) if ok]
    human = human[present]
    queries = np.array([key[0] for key in keys], dtype=object)
    stacks = []
    for run in runs:
        tables, order = query_tables(human, run.labels(keys), queries, grades)
        stacks.append(tables.reshape(len(order), -1))
    n_queries = len(pd.unique(queries))
    if n_queries < 2:
        raise MMJudgeError(
            f"dataset {runs[0].summary.cell.dataset}: {n_queries} query in common; "
            "splitting needs at least two"
        )
    return len(keys), np.stack(stacks)


def _half_kappas(
    per_query: FloatArray, k: int, splits: int, seed: int
) -> tuple[FloatArray, FloatArray]:
    """κ of every candidate on each split's selection half and on its held-out half
    (splits × candidates each)."""
    n_candidates, n_queries = per_query.shape[:2]
    rng = np.random.default_rng(seed)
    half = n_queries // 2
    masks = np.zeros((splits, n_queries))
    for s in range(splits):
        masks[s, rng.permutation(n_queries)[:half]] = 1.0
    in_a = np.einsum("sq,cqm->scm", masks, per_query).reshape(splits, n_candidates, k, k)
    in_b = np.einsum("sq,cqm->scm", 1.0 - masks, per_query).reshape(splits, n_candidates, k, k)
    return kappa_of_tables(in_a), kappa_of_tables(in_b)


def _baseline(
    runs: Sequence[SavedRun], baseline: int, chosen: npt.NDArray[np.intp], kappa_b: FloatArray
) -> BaselineResult:
    """How choosing by κ fares against always taking the baseline candidate."""
    chosen_b = kappa_b[np.arange(len(chosen)), chosen]
    base_b = kappa_b[:, baseline]
    return BaselineResult(
        name=runs[baseline].name,
        beaten_rate=float(np.mean((chosen != baseline) & (chosen_b > base_b))),
        chosen_rate=float(np.mean(chosen == baseline)),
        mean_gain=_mean(chosen_b - base_b),
    )


def _candidates(
    runs: Sequence[SavedRun],
    chosen: npt.NDArray[np.intp],
    kappa_a: FloatArray,
    kappa_b: FloatArray,
) -> list[CandidateResult]:
    """Each candidate: how often it was chosen and its κ then; most chosen first."""
    out: list[CandidateResult] = []
    for c, run in enumerate(runs):
        picked = chosen == c
        out.append(
            CandidateResult(
                name=run.name,
                run_dir=str(run.run_dir),
                chosen_rate=float(np.mean(picked)),
                held_out_kappa_when_chosen=_mean(kappa_b[picked, c]) if picked.any() else None,
                selection_kappa_when_chosen=_mean(kappa_a[picked, c]) if picked.any() else None,
                mean_half_kappa=_mean(kappa_b[:, c]),
            )
        )
    out.sort(key=lambda c: (-c.chosen_rate, c.name))
    return out


def _at_chance_rate(values: Any) -> float | None:
    """The share of splits whose chosen candidate is at or below chance (κ ≤ 0) on the
    held-out half."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.mean(x <= 0.0)) if x.size else None


def _mean(values: Any) -> float | None:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return float(x.mean()) if x.size else None


def _range(values: Any) -> list[float] | None:
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return None
    low, high = np.percentile(x, [5, 95])
    return [float(low), float(high)]


def select(
    runs: Sequence[SavedRun],
    *,
    dataset: str | None = None,
    model: str | None = None,
    baseline: str | None = None,
    splits: int = 200,
    seed: int = 0,
) -> list[SelectionStudy]:
    """One :func:`selection_study` per dataset of ``runs`` (the completed real runs of a sweep,
    :func:`mmjudge.store.completed_runs`), or just ``dataset``, among all of them (or only
    ``model``'s)."""
    if model is not None:
        runs = [run for run in runs if run.summary.cell.model == model]
        if not runs:
            raise MMJudgeError(f"no completed runs of model {model!r}")
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    if dataset is not None:
        if dataset not in by_dataset:
            known = ", ".join(sorted(by_dataset)) or "none"
            raise MMJudgeError(f"no completed runs on dataset {dataset!r} (found: {known})")
        by_dataset = {dataset: by_dataset[dataset]}
    if not by_dataset:
        raise MMJudgeError("no completed runs")
    out = []
    for group in by_dataset.values():
        index = resolve_baseline(group, baseline)
        out.append(selection_study(group, baseline=index, splits=splits, seed=seed))
    return out
