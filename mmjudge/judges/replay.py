"""The replay judge: answers each item with the grade a file already holds for it, so judges
whose labels exist (a TREC track's submitted runs, an earlier run's answers) take part in a
sweep, a race or a report like any other judge, with no key and no call.

``model.options.qrels`` names the file:

- TREC qrels, ``query iteration doc grade``; a file with several judges' runs tells them apart
  by the iteration field (a pair judged twice);
- JSON lines (``.jsonl``/``.ndjson``) with ``query_id``, ``result_id`` and ``grade``, and a
  ``run`` (or ``judge``) field when the file holds several runs

(read by :mod:`mmjudge.data.label_files`, as ``mmjudge agree`` reads them). A file with
several runs needs ``model.options.run=NAME``. A grade off the dataset's scale is refused when
the cell starts, naming the file, the line and the scale. An item the file does not grade is
an :class:`~mmjudge.errors.UngradableItem` on that item's row: counted with the errors (the
run goes on), and named in the cell's status as items no rerun can grade.

A replay calls nothing and is billed nothing (``free``). To price its judgments as a
sheet model's calls would be, set ``model.price_key`` to that model's sheet key and
``model.options.input_tokens``/``output_tokens`` to a typical call: each judgment then reports
that usage and the ledger prices it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from mmjudge.config import ModelConfig
from mmjudge.data.label_files import label_runs, runs_by
from mmjudge.data.qrels import QrelsFile
from mmjudge.errors import ConfigError, DatasetError, UngradableItem
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.options import JudgeOptions
from mmjudge.locations import resolve_path
from mmjudge.records import JudgeRequest, JudgeResponse, Usage


@dataclass(frozen=True)
class ReplayOptions(JudgeOptions):
    """``model.options`` of the replay judge."""

    family: ClassVar[str] = "replay"
    qrels: str | None = None
    """The file of grades to replay (TREC qrels or JSON lines)."""
    run: str | None = None
    """Which run of a file holding several."""
    input_tokens: float = 0
    """Input tokens each judgment reports (a typical call of the model it is priced as)."""
    output_tokens: float = 0
    """Output tokens each judgment reports."""


class Graded:
    """One run's grades: ``{(query_id, result_id): (grade, line)}``."""

    def __init__(self, path: Path, grades: dict[tuple[str, str], tuple[float, int]]) -> None:
        self.path = path
        self.grades = grades


def _one_run(path: Path, runs: dict[str, QrelsFile], run: str | None) -> QrelsFile:
    """The run asked for; the only one; or a ConfigError naming the runs found."""
    names = sorted(runs)
    if run is not None:
        if run not in runs:
            raise ConfigError(
                f"{path}: no run {run!r} (model.options.run); the file holds: {', '.join(names)}"
            )
        return runs[run]
    if len(runs) > 1:
        raise ConfigError(
            f"{path} holds {len(runs)} runs ({runs_by(path)}): {', '.join(names)}; "
            "pick one with model.options.run=NAME"
        )
    return next(iter(runs.values()))


def load_replay(path: str | Path, run: str | None = None) -> Graded:
    """The grades of one run of a replay file (see the module docstring); a relative path is
    taken against the working folder, ``pkg://`` names a file inside an installed package."""
    path = resolve_path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such file (model.options.qrels)")
    found = _one_run(path, label_runs(path), run)
    grades = {
        (query, doc): (float(grade), found.lines[(query, doc)])
        for query, docs in found.qrels.items()
        for doc, grade in docs.items()
    }
    return Graded(path, grades)


class ReplayJudge(JudgeAPI):
    """Grades each item with the file's grade for its (query, result)."""

    descriptors = (JudgeDescriptor("replay", free=True),)
    supports_images = True
    modalities = ("text", "mm", "image")
    cacheable = False
    Options = ReplayOptions
    options: ReplayOptions

    def __init__(self, model: ModelConfig) -> None:
        super().__init__(model)
        if not self.options.qrels:
            raise ConfigError(
                f"model '{model.name}' replays a file: set model.options.qrels=PATH "
                "(TREC qrels or .jsonl with query_id, result_id, grade)"
            )
        try:
            self.graded = load_replay(self.options.qrels, self.options.run)
        except DatasetError as error:
            raise ConfigError(str(error)) from None
        self.usage = self.usage_per_call(model)

    @classmethod
    def usage_per_call(cls, model: ModelConfig) -> Usage:
        """What each judgment reports: ``model.options.input_tokens``/``output_tokens``."""
        options = ReplayOptions.parse(model)
        return Usage(
            input_tokens=int(options.input_tokens), output_tokens=int(options.output_tokens)
        )

    def describe(self) -> str:
        return f"replay of {self.graded.path}"

    def check_scale(self, grades: list[int]) -> None:
        scale = {float(g) for g in grades}
        for (query, doc), (grade, line) in self.graded.grades.items():
            if grade not in scale:
                raise ConfigError(
                    f"{self.graded.path}:{line}: grade {grade:g} for {query!r} {doc!r} is off "
                    f"the dataset's scale {sorted(grades)}"
                )
        return None

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        query, _, result = request.item_key.partition("\t")
        found = self.graded.grades.get((query, result))
        if found is None:
            raise UngradableItem(
                f"{self.graded.path} has no grade for query {query!r} result {result!r}"
            )
        grade = found[0]
        return JudgeResponse(
            text=f"{int(grade) if grade.is_integer() else grade}",
            usage=self.usage,
            latency_s=time.perf_counter() - started,
            model=self.model.name,
            stop_reason="stop",
        )
