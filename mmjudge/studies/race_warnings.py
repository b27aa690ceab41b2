"""What a race's console says when the race has ended and its answer needs a caution: a
chosen judge that may be no better than chance, and judges the race could not separate from
its choice with every item judged (see :mod:`mmjudge.studies.race_rule`).

Pure functions over the race's inputs and outcome; the command prints what they return.
"""

from __future__ import annotations

import math

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.metrics.scoring import Interval
from mmjudge.studies.race_labels import weighted_own
from mmjudge.studies.race_pairs import own_stats
from mmjudge.studies.race_records import (
    RaceOutcome,
    cannot_separate_text,
    more_items,
    unsettled,
)
from mmjudge.studies.race_rule import RaceInputs

#: The normal quantile of the chosen judge's κ interval: 95%, the level of the report's
#: intervals, which say a judge is above chance when theirs lies above 0.
Z95 = 1.959963984540054


def chosen_kappa(inputs: RaceInputs, outcome: RaceOutcome, rule: RaceConfig) -> Interval:
    """The chosen cell's κ̂ on the items it graded, with a 95% interval: the delete-one-item
    jackknife's normal interval (with asked grades, the design's linearised one), for the
    race's target (times the finite-population
    correction with ``race.target=items``)."""
    prefixes = np.asarray(outcome.prefixes, dtype=np.int64)
    c = outcome.chosen
    if inputs.weights is None:
        stats = own_stats(inputs.reference, inputs.grades, prefixes, inputs.n_grades)
        estimate, se = float(stats.kappa[c]), float(stats.se[c])
    else:  # the grades asked, weighted by 1/π, with the design's error
        asked = weighted_own(
            inputs.reference, inputs.grades, prefixes, inputs.weights, inputs.n_grades
        )
        estimate, se = float(asked.kappa[c]), float(asked.se[c])
    if rule.finite_population:
        se *= math.sqrt(max(1.0 - prefixes[c] / inputs.grades.shape[1], 0.0))
    if not (math.isfinite(estimate) and math.isfinite(se)):
        return Interval(estimate, math.nan, math.nan)
    return Interval(estimate, estimate - Z95 * se, estimate + Z95 * se)


def race_warnings(inputs: RaceInputs, outcome: RaceOutcome, rule: RaceConfig) -> list[str]:
    """The cautions of an ended race, one line each: the chosen judge may be no better than
    chance (its 95% κ interval reaches 0, or is not known), and, when the race ended with
    judges it could not separate from its choice at this size (``cannot separate``, or the
    items ran out with the population as the target), each of them, with about how many
    more labelled items would (:func:`~mmjudge.studies.race_records.
    more_items`). Empty when there is nothing to warn of."""
    names = outcome.names or tuple(str(c) for c in range(inputs.grades.shape[0]))
    chosen = names[outcome.chosen]
    found = chosen_kappa(inputs, outcome, rule)
    lines = []
    if not found.above_chance:
        shown = (
            f"{found.estimate:.3f} [{found.low:+.3f}, {found.high:+.3f}]"
            if math.isfinite(found.low)
            else "with no interval"
        )
        lines.append(
            f"{chosen} may be no better than chance: its κ {shown} on "
            f"{outcome.prefixes[outcome.chosen]:,} items reaches 0 (a judge answering at "
            "random has κ 0)"
        )
    last = outcome.rounds[-1] if outcome.rounds else None
    at_size = outcome.ending == "cannot separate" or (
        outcome.ending == "items ran out" and last is not None and last.target == "population"
    )
    if last is not None and at_size:
        prices = inputs.prices
        for evidence in unsettled(last):
            needed = more_items(
                evidence,
                rule.delta,
                not_cheaper=bool(prices[evidence.cell] >= prices[outcome.chosen]),
            )
            lines.append(cannot_separate_text(chosen, names[evidence.cell], evidence, needed))
    return lines
