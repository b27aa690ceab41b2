"""The labelled items of ``mmjudge estimate --sample``: a draw written by ``mmjudge plan
--next`` (a review file with each item's inclusion probability), read back against the
human and the judge's qrels.

The estimate is over every pair the judge grades, so each of them must be either labelled
with a known chance or outside the draw's reach with none: the drawn items carry their
inclusion probability, and items people had graded before the draw (the human file grades
them, the review file does not list them) are labelled for certain (probability 1). The draw
was made from the pairs no person had graded, and ``plan --next`` writes how many those were
(``pool_size``); when the judge grades more pairs without a human grade than that pool can
account for, the human labels from before the draw are missing from the human file, and
those pairs would silently count as unlabelled items the draw could never have picked. That
is refused, naming the fix.

On the folder of a race that asked people for grades as it went (``race.labels=ask``) over a
dataset without grades, the asked grades are the draw (:func:`asked_sample`): every item the
judge graded in the race's decided rounds had its own known chance of being asked.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mmjudge.data.qrels import Qrels, QrelsFile
from mmjudge.errors import MMJudgeError
from mmjudge.estimation.estimates import check_labelled
from mmjudge.estimation.prediction import ItemLabels
from mmjudge.store.asked_grades import ASKED_GRADES_FILE
from mmjudge.store.review_file import ReviewLine, ReviewRow, read_review
from mmjudge.studies.asked_agreement import AskedReference


def sampled_items(
    human: Qrels,
    judge: Qrels,
    paths: tuple[Path, Path, Path],
    dataset: str | None = None,
) -> tuple[ItemLabels, np.ndarray, np.ndarray]:
    """Every pair the judge grades (human grade or ``nan``), which of them are labelled, and
    their inclusion probabilities (1 for pairs the human file grades outside the draw).
    ``paths`` are the human file, the judge's and the review file, for messages; ``dataset``
    picks the rows of one dataset from a review file that holds several. A drawn item
    without a human grade, a row without a usable probability, or a judge's pair that no
    person graded and the draw could not have picked is an error naming the file and line."""
    human_path, judge_path, review_path = paths
    order, h, j = [], [], []
    for query, docs in judge.items():
        for doc, grade in docs.items():
            order.append((query, doc))
            h.append(float(human.get(query, {}).get(doc, math.nan)))
            j.append(float(grade))
    row_of = {key: i for i, key in enumerate(order)}
    grades = np.asarray(h)
    chance = np.where(np.isnan(grades), 0.0, 1.0)  # graded before the draw: labelled for certain
    drawn = np.zeros(len(order), dtype=bool)
    pools = set()
    for line, row in _rows_of(review_path, dataset):
        key = (row.query_id, row.result_id)
        where = f"{review_path}:{line}"
        i = row_of.get(key)
        if i is None:
            raise MMJudgeError(f"{where}: {key[0]} {key[1]} is not among {judge_path}'s pairs")
        if math.isnan(grades[i]):
            raise MMJudgeError(
                f"{where}: {key[0]} {key[1]} has no grade in {human_path}; import the "
                "filled-in review (mmjudge review import) and pass its qrels"
            )
        chance[i] = _probability(row, where)
        drawn[i] = True
        if row.draw is not None and row.draw.pool_size is not None:
            pools.add(row.draw.pool_size)
    _check_pool(pools, int(np.isnan(grades).sum()), int(drawn.sum()), paths)
    labelled = chance > 0
    check_labelled(int(drawn.sum()), len(order), f"--sample {review_path}:")
    items = ItemLabels([q for q, _ in order], [d for _, d in order], grades, np.asarray(j))
    return items, labelled, chance[labelled]


def _rows_of(path: Path, dataset: str | None) -> list[ReviewLine]:
    """The review file's rows, of ``dataset`` when given; a file holding several datasets
    needs one named."""
    rows = read_review(path)
    names = sorted({row.dataset for _, row in rows} - {""})
    if dataset is not None:
        if dataset not in names:
            raise MMJudgeError(
                f"{path}: no rows of dataset '{dataset}'; it holds {', '.join(names) or 'none'}"
            )
        return [line for line in rows if line.row.dataset == dataset]
    if len(names) > 1:
        raise MMJudgeError(
            f"{path}: holds rows of {len(names)} datasets ({', '.join(names)}); pass "
            "--dataset NAME for the one the judge's qrels belong to"
        )
    return rows


def _probability(row: ReviewRow, where: str) -> float:
    pi = None if row.draw is None else row.draw.inclusion_probability
    if pi is None or not 0 < pi <= 1:
        raise MMJudgeError(
            f"{where}: field 'inclusion_probability' must be a number in (0, 1], got "
            f"{'nothing' if pi is None else pi} (write the file with mmjudge plan --next)"
        )
    return pi


def _check_pool(pools: set[int], ungraded: int, drawn: int, paths: tuple[Path, Path, Path]) -> None:
    """The judge's pairs no person graded (``ungraded``) plus the ``drawn`` ones must fit
    in the pool the draw was made from (``pool_size``, when the file has it)."""
    human_path, judge_path, review_path = paths
    if not pools:
        return
    if len(pools) > 1:
        raise MMJudgeError(
            f"{review_path}: column 'pool_size' differs between rows "
            f"({', '.join(str(p) for p in sorted(pools))});"
            " a draw has one pool per dataset (pass --dataset NAME)"
        )
    pool = pools.pop()
    outside = ungraded + drawn - pool
    if outside > 0:
        raise MMJudgeError(
            f"{judge_path} grades {ungraded + drawn} pairs that {human_path} has no grade for "
            f"or that were drawn, but the draw in {review_path} was made from {pool} pairs no "
            f"person had graded: {outside} pairs could not have been drawn. Pass the human "
            "labels from before the draw too (e.g. cat <dataset>.human.qrels from mmjudge "
            "export and the imported review's qrels into one file)"
        )


class AskedSample(NamedTuple):
    """The labelled items of ``mmjudge estimate RACE_DIR`` on a race's asked grades."""

    human: QrelsFile
    """The asked grades of the judge's items, as qrels (for the scale and messages)."""
    items: ItemLabels
    """Every item the judge graded (the person's grade where asked, ``nan`` elsewhere)."""
    labelled: np.ndarray
    """Which of them a person graded."""
    probabilities: np.ndarray
    """Each labelled item's inclusion probability π."""


def asked_sample(folder: Path, judge: Qrels, asked: AskedReference) -> AskedSample:
    """The items of a race's judge (``judge``: its grades, from the race ``folder``) with the
    grades the race asked for and their inclusion probabilities: what the prediction-powered
    estimate weights 1/π (the active-inference form, Zrnic and Candès 2024), over the items
    the race's decided rounds reached.

    Raises:
        MMJudgeError: the race waits on a round's grades (its judges have judged items whose
            draw is not closed, so the items are no longer the rounds' population), or too few
            of the judge's items were graded."""
    if asked.draw.waiting:
        raise MMJudgeError(
            f"{folder}: the race waits for {asked.draw.waiting:,} grades of its next round, "
            "whose items its judges have judged already; fill the labelling file and run the "
            "race again before estimating from its asked grades"
        )
    grade_of = {
        key: (float(grade), 1.0 / float(weight))
        for key, grade, weight in zip(asked.keys, asked.grades, asked.weights, strict=True)
    }
    order, h, j, pi = [], [], [], []
    human: Qrels = {}
    for query, docs in judge.items():
        for doc, grade in docs.items():
            order.append((query, doc))
            found = grade_of.get((query, doc))
            h.append(math.nan if found is None else found[0])
            pi.append(0.0 if found is None else found[1])
            j.append(float(grade))
            if found is not None:
                human.setdefault(query, {})[doc] = round(found[0])
    chance = np.asarray(pi)
    labelled = chance > 0
    check_labelled(int(labelled.sum()), len(order), f"{folder}: the race's asked grades,")
    items = ItemLabels([q for q, _ in order], [d for _, d in order], np.asarray(h), np.asarray(j))
    return AskedSample(
        QrelsFile(folder / ASKED_GRADES_FILE, human, {}), items, labelled, chance[labelled]
    )
