"""How a race is run: the ``race`` settings of ``mmjudge race`` (see
:mod:`mmjudge.studies.race_rule` for the rule they set)."""

from __future__ import annotations

from dataclasses import dataclass

from mmjudge.config.values import check_whole, is_finite, require

#: What a race's κ are of (``race.target``): the population the graded items were drawn from,
#: or these items themselves.
TARGETS = ("population", "items")
#: Where a race's human grades come from (``race.labels``): every item the race judges, drawn
#: evenly, or only the items chosen round by round where the judges still racing disagree.
LABEL_DESIGNS = ("uniform", "ask")
#: Whether dear judges judge only a sample of a round's items (``race.spare_dear``).
SPARE_DEAR = ("off", "on")


@dataclass
class RaceConfig:
    """The settings of a race: its error budget, its margin, its rounds and its cap. The order
    the items are judged in is seeded by the top-level ``seed``."""

    alpha: float = 0.05
    """Chance, over the whole race, that it settles on a choice more than ``delta`` below the
    best cell's κ (on its ``target``; the error budget, spent across rounds)."""
    delta: float = 0.02
    """How far below the best κ the choice may fall."""
    round_items: int = 200
    """Items every active cell judges per round, at most: a round is never more than a
    quarter of the graded items, nor fewer than 25 of them
    (:func:`mmjudge.studies.race_rule.planned_round_items`; benchmarks/race.py: 100 to 300
    spend alike on LLMJudge; 200 keeps the rounds few)."""
    rho: float = 1.0
    """Exponent of the spending function α(u) = α·u^ρ over the share u of items drawn (1: an
    equal share of α per item drawn; larger keeps more for late rounds)."""
    max_usd: float | None = None
    """Dollar cap on the race's judgments (at the forecast's price per judgment); a race it
    ends chooses without the guarantee, and says so."""
    target: str = "population"
    """What the race's κ are of: ``population``, the judges' agreement on the population the
    graded items were drawn from (as the report's intervals: judging every item leaves an
    interval, and a pair it cannot separate is said to need more labelled items); or
    ``items``, these items themselves, for a set that is the whole population (intervals
    shrink by the finite-population correction and vanish once every item is judged)."""
    labels: str = "uniform"
    """Which items need a person's grade: ``uniform``, every item the race judges; or
    ``ask``, each round only the items chosen with known probabilities where the judges
    still racing disagree, plus an even share (:mod:`mmjudge.studies.race_labels`). With
    ``ask`` the target is the population."""
    label_oracle: str | None = None
    """With ``race.labels=ask``: a file of people's grades (TREC qrels, or JSON lines with
    ``query_id``, ``result_id`` and ``grade``) that answers the race's requests for grades, for
    a team with a graded pool, benchmarks and tests. Unset, each round that needs grades writes
    a labelling file into the sweep folder and the race stops until it is filled."""
    label_usd: float = 0.0
    """The price of one person's grade, in dollars: the race's closing lines and report give
    what its grades cost beside what its judges cost, and with ``race.labels=ask`` it sets the
    share asked among the items every judge grades alike, trading judge dollars against grade
    dollars (:func:`mmjudge.studies.race_labels.priced_uniform_share`). 0: not priced, a
    fixed share."""
    spare_dear: str = "off"
    """``on``: a cell at least twice the cheapest judging cell's price, other than the
    candidate, judges each new item only with a known probability, and its κ borrows the
    cheap judges' grades on the items it skipped (:mod:`mmjudge.studies.race_spare`). Needs
    ``race.labels=uniform`` and the population target; the race's simulation only
    (``benchmarks/race.py --spare-dear``): a grid's cells judge prefixes, not chosen items."""

    def validate(self) -> None:
        require(
            is_finite(self.alpha) and 0 < self.alpha < 1, "race.alpha", self.alpha, "use 0 < α < 1"
        )
        require(is_finite(self.delta) and self.delta >= 0, "race.delta", self.delta, "use δ >= 0")
        check_whole("race.round_items", self.round_items, 1)
        require(is_finite(self.rho) and self.rho > 0, "race.rho", self.rho, "use ρ > 0")
        require(
            self.max_usd is None or (is_finite(self.max_usd) and self.max_usd > 0),
            "race.max_usd",
            self.max_usd,
            "use a positive number of dollars, or null for no cap",
        )
        require(
            self.target in TARGETS, "race.target", self.target, f"use one of {', '.join(TARGETS)}"
        )
        require(
            self.labels in LABEL_DESIGNS,
            "race.labels",
            self.labels,
            f"use one of {', '.join(LABEL_DESIGNS)}",
        )
        require(
            self.labels == "uniform" or self.target == "population",
            "race.labels",
            self.labels,
            "asked grades estimate the population's κ: use race.target=population with it",
        )
        require(
            self.label_oracle is None or self.asks,
            "race.label_oracle",
            self.label_oracle,
            "a file answers grades the race asks for: set race.labels=ask with it",
        )
        require(
            is_finite(self.label_usd) and self.label_usd >= 0,
            "race.label_usd",
            self.label_usd,
            "use the dollars one person's grade costs (0 or more)",
        )

        require(
            self.spare_dear in SPARE_DEAR,
            "race.spare_dear",
            self.spare_dear,
            f"use one of {', '.join(SPARE_DEAR)}",
        )
        require(
            not self.spares or (self.labels == "uniform" and self.target == "population"),
            "race.spare_dear",
            self.spare_dear,
            "a sampled judge's κ rests on every item's person grade and estimates the "
            "population's: use it with race.labels=uniform and race.target=population",
        )

    @property
    def spares(self) -> bool:
        """Dear judges judge a sample of each round's items (``race.spare_dear=on``)."""
        return self.spare_dear == "on"

    @property
    def finite_population(self) -> bool:
        """The target is the graded items themselves (``race.target=items``)."""
        return self.target == "items"

    @property
    def asks(self) -> bool:
        """Human grades are asked round by round (``race.labels=ask``)."""
        return self.labels == "ask"
