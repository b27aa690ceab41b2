"""From entry grades (0-5) to a grade on the dataset's scale: the declared rule.

Two rules, chosen by ``prompt.rule``:

- ``coverage`` (default): the share of the query's entries graded at least
  ``prompt.covered_from`` (4 unless set); the grade is the highest one whose cut point the
  share reaches. Default cut points spread evenly over (0, 1]: on a 0-2 scale half the
  entries covered give 1 and all of them 2; on 0-3, a third, two thirds, all.
- ``best``: the best entry grade; cut points spread evenly over (0, 5] by default (0-2: 2.5
  and 5, so a best grade of 3 or 4 gives 1 and 5 gives 2).

``prompt.cuts`` sets the cut points, one per grade above the lowest. An entry the answer did
not grade counts as graded 0. The rule is written into every run's summary and shown in the
report (:func:`describe`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mmjudge.config import PromptConfig
from mmjudge.errors import ConfigError
from mmjudge.testbank.bank import KINDS

RULES = ("coverage", "best")
CALLS = ("item", "entry")
TOP = 5
_EPSILON = 1e-9


@dataclass(frozen=True)
class BankRule:
    """How a test-bank cell's label follows from its entries' grades, as the summary's
    ``testbank.derivation`` block records it (:func:`describe`)."""

    rule: str = ""
    """``coverage`` or ``best``."""
    covered_from: int | None = None
    """Coverage: the entry grade (of 5) from which an entry counts as covered."""
    cuts: list[float] = field(default_factory=list)
    """Where each grade above the lowest starts."""
    text: str = ""
    """The rule in a sentence, for the report."""


def check_bank_prompt(prompt: PromptConfig) -> None:
    """The test-bank settings of a prompt, checked before anything runs."""
    if prompt.bank not in KINDS:
        raise ConfigError(f"prompt.bank={prompt.bank!r} is not allowed; use nuggets or questions")
    if prompt.bank_calls not in CALLS:
        raise ConfigError(
            f"prompt.bank_calls={prompt.bank_calls!r} is not allowed; use item (one call per "
            "result with the whole bank) or entry (one call per result and entry)"
        )
    if prompt.rule not in RULES:
        raise ConfigError(f"prompt.rule={prompt.rule!r} is not allowed; use coverage or best")
    if not (isinstance(prompt.covered_from, int) and 1 <= prompt.covered_from <= TOP):
        raise ConfigError(
            f"prompt.covered_from={prompt.covered_from!r} is not allowed; use an entry grade 1-5"
        )
    cuts = [float(c) for c in prompt.cuts]
    if any(b <= a for a, b in itertools.pairwise(cuts)):
        raise ConfigError(f"prompt.cuts={cuts} is not allowed; the cut points must increase")


def cut_points(prompt: PromptConfig, grades: Sequence[int]) -> list[float]:
    """One cut point per grade above the lowest (given, or spread evenly)."""
    steps = len(grades) - 1
    top = 1.0 if prompt.rule == "coverage" else float(TOP)
    if not prompt.cuts:
        return [top * i / steps for i in range(1, steps + 1)]
    cuts = [float(c) for c in prompt.cuts]
    if len(cuts) != steps:
        raise ConfigError(
            f"prompt.cuts={cuts} gives {len(cuts)} cut points; the scale {list(grades)} needs "
            f"{steps}, one per grade above the lowest"
        )
    if not all(0 < c <= top for c in cuts):
        unit = "shares above 0 and at most 1" if top == 1.0 else "entry grades above 0, at most 5"
        raise ConfigError(f"prompt.cuts={cuts} is not allowed; for rule {prompt.rule} use {unit}")
    return cuts


def score(prompt: PromptConfig, entry_grades: Mapping[str, int], n_entries: int) -> float:
    """The number the rule places on the scale: a share covered, or the best grade."""
    if prompt.rule == "best":
        return float(max(entry_grades.values(), default=0))
    covered = sum(1 for g in entry_grades.values() if g >= prompt.covered_from)
    return covered / n_entries if n_entries else 0.0


def derive(
    prompt: PromptConfig, grades: Sequence[int], entry_grades: Mapping[str, int], n_entries: int
) -> int:
    """The grade on the scale for one result."""
    value = score(prompt, entry_grades, n_entries)
    grade = grades[0]
    for cut, candidate in zip(cut_points(prompt, grades), grades[1:], strict=True):
        if value + _EPSILON >= cut:
            grade = candidate
    return int(grade)


def describe(prompt: PromptConfig, grades: Sequence[int]) -> BankRule:
    """The rule as the summary records it, with a sentence for the report."""
    cuts = cut_points(prompt, grades)
    if prompt.rule == "coverage":
        steps = ", ".join(f"{g} from {c:.0%}" for g, c in zip(grades[1:], cuts, strict=True))
        text = (
            f"share of entries graded ≥ {prompt.covered_from} of 5: {grades[0]} below "
            f"{cuts[0]:.0%}, {steps}"
        )
    else:
        steps = ", ".join(f"{g} from {c:g}" for g, c in zip(grades[1:], cuts, strict=True))
        text = f"best entry grade (0-5): {grades[0]} below {cuts[0]:g}, {steps}"
    return BankRule(
        rule=prompt.rule,
        covered_from=prompt.covered_from if prompt.rule == "coverage" else None,
        cuts=cuts,
        text=text,
    )
