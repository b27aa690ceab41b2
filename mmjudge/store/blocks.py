"""The parts of a run summary: counts, errors, dollars, calls, ensembles, the cell and how it
ended (agreement has a module of its own, :mod:`mmjudge.store.agreement`). Each is written as
one block of ``summary.json`` (or, for the cell, the status and an ensemble's settings, at its
top level); see :mod:`mmjudge.store.summary`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from mmjudge.store.bounds import Bounds

if TYPE_CHECKING:  # pandas loads with the first summary, not before the first call
    import pandas as pd

SINGLE = "single"
"""``kind`` of a run that judged items itself (the others are ``panel`` and ``cascade``)."""


def known_fields(cls: type, data: Any) -> dict[str, Any]:
    """The entries of ``data`` that are fields of the dataclass ``cls``."""
    if not isinstance(data, dict):
        return {}
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


@dataclass(frozen=True)
class ErrorCounts:
    """The failed rows of a run."""

    by_kind: dict[str, int] = field(default_factory=dict)
    """Failed rows by kind (the error's leading name, e.g. ``RateLimitError``)."""
    first: str | None = None
    """The first error message, or null."""


@dataclass(frozen=True)
class CostFigures:
    """Dollars, from the rows' priced usage (see :func:`mmjudge.costs.cost_figures`)."""

    total_usd: float = 0.0
    """What every judgment of the run costs, cache hits included."""
    spent_usd: float = 0.0
    """What this run paid: calls it made, plus requests it had to send again."""
    usd_per_million: float = 0.0
    """``total_usd`` per million judgments."""
    image_usd_per_million: float = 0.0
    """The image share of ``usd_per_million``."""
    text_usd_per_million: float = 0.0
    """The rest of ``usd_per_million``."""
    resent_requests: int = 0
    """Requests lost in flight by a stopped process and sent again."""
    resent_usd: float = 0.0
    """Their estimated cost (each priced as the call that replaced it); in ``spent_usd``."""
    possibly_billed_requests: int = 0
    """Sends of the cell, over every run in its folder, that may have reached the provider
    and got no answer (timed out or cut off after leaving, given up in flight at a stop,
    lost by a killed process between marking and recording the send); the runner's count,
    ``calls.possibly_billed`` (the rows' sum for a virtual run)."""
    possibly_billed_usd: float = 0.0
    """Their estimated cost, each at its call's forecast: a possible extra beside
    ``spent_usd``, not part of it."""


@dataclass(frozen=True)
class PromptCacheUse:
    """What the provider's prompt cache did in a run, as the provider reported it: the
    ``prompt_cache`` block (:func:`mmjudge.costs.run_dollars.prompt_cache_use`)."""

    input_tokens: int = 0
    """Input tokens of the run's answered calls (cached and written ones included)."""
    read_tokens: int = 0
    """Of them, tokens read from the provider's cache."""
    write_tokens: int = 0
    """Of them, tokens written to it (billed above the input price on Anthropic)."""
    hit_rate: float = 0.0
    """``read_tokens`` over ``input_tokens``."""
    saved_usd: float = 0.0
    """List price of the same tokens with no cache minus what they cost (below zero where
    writes cost more than reads saved)."""
    saved_usd_per_million: float = 0.0
    """``saved_usd`` per million judgments."""


@dataclass(frozen=True)
class TokenMeans:
    """Mean tokens per answered judgment."""

    mean_input: float = 0.0
    """Input tokens, image tokens included."""
    mean_output: float = 0.0
    """Output tokens, reasoning included."""
    mean_image: float = 0.0
    """Estimated or reported image tokens."""


@dataclass(frozen=True)
class Latency:
    """Seconds per answered judgment."""

    p50: float = 0.0
    """The median."""
    p95: float = 0.0
    """The 95th percentile."""


@dataclass(frozen=True)
class RowFigures:
    """What a run's rows say before anything is scored or priced: counts, errors, tokens
    and latency (see :func:`row_figures`)."""

    n_judgments: int
    """Rows."""
    n_errors: int
    """Rows with an item-level error."""
    n_unparseable: int
    """Answered rows without a grade."""
    n_truncated: int
    """Rows whose result text was cut."""
    errors: ErrorCounts
    """Failed rows by kind, and the first message."""
    tokens: TokenMeans
    """Mean tokens per answered row."""
    latency: Latency
    """Latency of answered rows."""


def row_figures(frame: pd.DataFrame) -> RowFigures:
    """The figures of a run's rows (a frame from :func:`mmjudge.store.load_judgments`)."""
    import pandas as pd

    n = len(frame)
    answered = frame[frame["error"].isna()] if n else frame
    errors = frame["error"].dropna().astype(str) if n else pd.Series(dtype=str)
    kinds = errors.map(lambda text: text.split(":", 1)[0].strip() or "error")
    some = len(answered) > 0
    return RowFigures(
        n_judgments=n,
        n_errors=int(frame["error"].notna().sum()) if n else 0,
        n_unparseable=int((frame["error"].isna() & frame["label"].isna()).sum()) if n else 0,
        n_truncated=int(frame["truncated"].sum()) if n else 0,
        errors=ErrorCounts(
            by_kind={str(k): int(v) for k, v in kinds.value_counts().sort_index().items()},
            first=errors.iloc[0] if len(errors) else None,
        ),
        tokens=TokenMeans(
            mean_input=float(answered["input_tokens"].mean()) if some else 0.0,
            mean_output=float(answered["output_tokens"].mean()) if some else 0.0,
            mean_image=float(answered["image_tokens"].mean()) if some else 0.0,
        ),
        latency=Latency(
            p50=float(answered["latency_s"].quantile(0.5)) if some else 0.0,
            p95=float(answered["latency_s"].quantile(0.95)) if some else 0.0,
        ),
    )


@dataclass
class CallCounts:
    """What the runner did (absent for skipped cells and virtual runs): the run engine counts
    into one of these as it calls (so it is not frozen), and the summary keeps it."""

    api_calls: int = 0
    """Calls answered by the judge."""
    cache_hits: int = 0
    """Answers taken from the response cache."""
    retries: int = 0
    """Attempts after a first one failed."""
    failures: int = 0
    """Items no retry got an answer for."""
    spent_usd: float = 0.0
    """Dollars paid for calls (resent requests included)."""
    stopped_by_budget: bool = False
    """Whether ``runner.max_cost_usd`` stopped scheduling calls."""
    errors_by_kind: dict[str, int] = field(default_factory=dict)
    """Failures by the error's type."""
    resent: int = 0
    """Requests sent again because a stopped process had sent them and got no answer."""
    resent_usd: float = 0.0
    """Estimated cost of those lost first sends."""
    abandoned_in_flight: int = 0
    """Calls in flight that this run gave up when it stopped (whoever sends them again counts
    them as resent)."""
    abandoned_usd: float = 0.0
    """Their cost at the calls' forecasts (they have no row yet); in ``possibly_billed_usd``."""
    handed_on: int = 0
    """Of the calls abandoned in flight, those whose claims in the response cache hand them to
    the next run of the cell, which counts each again as resent or maybe resent (so a resume
    does not carry them on as possibly billed as well)."""
    handed_on_usd: float = 0.0
    """Their cost at the calls' forecasts."""
    maybe_resent: int = 0
    """Requests sent again whose earlier send a killed process may or may not have made."""
    possibly_billed: int = 0
    """Sends of the cell that may have reached the provider and got no answer (timed out or
    cut off after leaving, maybe resent, abandoned at a stop, left in flight by a killed
    run), over every run in its folder: what the folder's ledger adds up to
    (:mod:`mmjudge.store.unanswered`), less those a later answer proved were received (then
    counted as resent). The one figure the cost block, the console and the budget read."""
    possibly_billed_usd: float = 0.0
    """Their estimated cost at the calls' forecasts; not in ``spent_usd``."""
    answered_by_another_process: int = 0
    """Items another live process paid for; this run took their answers from the cache."""
    batch: dict[str, int] | None = None
    """Batch-mode counts (batches submitted, resumed, follow-ups); absent in sync mode."""

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if self.batch is None:
            del data["batch"]
        return data

    def absorb(self, other: CallCounts, spent_before: float) -> None:
        """Add ``other``'s counts, made by a runner that started with ``spent_before`` already
        spent, to these (the budget stop and the batch counts stay this run's own)."""
        for name in _ADDED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.spent_usd += other.spent_usd - spent_before
        for kind, n in other.errors_by_kind.items():
            self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + n


#: The counts :meth:`CallCounts.absorb` adds as they are.
_ADDED = tuple(
    f.name
    for f in dataclasses.fields(CallCounts)
    if f.name not in ("spent_usd", "stopped_by_budget", "errors_by_kind", "batch")
)


@dataclass(frozen=True)
class UnstableItem:
    """An item whose samples disagree."""

    query_id: str
    result_id: str
    labels: list[float | None]
    """Each sample's grade, in sample order (None where it gave none)."""


@dataclass(frozen=True)
class Stability:
    """Test–retest (``runner.samples`` above 1): κ between the judge's samples, the unstable
    items and what the repeats cost; the ``stability`` block
    (:func:`mmjudge.studies.stability.stability_summary`)."""

    samples: int
    """How many times each item was asked (the first run included)."""
    n_items: int
    """Items with at least two answered samples (every figure is over these)."""
    kappa: Bounds
    """κ between samples (the mean over pairs for more than two) with its interval."""
    kappa_pairs: dict[str, float | None] = field(default_factory=dict)
    """κ of each pair of samples, keyed ``"0 vs 1"``."""
    n_unstable: int = 0
    """Items whose answered samples do not all carry the same grade."""
    unstable_share: float | None = None
    """``n_unstable`` over ``n_items`` (None without items)."""
    unstable: list[UnstableItem] = field(default_factory=list)
    """The first unstable items, with each sample's grade."""
    total_usd: float = 0.0
    """What the repeats cost, answers from the cache included."""
    spent_usd: float = 0.0
    """What the repeats spent (0 for a virtual run: its members paid)."""

    def to_json(self) -> dict[str, Any]:
        """The block as ``summary.json`` holds it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stability:
        """The block from ``summary.json``."""
        values = known_fields(cls, data)
        return cls(
            **{
                **values,
                "samples": int(data.get("samples") or 0),
                "n_items": int(data.get("n_items") or 0),
                "kappa": Bounds.of(data.get("kappa")),
                "kappa_pairs": dict(data.get("kappa_pairs") or {}),
                "unstable": [
                    UnstableItem(**known_fields(UnstableItem, item))
                    for item in data.get("unstable") or []
                ],
            }
        )


@dataclass(frozen=True)
class PositionKappa:
    """κ of the results shown at one place in their calls."""

    position: int
    """The place: 1 for the results shown first (``R1``)."""
    n: int
    """Results scored at this place."""
    kappa: Bounds
    """κ against the annotators' consensus, with its interval."""


@dataclass(frozen=True)
class CallPositions:
    """Several results per call (``prompt.passages_per_call`` above 1): how the calls went
    and κ by the place a result was shown at; the ``positions`` block
    (:func:`mmjudge.studies.positions.call_positions`)."""

    calls: int
    """Calls about several results (a query's lone last result, sent alone, is not one)."""
    results_per_call: float
    """Results those calls showed, on average."""
    reasked: int
    """Results the answer left without a grade, asked again on their own."""
    by_position: list[PositionKappa] = field(default_factory=list)
    """κ at each place, first place first."""


@dataclass(frozen=True)
class Member:
    """One run a panel or cascade was built from."""

    role: str
    """``member`` (of a panel), ``cheap`` or ``expensive`` (of a cascade)."""
    run_id: str
    """The member run's id."""
    run_dir: str
    """Its folder, relative to the ensemble's."""
    model: str | None
    """Its judge."""
    prompt_id: str | None
    """Its prompt."""
    modality: str | None
    """What its judge saw."""
    kappa: float | None
    """Its own κ against the consensus."""
    usd_per_million: float
    """Its cost per million judgments."""

    @property
    def name(self) -> str:
        """``model/prompt``, with the role unless it is a panel member."""
        text = f"{self.model}/{self.prompt_id}"
        return text if self.role == "member" else f"{text} ({self.role})"


@dataclass(frozen=True)
class Ensemble:
    """How a virtual run (a panel or a cascade) combined its members."""

    members: list[Member]
    """The runs it was built from."""
    aggregator: str | None = None
    """Panels: how grades were combined (``majority``, ``mean``...)."""
    seed: int | None = None
    """Panels: the seed of random tie-breaks."""
    rules: list[str] | None = None
    """Cascades: what sends an item to the expensive judge."""
    min_confidence: int | None = None
    """Cascades: stated confidence below which the ``confidence`` rule escalates."""
    n_escalated: int | None = None
    """Cascades: items sent to the expensive judge."""
    escalation_rate: float | None = None
    """Cascades: the share of items escalated."""

    def settings(self, kind: str) -> dict[str, Any]:
        """The combining settings, as the summary and its ``config`` list them."""
        if kind == "panel":
            return {"aggregator": self.aggregator, "seed": self.seed}
        return {"rules": self.rules, "min_confidence": self.min_confidence}

    def to_json(self, kind: str) -> dict[str, Any]:
        data = {**self.settings(kind), "members": [dataclasses.asdict(m) for m in self.members]}
        if kind == "cascade":
            data.update(n_escalated=self.n_escalated, escalation_rate=self.escalation_rate)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Ensemble:
        members = [Member(**known_fields(Member, m)) for m in data.get("members") or []]
        return cls(**{**known_fields(cls, data), "members": members})

    @property
    def how(self) -> str:
        """The aggregator, or the cascade's rules."""
        return self.aggregator or "+".join(self.rules or [])


@dataclass(frozen=True)
class CellInfo:
    """Which cell a run is: the judge, what it saw, the dataset, the prompt and the prices."""

    dataset: str
    """Dataset name."""
    model: str
    """The judge's name (for an ensemble, a description of it)."""
    model_id: str
    """The provider's model id."""
    provider: str
    """Provider name (``panel`` or ``cascade`` for an ensemble)."""
    modality: str
    """``text``, ``mm`` or ``image`` (joined with ``+`` when members differ)."""
    prompt_id: str
    """The prompt variant (joined with ``+`` when members differ)."""
    pricing_sheet: str | None
    """The price sheet's date."""
    grades: list[int]
    """The dataset's scale."""
    endpoint: str | None = None
    """Where calls went when not to the provider's public endpoint (redacted)."""
    kind: str = SINGLE
    """``single``, ``panel`` or ``cascade``."""
    perturb: str = "none"
    """The perturbation applied to each result before it was judged (``none``: clean)."""


@dataclass(frozen=True)
class CellStatus:
    """How a cell ended (see :mod:`mmjudge.store.status`)."""

    status: str = "complete"
    """``complete``, ``partial``, ``failed``, ``stopped_by_budget``, ``interrupted``,
    ``skipped``."""
    status_reason: str | None = None
    """Why, in a line."""
    exit_code: int = 0
    """What the process exits with for this cell."""
    stopped_because: str | None = None
    """The error that ended the run early, or null."""
    skip_reason: str | None = None
    """Why a skipped cell could not run."""


class PossibleExtra(NamedTuple):
    """Sends that may have been billed without an answer, beside the known spend."""

    sends: int
    usd: float


def possible_extra(cost: CostFigures) -> PossibleExtra:
    """What a cell may have paid beyond its known spend, over every run in its folder (the
    runner's count, ``calls.possibly_billed``, as the cost block carries it: calls abandoned
    in flight at a stop included). Every view of the figure (the report, the console) reads
    it here."""
    return PossibleExtra(cost.possibly_billed_requests, cost.possibly_billed_usd)
