"""The blocks of a run summary that say how a cell turned answers into grades where the
judge does not give the grade itself: a local judge's cut points (``grading``), what a trained
judge learnt from (``trained_on``) and the test bank a bank-grading cell graded against
(``testbank``); see :mod:`mmjudge.store.summary`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mmjudge.store.blocks import known_fields
from mmjudge.testbank.derive import BankRule


@dataclass(frozen=True)
class ScaleCuts:
    """The cut points a local judge turned its score into grades with, on one modality."""

    cut_points: list[float]
    """Increasing, one fewer than the scale's grades."""
    source: str
    """The setting they were given in or derived from."""


@dataclass(frozen=True)
class Grading:
    """Local judges: the cut points used per modality and where they came from (the
    ``grading`` block; what :meth:`mmjudge.judges.base.JudgeAPI.check_scale` returns)."""

    by_modality: dict[str, ScaleCuts] = field(default_factory=dict)
    """Each modality's cut points (the block's keys are the modalities)."""

    def to_json(self) -> dict[str, Any]:
        """The block as ``summary.json`` holds it."""
        return {name: dataclasses.asdict(cuts) for name, cuts in self.by_modality.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Grading:
        """The block from ``summary.json`` (or from the judge's ``check_scale``)."""
        return cls(
            {
                str(name): ScaleCuts(
                    cut_points=[float(v) for v in cuts.get("cut_points") or []],
                    source=str(cuts.get("source") or ""),
                )
                for name, cuts in data.items()
                if isinstance(cuts, dict)
            }
        )


@dataclass(frozen=True)
class BankInfo:
    """The test bank a bank-grading cell graded against (the ``testbank`` block)."""

    kind: str = ""
    """``nuggets`` or ``questions``."""
    version: str = ""
    """The bank's content hash; every row records it too."""
    path: str | None = None
    """Its file, when it has one."""
    queries: int = 0
    """Queries it has entries for."""
    entries: int = 0
    """Entries, over all queries."""
    calls: str = "item"
    """``prompt.bank_calls``: one call per item or per entry."""
    spans: bool = False
    """``prompt.spans``: whether the judge quoted its support."""
    derivation: BankRule = field(default_factory=BankRule)
    """How the label follows from the entries' grades."""

    def to_json(self) -> dict[str, Any]:
        """The block as ``summary.json`` holds it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BankInfo:
        """The block from ``summary.json``."""
        return cls(
            **{
                **known_fields(cls, data),
                "derivation": BankRule(**known_fields(BankRule, data.get("derivation"))),
            }
        )


@dataclass(frozen=True)
class TrainedOn:
    """A judge trained on graded items (``mmjudge distill``): where it comes from, and which of
    the cell's items it learnt from (the ``trained_on`` block). The run's agreement figures
    leave those items out (:func:`mmjudge.studies.run_agreement.agreement`)."""

    manifest: str
    """The judge's manifest (``distilled.json``)."""
    source: str
    """The run or sweep folder its training items came from."""
    teacher: str
    """Whose grades it learnt: a judge's name, a label file, or ``humans``."""
    dataset: str
    """The dataset it was trained on."""
    base: str
    """The checkpoint training started from."""
    seed: int
    """Training's seed."""
    epochs_done: int
    """Epochs of training kept."""
    n_trained: int
    """Items it was trained on, in all."""
    held_out_vs_teacher: str
    """Its κ against the teacher on the held-out queries, as ``mmjudge distill`` measured it."""
    held_out_vs_people: str | None = None
    """Its κ against people on those queries (None: no human grades)."""
    items: list[str] = field(default_factory=list)
    """Keys (``query_id<TAB>result_id``) of the cell's items it was trained on, sorted (before
    the run is summarised: every item it was trained on)."""

    def scope(self, n_scored: int) -> str:
        """What a κ of the cell is measured on, in words (the report's note beside it)."""
        return (
            f"κ on {n_scored} items it was not trained on; {len(self.items)} training items "
            "left out"
        )

    def provenance(self) -> str:
        """Where the judge comes from, in one line."""
        people = f", vs people {self.held_out_vs_people}" if self.held_out_vs_people else ""
        return (
            f"trained on {self.n_trained} items of {self.dataset} graded by {self.teacher} "
            f"({self.source}), from {self.base}, seed {self.seed}, {self.epochs_done} epochs; "
            f"held-out κ vs teacher {self.held_out_vs_teacher}{people}"
        )

    def among(self, keys: Iterable[str]) -> TrainedOn:
        """This block with :attr:`items` narrowed to ``keys`` (a run's items)."""
        trained = set(self.items)
        return dataclasses.replace(self, items=sorted({key for key in keys if key in trained}))
