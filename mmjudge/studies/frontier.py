"""The cheapest judge that is as good as the best one, per dataset: the best single judge, every
candidate (real runs, panels, cascades) compared with it on the items both graded
(:func:`~mmjudge.metrics.scoring.compare_judges`), and the cheapest candidate not
distinguishably worse whose own κ interval lies above 0 (chance, the κ of a judge answering
at random); none when no candidate's does. On a race's folder (``mmjudge race``) that race's
choice is the answer when the race decided and its κ interval lies above 0, as on the
report's card (:mod:`mmjudge.studies.race_verdict`); otherwise the answer says in one line why
the race chose another. The command is ``mmjudge frontier``."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.metrics import scoring
from mmjudge.store import Key, SavedRun, common_keys
from mmjudge.studies.members import human_consensus
from mmjudge.studies.race_verdict import race_note, verdict_for_runs

OPTIMISM_NOTE = (
    "the best judge is picked on the items it is scored on, so its κ is optimistic; "
    "see mmjudge select for held-out estimates"
)


def _queries(keys: Sequence[Key]) -> np.ndarray:
    return np.array([key[0] for key in keys], dtype=object)


def own_score(run: SavedRun, *, n_boot: int, seed: int, level: float) -> scoring.JudgeScore:
    """A run against the consensus on the items it graded (as in its summary and the
    report)."""
    keys = list(run.rows)
    return scoring.score_judge(
        _queries(keys),
        human_consensus([run], keys),
        run.labels(keys),
        run.grades,
        relevant_from=run.relevant_from,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )


def compare_runs(
    best: SavedRun, other: SavedRun, *, n_boot: int, seed: int, level: float
) -> scoring.PairedComparison | None:
    """``best`` against ``other`` on the items both graded (``None`` without any)."""
    keys = common_keys([best, other])
    return scoring.compare_judges(
        _queries(keys),
        human_consensus([best, other], keys),
        best.labels(keys),
        other.labels(keys),
        best.grades,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )


def _comparison_entry(found: scoring.PairedComparison | None) -> dict[str, Any]:
    if found is None:
        return {"n_items": 0, "n_queries": 0, "kappa_best": None, "kappa": None, "difference": None}
    values = found.as_dict()
    return {
        "n_items": found.n_items,
        "n_queries": found.n_queries,
        "kappa_best": values["kappa_a"],
        "kappa": values["kappa_b"],
        "difference": {
            "estimate": values["difference"],
            "low": values["low"],
            "high": values["high"],
            "p_value": values["p_value"],
        },
    }


@dataclass(frozen=True)
class HumanCeiling:
    """The spread of κ between one annotator and another on a run's items: the ceiling a
    judge is held to."""

    low: float
    """The lowest κ of any pair of annotators."""
    high: float
    """The highest κ of any pair of annotators."""


def human_ceiling(run: SavedRun) -> HumanCeiling | None:
    """The lowest and highest κ of one annotator against another on the run's items (the
    ceiling a judge is held to); None with fewer than two annotators."""
    keys = list(run.rows)
    grades_of = [run.rows[key].human_labels or {} for key in keys]
    names = sorted({name for labels in grades_of for name in labels})
    queries = _queries(keys)
    values = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = (
                np.array([math.nan if g.get(n) is None else float(g[n]) for g in grades_of])
                for n in (a, b)
            )
            score = scoring.score_judge(
                queries, x, y, run.grades, relevant_from=run.relevant_from, n_boot=0
            )
            if score.n_items and math.isfinite(score.kappa.estimate):
                values.append(score.kappa.estimate)
    return HumanCeiling(low=min(values), high=max(values)) if values else None


def _as_json(ceiling: HumanCeiling | None) -> dict[str, float] | None:
    return None if ceiling is None else dataclasses.asdict(ceiling)


def _entry(run: SavedRun) -> dict[str, Any]:
    return {
        "name": run.name,
        "kind": run.kind,
        "run_dir": str(run.run_dir),
        "usd_per_million": run.usd_per_million,
    }


def _cheapest_above_chance(
    qualifying: list[dict[str, Any]],
    runs: dict[int, SavedRun],
    best_kappa: scoring.Interval | None,
    best: SavedRun,
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Any] | None:
    """The cheapest candidate not distinguishably worse than the best whose own κ interval
    lies above 0 (each candidate is marked ``above_chance``, cheapest first, until one
    does); None when none does."""
    qualifying.sort(key=lambda c: (c["usd_per_million"], -(c["kappa"] or -2.0), c["name"]))
    for candidate in qualifying:
        run = runs[candidate["_run"]]
        if run is best and best_kappa is None:
            candidate["above_chance"] = False
            continue
        own = best_kappa if run is best else None
        if own is None:
            own = own_score(run, n_boot=n_boot, seed=seed, level=level).kappa
        candidate["above_chance"] = own.above_chance
        if own.above_chance:
            return {k: v for k, v in candidate.items() if k != "_run"}
    return None


def _dataset_answer(
    runs: Sequence[SavedRun], *, n_boot: int, seed: int, level: float
) -> dict[str, Any] | None:
    singles = [run for run in runs if run.kind == "single"]
    scored = []
    for run in singles:
        value = own_score(run, n_boot=0, seed=seed, level=level).kappa.estimate
        if not math.isnan(value):
            scored.append((value, run))
    if not scored:
        return None
    _, best = max(scored, key=lambda pair: (pair[0], -pair[1].usd_per_million))
    best_score = own_score(best, n_boot=n_boot, seed=seed, level=level)
    candidates = []
    for run in runs:
        comparison = _comparison_entry(
            compare_runs(best, run, n_boot=n_boot, seed=seed, level=level)
        )
        difference = comparison.get("difference")
        low = None if difference is None else difference.get("low")
        qualifies = run is best or (low is not None and low <= 0.0)
        candidates.append({**_entry(run), **comparison, "qualifies": qualifies, "_run": id(run)})
    answer = _cheapest_above_chance(
        [c for c in candidates if c["qualifies"]],
        {id(run): run for run in runs},
        best_score.kappa if best_score.kappa.above_chance else None,
        best,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )
    answer, race = _race_answer(singles, candidates, answer, n_boot=n_boot, seed=seed, level=level)
    return {
        "dataset": runs[0].summary.cell.dataset,
        "best": {
            **_entry(best),
            "kappa": best_score.kappa.as_dict(),
            "above_chance": best_score.kappa.above_chance,
            "alpha": scoring.none_if_nan(best_score.estimate("alpha")),
            "n_items": best_score.n_items,
            "n_queries": best_score.n_queries,
        },
        "chance": 0.0,
        "human_kappa": _as_json(human_ceiling(best)),
        "answer": answer,
        "candidates": sorted(
            ({k: v for k, v in c.items() if k != "_run"} for c in candidates),
            key=lambda c: (c["usd_per_million"], c["name"]),
        ),
        "n_boot": n_boot,
        "seed": seed,
        "level": level,
        "note": OPTIMISM_NOTE,
        "race": race,
    }


def _race_answer(
    singles: Sequence[SavedRun],
    candidates: list[dict[str, Any]],
    answer: dict[str, Any] | None,
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The answer on a race's folder: the race's choice when it decided and its κ interval
    lies above 0, else ``answer``; and what the race chose, with why the two differ (None
    when the runs are not a race's)."""
    verdict = verdict_for_runs(run.run_dir for run in singles)
    if verdict is None:
        return answer, None
    chosen = next((r for r in singles if Path(r.run_dir) == verdict.chosen_run), None)
    above = (
        chosen is not None
        and own_score(chosen, n_boot=n_boot, seed=seed, level=level).kappa.above_chance
    )
    if chosen is not None and verdict.decided and above:
        entry = next(c for c in candidates if c["_run"] == id(chosen))
        answer = {**{k: v for k, v in entry.items() if k != "_run"}, "above_chance": True}
    agrees = chosen is not None and answer is not None and answer["run_dir"] == str(chosen.run_dir)
    race = {
        "chosen": verdict.chosen,
        "run_dir": None if verdict.chosen_run is None else str(verdict.chosen_run),
        "ending": verdict.ending,
        "decided": verdict.decided,
        "note": race_note(verdict, agrees=agrees, chosen_above_chance=above),
    }
    return answer, race


def frontier_answer(
    runs: Sequence[SavedRun],
    *,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
    dataset: str | None = None,
) -> list[dict[str, Any]]:
    """Per dataset: the best single judge and the cheapest judge, panel or cascade not
    distinguishably worse (see the module docstring). One dict per dataset with ``best``
    (κ with its interval on its ``n_items`` items), ``answer`` (κ of both on the
    ``n_items`` items it shares with the best, the paired interval of the difference and
    its p-value, $ per million; None when no candidate's own κ interval lies above 0,
    chance), ``chance`` (0), ``human_kappa`` (lowest and highest κ of one annotator against
    another, None without two) and every ``candidates`` entry checked, in the same form.
    ``runs``: a sweep's completed runs, ensembles included
    (:func:`mmjudge.store.completed_runs`)."""
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    if dataset is not None:
        by_dataset = {k: v for k, v in by_dataset.items() if k == dataset}
    out = []
    for name in sorted(by_dataset):
        found = _dataset_answer(by_dataset[name], n_boot=n_boot, seed=seed, level=level)
        if found is not None:
            out.append(found)
    return out
