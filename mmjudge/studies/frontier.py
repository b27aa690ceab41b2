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

import numpy as np

from mmjudge.metrics import scoring
from mmjudge.store import Bounds, Key, SavedRun
from mmjudge.studies.race_verdict import race_note, verdict_for_runs
from mmjudge.studies.reference_grades import (
    AskedGrades,
    DatasetGrades,
    Grades,
    grades_for,
)

OPTIMISM_NOTE = (
    "the best judge is picked on the items it is scored on, so its κ is optimistic; "
    "see mmjudge select for held-out estimates"
)


def _queries(keys: Sequence[Key]) -> np.ndarray:
    return np.array([key[0] for key in keys], dtype=object)


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


@dataclass(frozen=True)
class KappaDifference:
    """κ(best) − κ(candidate) on the items both graded, with its paired bootstrap interval
    (None where undefined)."""

    estimate: float | None
    """The difference."""
    low: float | None
    """The interval's lower end."""
    high: float | None
    """The interval's upper end."""
    p_value: float | None
    """Two-sided p-value of the paired bootstrap."""


@dataclass(frozen=True)
class FrontierCandidate:
    """A candidate (real run, panel or cascade) compared with the best single judge on the
    items both graded."""

    name: str
    """The candidate's name (``model/prompt/modality`` or the ensemble's)."""
    kind: str
    """``single``, ``panel`` or ``cascade``."""
    run_dir: str
    """Its run folder."""
    usd_per_million: float
    """What a million judgments cost with it."""
    n_items: int
    """Items both it and the best judge graded (0 without any)."""
    n_queries: int
    """Queries among those items."""
    kappa_best: float | None
    """The best judge's κ on those items."""
    kappa: float | None
    """Its own κ on those items."""
    difference: KappaDifference | None
    """κ(best) − κ with its interval (None without shared items)."""
    qualifies: bool
    """Not distinguishably worse than the best (the interval reaches 0 or below)."""
    above_chance: bool | None = None
    """Whether its own κ interval lies above 0; None when not checked (qualifying candidates
    are checked cheapest first until one does)."""


@dataclass(frozen=True)
class BestJudge:
    """The single judge with the highest κ against the consensus on the items it graded."""

    name: str
    """Its name (``model/prompt/modality``)."""
    kind: str
    """``single``."""
    run_dir: str
    """Its run folder."""
    usd_per_million: float
    """What a million judgments cost with it."""
    kappa: Bounds
    """Its κ with the interval at the answer's ``level``."""
    above_chance: bool
    """Whether that interval lies above 0 (chance)."""
    alpha: float | None
    """Its Krippendorff's α (None where undefined)."""
    n_items: int
    """Items it graded that have a human grade."""
    n_queries: int
    """Queries among those items."""


@dataclass(frozen=True)
class RaceChoice:
    """What the race that made the folder chose, beside the answer."""

    chosen: str | None
    """The chosen cell's name (None when the race chose none)."""
    run_dir: str | None
    """The chosen cell's run folder."""
    ending: str | None
    """How the race ended."""
    decided: bool
    """Whether the race decided (rather than ran out)."""
    note: str | None
    """Why the answer is not the race's choice, in one line (None when they agree)."""


@dataclass(frozen=True)
class FrontierAnswer:
    """One dataset's answer: the best single judge and the cheapest candidate not
    distinguishably worse whose κ interval lies above chance (the fields are the keys of
    ``mmjudge frontier --format json``)."""

    dataset: str
    """The dataset."""
    best: BestJudge
    """The best single judge."""
    chance: float
    """κ of a judge answering at random (0)."""
    human_kappa: HumanCeiling | None
    """The lowest and highest κ of one annotator against another (None without two)."""
    answer: FrontierCandidate | None
    """The cheapest candidate as good as the best and above chance (None when none is)."""
    candidates: list[FrontierCandidate]
    """Every candidate checked, cheapest first."""
    n_boot: int
    """Bootstrap resamples behind the intervals."""
    seed: int
    """Bootstrap seed."""
    level: float
    """Coverage of the intervals."""
    note: str
    """Why the best judge's κ is optimistic."""
    race: RaceChoice | None
    """What the folder's race chose (None when the runs are not a race's)."""
    grades: str = DatasetGrades.line
    """Which people's grades every κ here is against, and how they were drawn."""
    weighted: bool = False
    """The grades were asked adaptively and weighted 1/π: every interval is the design's
    (normal, from the linearised error), not the query bootstrap's."""
    not_read: str | None = None
    """Grades the folder holds that were not read, and why (None when there are none)."""


def _comparison(run: SavedRun, found: scoring.PairedComparison | None) -> FrontierCandidate:
    """``run`` as a candidate, from its comparison with the best judge (None without shared
    items)."""
    difference = None
    if found is not None:
        difference = KappaDifference(
            estimate=scoring.none_if_nan(found.difference),
            low=scoring.none_if_nan(found.low),
            high=scoring.none_if_nan(found.high),
            p_value=scoring.none_if_nan(found.p_value),
        )
    low = None if difference is None else difference.low
    return FrontierCandidate(
        name=run.name,
        kind=run.kind,
        run_dir=str(run.run_dir),
        usd_per_million=run.usd_per_million,
        n_items=0 if found is None else found.n_items,
        n_queries=0 if found is None else found.n_queries,
        kappa_best=None if found is None else scoring.none_if_nan(found.kappa_a),
        kappa=None if found is None else scoring.none_if_nan(found.kappa_b),
        difference=difference,
        qualifies=low is not None and low <= 0.0,
    )


def _cheapest_above_chance(
    candidates: list[tuple[FrontierCandidate, SavedRun]],
    best_kappa: scoring.Interval | None,
    best: SavedRun,
    *,
    grades: Grades,
    n_boot: int,
) -> tuple[dict[int, FrontierCandidate], FrontierCandidate | None]:
    """The cheapest candidate not distinguishably worse than the best whose own κ interval
    lies above 0, or None when none does; and each candidate checked on the way (cheapest
    first, until one does), by its index in ``candidates``, marked ``above_chance``."""
    checked: dict[int, FrontierCandidate] = {}
    order = sorted(
        (i for i, (c, _) in enumerate(candidates) if c.qualifies),
        key=lambda i: (
            candidates[i][0].usd_per_million,
            -(candidates[i][0].kappa or -2.0),
            candidates[i][0].name,
        ),
    )
    for i in order:
        candidate, run = candidates[i]
        if run is best and best_kappa is None:
            checked[i] = dataclasses.replace(candidate, above_chance=False)
            continue
        own = best_kappa if run is best else None
        if own is None:
            own = grades.own(run, n_boot).kappa
        checked[i] = dataclasses.replace(candidate, above_chance=own.above_chance)
        if own.above_chance:
            return checked, checked[i]
    return checked, None


def _dataset_answer(
    runs: Sequence[SavedRun], grades: Grades, *, n_boot: int, seed: int, level: float
) -> FrontierAnswer | None:
    singles = [run for run in runs if run.kind == "single"]
    scored = []
    for run in singles:
        value = grades.own(run, 0).kappa.estimate
        if not math.isnan(value):
            scored.append((value, run))
    if not scored:
        return None
    _, best = max(scored, key=lambda pair: (pair[0], -pair[1].usd_per_million))
    best_score = grades.own(best, n_boot)
    candidates = []
    for run in runs:
        found = _comparison(run, grades.compare(best, run, n_boot))
        if run is best:
            found = dataclasses.replace(found, qualifies=True)
        candidates.append((found, run))
    checked, answer = _cheapest_above_chance(
        candidates,
        best_score.kappa if best_score.kappa.above_chance else None,
        best,
        grades=grades,
        n_boot=n_boot,
    )
    entries = [(checked.get(i, c), run) for i, (c, run) in enumerate(candidates)]
    answer, race = _race_answer(singles, entries, answer, grades=grades, n_boot=n_boot)
    return FrontierAnswer(
        dataset=runs[0].summary.cell.dataset,
        best=BestJudge(
            name=best.name,
            kind=best.kind,
            run_dir=str(best.run_dir),
            usd_per_million=best.usd_per_million,
            kappa=Bounds(**best_score.kappa.as_dict()),
            above_chance=best_score.kappa.above_chance,
            alpha=best_score.alpha,
            n_items=best_score.n_items,
            n_queries=best_score.n_queries,
        ),
        chance=0.0,
        human_kappa=human_ceiling(best),
        answer=answer,
        candidates=sorted((c for c, _ in entries), key=lambda c: (c.usd_per_million, c.name)),
        n_boot=n_boot,
        seed=seed,
        level=level,
        note=OPTIMISM_NOTE,
        race=race,
        grades=grades.line,
        weighted=isinstance(grades, AskedGrades),
    )


def _race_answer(
    singles: Sequence[SavedRun],
    candidates: list[tuple[FrontierCandidate, SavedRun]],
    answer: FrontierCandidate | None,
    *,
    grades: Grades,
    n_boot: int,
) -> tuple[FrontierCandidate | None, RaceChoice | None]:
    """The answer on a race's folder: the race's choice when it decided and its κ interval
    lies above 0, else ``answer``; and what the race chose, with why the two differ (None
    when the runs are not a race's)."""
    verdict = verdict_for_runs(run.run_dir for run in singles)
    if verdict is None:
        return answer, None
    chosen = next((r for r in singles if Path(r.run_dir) == verdict.chosen_run), None)
    above = chosen is not None and grades.own(chosen, n_boot).kappa.above_chance
    if chosen is not None and verdict.decided and above:
        entry = next(c for c, run in candidates if run is chosen)
        answer = dataclasses.replace(entry, above_chance=True)
    agrees = chosen is not None and answer is not None and answer.run_dir == str(chosen.run_dir)
    race = RaceChoice(
        chosen=verdict.chosen,
        run_dir=None if verdict.chosen_run is None else str(verdict.chosen_run),
        ending=verdict.ending,
        decided=verdict.decided,
        note=race_note(verdict, agrees=agrees, chosen_above_chance=above),
    )
    return answer, race


def frontier_answer(
    runs: Sequence[SavedRun],
    *,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
    dataset: str | None = None,
    root: Path | None = None,
) -> list[FrontierAnswer]:
    """Per dataset: the best single judge and the cheapest judge, panel or cascade not
    distinguishably worse (see the module docstring). One :class:`FrontierAnswer` per dataset
    with ``best``
    (κ with its interval on its ``n_items`` items), ``answer`` (κ of both on the
    ``n_items`` items it shares with the best, the paired interval of the difference and
    its p-value, $ per million; None when no candidate's own κ interval lies above 0,
    chance), ``chance`` (0), ``human_kappa`` (lowest and highest κ of one annotator against
    another, None without two) and every ``candidates`` entry checked, in the same form.
    ``runs``: a sweep's completed runs, ensembles included
    (:func:`mmjudge.store.completed_runs`); ``root``: the folder they were read from, whose
    race's asked grades (``race.labels=ask``) are read, weighted 1/π, for a dataset without
    grades of its own (:func:`grades_for`)."""
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    if dataset is not None:
        by_dataset = {k: v for k, v in by_dataset.items() if k == dataset}
    out = []
    for name in sorted(by_dataset):
        group = by_dataset[name]
        chosen = grades_for(root, group, seed=seed, level=level)
        found = _dataset_answer(group, chosen.grades, n_boot=n_boot, seed=seed, level=level)
        if found is not None:
            out.append(dataclasses.replace(found, not_read=chosen.not_read))
    return out
