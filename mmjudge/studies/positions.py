"""κ by the place a result was shown at in its call (``prompt.passages_per_call`` above 1).

Results are shown in an order drawn with the run's seed, so each place holds a random share
of the results and a difference between places is the judge's position effect, not the
data's. Each place is scored as the whole run is (:func:`~mmjudge.studies.run_agreement.
agreement`: the judge against the annotators' consensus, with its interval), on the rows
shown there; a query's lone last result, sent alone, has no place and is left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mmjudge.store import Bounds, CallPositions
from mmjudge.store.blocks import PositionKappa
from mmjudge.studies.run_agreement import agreement

if TYPE_CHECKING:
    import pandas as pd


def call_positions(
    frame: pd.DataFrame, grades: list[int], relevant_from: float
) -> CallPositions | None:
    """The ``positions`` block of a run's rows; None for a run with no call about several
    results."""
    if "call_position" not in frame or not frame["call_position"].notna().any():
        return None
    shown = frame[frame["call_position"].notna()]
    # An item written twice (a resumed run) counts once, its last row.
    shown = shown.drop_duplicates(["query_id", "result_id"], keep="last")
    first = shown[shown["call_position"] == 1]  # one row per call
    calls = len(first)
    places: list[PositionKappa] = []
    for position in sorted(int(p) for p in shown["call_position"].unique()):
        rows = shown[shown["call_position"] == position]
        scored = agreement(rows, grades, relevant_from)
        places.append(
            PositionKappa(
                position=position,
                n=int(scored.n_scored or 0),
                kappa=Bounds.of(scored.interval("kappa")),
            )
        )
    reasked = int(frame["reasked"].sum()) if "reasked" in frame else 0
    sizes = (first if calls else shown)["call_size"].astype(float)
    mean = float(sizes.mean())
    return CallPositions(calls=calls, results_per_call=mean, reasked=reasked, by_position=places)
