"""The ``metrics`` block of ``summary.json``: the judge against the annotators, as its run
scored it (:class:`Agreement`). It holds the measure catalogue's figures by their keys
(:mod:`mmjudge.metrics.catalogue` declares them; this room, before the metrics, reads and
writes them without a list of names), so a new measure needs no change here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The entries of the ``metrics`` block that are not a measure's figure, in the order they are
#: written: the counts and the scale before the figures, the tables after them.
_AGREEMENT_HEAD = (
    "n",
    "n_scored",
    "n_queries",
    "n_unparseable",
    "n_off_scale",
    "unparseable_rate",
    "grades",
    "relevant_from",
)
_AGREEMENT_TABLES = ("intervals", "bootstrap", "pairwise", "confusion_matrix", "label_distribution")


@dataclass(frozen=True)
class Agreement:
    """The judge against the annotators' consensus (the ``metrics`` block; computed by
    :func:`mmjudge.metrics.scoring.agreement_summary`, where every field is defined).
    Only ``n`` is set when there was nothing to score.

    The figures are those of the measure catalogue (:mod:`mmjudge.metrics.catalogue`), held
    by their keys in the block, so a new measure needs nothing here: ``values["kappa"]``,
    ``values["alpha_pooled"]``; ``by_rater["human_human_kappa"]``. Each also reads as an
    attribute (``metrics.kappa``, ``metrics.kappa_by_annotator``); a measure a run did not
    compute (it was written before the measure existed) reads as None."""

    n: int = 0
    """Answered items."""
    n_scored: int | None = None
    """Items with a judge grade and a consensus grade on the scale: what every number is on."""
    n_queries: int | None = None
    """Queries of the scored items."""
    n_unparseable: int | None = None
    """Answers without a readable grade."""
    n_off_scale: int | None = None
    """Grades off the scale, left out."""
    unparseable_rate: float | None = None
    """``n_unparseable / n``."""
    grades: list[float] | None = None
    """The scale."""
    relevant_from: float | None = None
    """The lowest grade counted as relevant (binarised κ)."""
    values: dict[str, float | None] = field(default_factory=dict)
    """Each measure's figure by its key: the judge against the consensus under the measure's
    name (``kappa``, ``alpha``...), pooled and humans-only figures under ``<name>_pooled``
    and ``<name>_humans``."""
    intervals: dict[str, dict[str, float | None]] | None = None
    """95% intervals of the measures that have one: ``{estimate, low, high}`` by name."""
    bootstrap: dict[str, Any] | None = None
    """How the intervals were drawn (resamples, seed, level, what was resampled)."""
    pairwise: dict[str, Any] | None = None
    """Agreement on the order of pairs of results of one query."""
    confusion_matrix: list[list[int]] | None = None
    """Rows: consensus grade; columns: judge grade."""
    label_distribution: dict[str, dict[str, int]] | None = None
    """Grade counts of the judge, the consensus and each annotator."""
    by_rater: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Figures per annotator or pair of annotators, by key: the judge against each annotator
    (``kappa_by_annotator``), each pair of annotators, the ceiling (``human_human_kappa``)."""

    def __getattr__(self, name: str) -> float | dict[str, float | None] | None:
        # only for names that are not fields: a figure by its key in the block
        if name.startswith("_") or not self.__dict__:
            raise AttributeError(name)
        if name in self.__dict__["by_rater"]:
            found: dict[str, float | None] = self.__dict__["by_rater"][name]
            return found
        return self.value(name)

    @property
    def kappa(self) -> float | None:
        """Cohen's κ, unweighted, against the consensus: the headline figure."""
        return self.value("kappa")

    @property
    def human_human_kappa(self) -> dict[str, float | None]:
        """κ between each pair of annotators: the ceiling ({} with one annotator)."""
        return dict(self.by_rater.get("human_human_kappa") or {})

    def value(self, key: str) -> float | None:
        """The figure under ``key`` in the block, None where the run has none."""
        found = self.values.get(key)
        return None if found is None else float(found)

    def to_json(self) -> dict[str, Any]:
        if self.n_scored is None:
            return {"n": self.n}
        return {
            **{key: getattr(self, key) for key in _AGREEMENT_HEAD},
            **self.values,
            **{key: getattr(self, key) for key in _AGREEMENT_TABLES},
            **self.by_rater,
        }

    @classmethod
    def from_json(cls, data: Any) -> Agreement:
        """The block from ``summary.json`` (of any version: the measures' entries are read by
        their form, a number or null a figure and an object of them a per-rater table, so a
        block holds whichever measures its run computed)."""
        if not isinstance(data, dict):
            return cls()
        known = {*_AGREEMENT_HEAD, *_AGREEMENT_TABLES}
        values: dict[str, float | None] = {}
        by_rater: dict[str, dict[str, float | None]] = {}
        for key, value in data.items():
            if key in known:
                continue
            if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
                values[key] = value
            elif isinstance(value, dict):
                by_rater[key] = dict(value)
        fields = {k: v for k, v in data.items() if k in known}
        return cls(**fields, values=values, by_rater=by_rater)

    def interval(self, name: str = "kappa") -> dict[str, float | None] | None:
        """The ``{estimate, low, high}`` of one measure, when it was computed."""
        return (self.intervals or {}).get(name)
