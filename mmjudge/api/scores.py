"""Score judges' label files against human labels: what ``mmjudge agree`` prints, as typed
results (:class:`~mmjudge.studies.judge_files.JudgeAgreement` per judge and panel)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmjudge.errors import ConfigError

if TYPE_CHECKING:
    from mmjudge.api.score_files import Scored
    from mmjudge.studies.judge_files import JudgeAgreement


@dataclass(frozen=True)
class LabelScores:
    """Every judge's (and panel's) agreement with the human labels, and the settings used."""

    rows: list[JudgeAgreement]
    """One per judge file, in the order given, then one per panel (``panel:<how>``)."""
    scale: list[int]
    """The grade scale the labels were checked against."""
    relevant_from: float
    """The lowest grade counted as relevant for the binarised κ and P@10."""
    settings: dict[str, Any]
    """The settings as ``mmjudge agree --format json`` prints them."""
    scored: Scored = field(repr=False, compare=False)
    """The command's own result, for :meth:`text`."""

    def __getitem__(self, name: str) -> JudgeAgreement:
        """The row of the judge (file stem) or panel (``panel:<how>``) named ``name``.

        Raises:
            KeyError: no row has that name.
        """
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"{name!r}: not among {[row.name for row in self.rows]}")

    def text(self, form: str = "table") -> str:
        """What ``mmjudge agree --format FORM`` prints: ``table``, ``csv`` or ``json``.

        Raises:
            ValueError: another format.
        """
        from mmjudge.api.score_files import render

        if form not in ("table", "csv", "json"):
            raise ValueError(f"format {form!r}: use table, csv or json")
        return render(self.scored, form)


def score_labels(
    human: str | Path,
    judges: Sequence[str | Path],
    *,
    scale: Sequence[int] | str | None = None,
    out_of_scale: str = "error",
    relevant_from: float | None = None,
    panels: Sequence[str] = (),
    n_boot: int = 1000,
    seed: int = 0,
    systems: str | Path | None = None,
    measures: Sequence[str] = (),
    trained: Sequence[str | Path] = (),
) -> LabelScores:
    """Score judges' label files (TREC qrels) against a human qrels file, as ``mmjudge agree``
    does: Cohen's κ (unweighted, linear, quadratic) with bootstrap intervals over queries,
    the binarised κ, Krippendorff's α and accuracy, on the pairs both label.

    ``scale`` is the grade scale (``"0-3"``, ``"0,1,2,3"`` or a list; by default every whole
    number from the human file's lowest to its highest grade); ``out_of_scale`` says what a
    judge grade off it does (``error``, ``drop``, ``clip``, ``keep``); ``panels`` adds a row
    per way of combining all the judges (``majority``, ``mean``…); ``systems`` (a folder of
    TREC run files) with ``measures`` compares the system rankings under each judge's labels
    with those under the human labels. ``n_boot=0`` leaves the intervals out. ``trained``:
    folders of judges ``mmjudge distill`` trained; the pairs they learnt from are left out for
    every judge (``settings["left_out"]`` counts them).

    Raises:
        MMJudgeError: a file that cannot be used (missing, malformed, a grade off the scale);
            the message names it.
        ConfigError: an unknown ``out_of_scale`` or panel, or a scale that does not parse.
    """
    from mmjudge.api.score_files import score_files

    scored = score_files(
        human,
        list(judges),
        scale=checked_settings(scale, out_of_scale, panels),
        out_of_scale=out_of_scale,
        relevant_from=relevant_from,
        panels=panels,
        n_boot=n_boot,
        seed=seed,
        systems=systems,
        measures=measures,
        trained=trained,
    )
    return LabelScores(
        rows=scored.rows,
        scale=list(scored.inputs.scale.grades),
        relevant_from=float(scored.settings["relevant_from"]),
        settings=scored.settings,
        scored=scored,
    )


def checked_settings(
    scale: Sequence[int] | str | None, out_of_scale: str, panels: Sequence[str]
) -> list[int] | None:
    """The grade scale as a list (None: the human file's), once the settings are checked.

    Raises:
        ConfigError: an unknown ``out_of_scale`` or panel, or a scale that does not parse.
    """
    from mmjudge.api.score_files import parse_scale
    from mmjudge.metrics.aggregate import AGGREGATORS
    from mmjudge.metrics.label_scale import OUT_OF_SCALE

    if out_of_scale not in OUT_OF_SCALE:
        raise ConfigError(f"out_of_scale={out_of_scale!r}: use one of {', '.join(OUT_OF_SCALE)}")
    unknown = [how for how in panels if how not in AGGREGATORS]
    if unknown:
        raise ConfigError(f"panel {unknown[0]!r}: use one of {', '.join(AGGREGATORS)}")
    if not isinstance(scale, str):
        return None if scale is None else list(scale)
    try:
        return parse_scale(scale)
    except argparse.ArgumentTypeError as error:  # the command's parser reports it
        raise ConfigError(str(error)) from None
