"""A sweep or race folder's judges scored against people's grades: ``mmjudge agree DIR``.

Each completed single judge below the folder gets its κ with its interval, against the
dataset's own grades where the dataset has any (the annotators' consensus, with the query
bootstrap the report uses), else against the grades a race in the folder asked for as it went
(``race.labels=ask``), each weighted 1/π, with the design's interval. Which grades were read is
said in one line (:mod:`mmjudge.studies.reference_grades`, the choice ``mmjudge frontier``
makes too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmjudge.errors import MMJudgeError
from mmjudge.metrics import scoring
from mmjudge.store import SavedRun, completed_runs
from mmjudge.studies.reference_grades import grades_for


@dataclass(frozen=True)
class FolderJudge:
    """One judge of a folder and its κ against people's grades."""

    name: str
    """The judge's name (``model/prompt/modality``)."""
    run_dir: str
    """Its run folder."""
    kappa: scoring.Interval
    """κ with its interval (``nan`` where undefined)."""
    n_items: int
    """Items it graded that a person graded too."""


@dataclass(frozen=True)
class FolderAgreement:
    """Every judge of one dataset of a folder, with the grades they were scored against."""

    dataset: str
    """The dataset."""
    grades: str
    """Which people's grades were read, and how they were drawn."""
    not_read: str | None
    """Grades the folder holds that were not read, and why (None when there are none)."""
    level: float
    """Coverage of the intervals."""
    judges: tuple[FolderJudge, ...]
    """Its judges, by name."""


def folder_agreement(
    root: str | Path,
    *,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
) -> list[FolderAgreement]:
    """Each dataset's judges below ``root`` with their κ (see the module docstring).

    Raises:
        MMJudgeError: no completed judge below ``root``."""
    root = Path(root)
    runs = [run for run in completed_runs(root) if run.kind == "single"]
    if not runs:
        raise MMJudgeError(f"{root}: no completed runs below it (no summary.json with judgments)")
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(runs, key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
    out = []
    for dataset in sorted(by_dataset):
        group = by_dataset[dataset]
        chosen = grades_for(root, group, seed=seed, level=level)
        judges = []
        for run in group:
            own = chosen.grades.own(run, n_boot)
            judges.append(FolderJudge(run.name, str(run.run_dir), own.kappa, own.n_items))
        out.append(
            FolderAgreement(dataset, chosen.grades.line, chosen.not_read, level, tuple(judges))
        )
    return out


def format_folder(found: Sequence[FolderAgreement]) -> str:
    """The text ``mmjudge agree DIR`` prints: per dataset, the grades read and each judge's κ."""
    from mmjudge.display import MISSING, interval

    lines = []
    for block in found:
        pct = f"{block.level * 100:g}%"
        lines += [f"{block.dataset}:", f"  grades: {block.grades}"]
        if block.not_read:
            lines.append(f"    {block.not_read}")
        width = max(len(j.name) for j in block.judges)
        lines.append(f"  {'judge'.ljust(width)}  items  κ [{pct} interval]")
        for judge in block.judges:
            shown = interval(judge.kappa) if judge.kappa.known else MISSING
            lines.append(f"  {judge.name.ljust(width)}  {judge.n_items:>5}  {shown}")
        lines.append("")
    return "\n".join(lines)
