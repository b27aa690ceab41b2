"""The (query, result text) → grade pairs a judge is trained on, gathered from a saved run or
sweep, and the seeded split of their queries into training and held-out ones.

The items are those the source's cells judged; their texts come from the dataset the source's
config names (read again through :func:`mmjudge.data.loading.load_dataset`, without the run's
sampling, so every judged item is found). The grade each pair teaches comes from one teacher:

- ``humans``: the people's consensus (the lower median, as every agreement number uses);
- ``judge``: one cell's grades (``--judge NAME``: its model name or ``model/prompt/modality``);
- ``labels``: a label file's (TREC qrels or JSON lines, read by
  :mod:`mmjudge.data.label_files`).

Every pair also carries the people's consensus (``nan`` where nobody graded it) and, for a
judge teacher, nothing more: the teacher's grade is what it learns and what it is measured
against. Input it cannot learn from is a one-line :class:`~mmjudge.errors.MMJudgeError`: too
few pairs, one grade only, a source without text, an unknown judge.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mmjudge.config import DatasetConfig
from mmjudge.data.label_files import one_run
from mmjudge.data.loading import load_dataset
from mmjudge.errors import ConfigError, DatasetError, MMJudgeError
from mmjudge.metrics import consensus
from mmjudge.records import JudgmentRecord
from mmjudge.store import SavedRun, completed_runs
from mmjudge.store.blocks import SINGLE

#: Fewest training pairs (after the held-out queries are taken out) worth training on.
MIN_TRAIN_PAIRS = 10
#: The teachers a judge can learn from.
TEACHERS = ("humans", "judge", "labels")


class Pair(NamedTuple):
    """One item to learn or to measure on."""

    query_id: str
    """The query's id."""
    result_id: str
    """The result's id."""
    query: str
    """The query's text."""
    text: str
    """The result's text fields, joined by newlines."""
    grade: int
    """The teacher's grade (what is learnt)."""
    human: float
    """The people's consensus grade (``nan`` where nobody graded the item)."""
    source: float
    """The source judge's grade for a judge teacher (equal to :attr:`grade`); ``nan``
    otherwise."""
    images: tuple[str, ...] = ()
    """The result's image files (absolute paths, as the dataset's loader found them); read only
    when a judge is trained with images."""

    @property
    def key(self) -> str:
        """``query_id<TAB>result_id``, as rows and manifests name an item."""
        return f"{self.query_id}\t{self.result_id}"


@dataclasses.dataclass(frozen=True)
class PairSet:
    """Everything gathered from a source: the pairs, the scale and where they came from."""

    pairs: list[Pair]
    """Every item with a teacher's grade and text."""
    grades: list[int]
    """The dataset's scale, lowest first."""
    dataset: str
    """The dataset's name."""
    teacher: str
    """``humans``, ``judge`` or ``labels``."""
    teacher_name: str
    """The teacher in words (``humans``, the judge's name, the label file)."""
    source: str
    """The run or sweep folder, as given."""


class Split(NamedTuple):
    """Pairs split by query: trained on, and held out (never trained on)."""

    train: list[Pair]
    """Pairs of the training queries."""
    held_out: list[Pair]
    """Pairs of the held-out queries."""
    held_out_queries: list[str]
    """The held-out queries, sorted."""


def gather(
    source: str | Path,
    teacher: str,
    *,
    judge: str | None = None,
    labels: str | Path | None = None,
) -> PairSet:
    """The pairs ``teacher`` grades in ``source`` (a run or sweep folder); see the module."""
    if teacher not in TEACHERS:
        raise MMJudgeError(f"teacher {teacher!r} is unknown; choose one of: {', '.join(TEACHERS)}")
    folder = Path(source)
    if not folder.is_dir():
        raise MMJudgeError(f"{folder}: not a run or sweep folder")
    runs = completed_runs(folder, include_virtual=False)
    if not runs:
        raise MMJudgeError(f"{folder}: no finished run below it (no summary.json with rows)")
    chosen = _judge_runs(folder, runs, judge) if teacher == "judge" else runs
    dataset = _one_dataset(folder, chosen)
    grades = [int(g) for g in chosen[0].grades]
    rows = _rows(chosen)
    if teacher == "labels":
        if labels is None:
            raise MMJudgeError("--teacher labels needs --labels FILE (TREC qrels or JSON lines)")
        taught = _file_grades(labels, grades)
        name = str(labels)
    elif teacher == "judge":
        taught = {key: row.label for key, row in rows.items() if row.label is not None}
        name = chosen[0].summary.cell.model
    else:
        taught = {}
        name = "humans"
    texts = _texts(dataset, rows)
    pairs = []
    for key, row in rows.items():
        human = _consensus(row)
        grade = human if teacher == "humans" else taught.get(key)
        if grade is None or (isinstance(grade, float) and math.isnan(grade)):
            continue
        found = texts.get(key)
        if found is None or not found.text:
            continue
        source_grade = float(grade) if teacher == "judge" else math.nan
        shown = (found.query, found.text, int(grade), human, source_grade, found.images)
        pairs.append(Pair(key[0], key[1], *shown))
    if not pairs:
        if not any(found.text for found in texts.values()):
            raise MMJudgeError(
                f"{folder}: the items of dataset '{dataset.name}' have no text fields (images "
                "only); a distilled judge reads text: distil from a dataset with result text"
            )
        raise MMJudgeError(f"{folder}: no item has a grade from {name}; nothing to learn")
    return PairSet(pairs, grades, dataset.name, teacher, name, str(source))


def split(pairs: Sequence[Pair], held_out_share: float, seed: int) -> Split:
    """A seeded split of the pairs' queries: ``held_out_share`` of them (at least one) held
    out, the rest trained on; one-line errors when either side would be unusable."""
    if not 0.0 < held_out_share < 1.0:
        raise MMJudgeError(f"--holdout {held_out_share}: give a share between 0 and 1 (e.g. 0.3)")
    queries = sorted({p.query_id for p in pairs})
    if len(queries) < 2:
        raise MMJudgeError(
            f"all {len(pairs)} pairs belong to one query; held-out queries need at least two"
        )
    order = np.random.default_rng(seed).permutation(len(queries))
    count = min(max(1, round(held_out_share * len(queries))), len(queries) - 1)
    held = {queries[i] for i in order[:count]}
    train = [p for p in pairs if p.query_id not in held]
    kept = [p for p in pairs if p.query_id in held]
    if len(train) < MIN_TRAIN_PAIRS:
        raise MMJudgeError(
            f"only {len(train)} pairs left to train on after holding out {count} of "
            f"{len(queries)} queries; give at least {MIN_TRAIN_PAIRS} (more items, or a smaller "
            "--holdout)"
        )
    taught = sorted({p.grade for p in train})
    if len(taught) < 2:
        raise MMJudgeError(
            f"every training pair has grade {taught[0]}; a judge cannot learn from one grade: "
            "give items with other grades"
        )
    return Split(train, kept, sorted(held))


def _judge_runs(folder: Path, runs: list[SavedRun], judge: str | None) -> list[SavedRun]:
    names = sorted({run.summary.cell.model for run in runs})
    if judge is None:
        if len(names) == 1:
            return runs
        raise MMJudgeError(
            f"{folder} holds several judges; pick one with --judge NAME ({', '.join(names)})"
        )
    chosen = [r for r in runs if r.summary.cell.model == judge or r.summary.name == judge]
    if not chosen:
        raise MMJudgeError(
            f"--judge {judge!r}: no such judge in {folder}; choose one of: {', '.join(names)}"
        )
    cells = sorted({r.summary.name for r in chosen})
    if len(cells) > 1:
        raise MMJudgeError(
            f"--judge {judge!r} names {len(cells)} cells in {folder}; name one as "
            f"model/prompt/modality ({', '.join(cells)})"
        )
    return [r for r in chosen if r.summary.kind == SINGLE]


def _one_dataset(folder: Path, runs: list[SavedRun]) -> DatasetConfig:
    configs: dict[str, DatasetConfig] = {}
    for run in runs:
        config = run.summary.dataset_config()
        if config is not None:
            configs.setdefault(config.name, config)
    if not configs:
        raise MMJudgeError(f"{folder}: its runs do not record their dataset's config")
    if len(configs) > 1:
        raise MMJudgeError(
            f"{folder} holds several datasets ({', '.join(sorted(configs))}); give the folder of "
            "one dataset's run, or --judge NAME"
        )
    return next(iter(configs.values()))


def _rows(runs: list[SavedRun]) -> dict[tuple[str, str], JudgmentRecord]:
    """Every judged item of ``runs``, the first run's row where several judged it."""
    rows: dict[tuple[str, str], JudgmentRecord] = {}
    for run in runs:
        for key, row in run.rows.items():
            rows.setdefault((str(key[0]), str(key[1])), row)
    return rows


def _consensus(row: JudgmentRecord) -> float:
    given = {name: [float(g)] for name, g in (row.human_labels or {}).items() if g is not None}
    return float(consensus(given)[0]) if given else math.nan


class Shown(NamedTuple):
    """What the dataset shows of one item."""

    query: str
    """The query's text."""
    text: str
    """The result's text fields, joined by newlines."""
    images: tuple[str, ...]
    """The result's image files."""


def _texts(
    cfg: DatasetConfig, rows: dict[tuple[str, str], JudgmentRecord]
) -> dict[tuple[str, str], Shown]:
    """What the dataset shows of every judged item."""
    whole = dataclasses.replace(cfg, sample_queries=None, sample_items=None, limit=None)
    found: dict[tuple[str, str], Shown] = {}
    try:
        for example in load_dataset(whole):
            key = (example.query_id, example.result_id)
            if key in rows:
                text = "\n".join(v for _, v in example.fields if v)
                found[key] = Shown(example.query, text, tuple(example.images))
    except (DatasetError, ConfigError, OSError) as error:
        raise MMJudgeError(f"dataset '{cfg.name}' cannot be read: {error}") from None
    return found


def _file_grades(path: str | Path, grades: list[int]) -> dict[tuple[str, str], int]:
    if not Path(path).is_file():
        raise MMJudgeError(f"--labels {path}: no such file")
    read = one_run(path)
    scale = set(grades)
    out = {}
    for query, docs in read.qrels.items():
        for doc, grade in docs.items():
            if int(grade) not in scale:
                line = read.lines.get((query, doc))
                raise MMJudgeError(
                    f"{path}:{line}: grade {grade} for {query!r} {doc!r} is off the dataset's "
                    f"scale {grades}"
                )
            out[(str(query), str(doc))] = int(grade)
    return out
