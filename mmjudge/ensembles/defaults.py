"""The ensembles a sweep builds when it ends (``hydra.callbacks.sweep_report.ensembles``).

Per dataset × modality, from the sweep's completed real runs:

(a) each model with two or more prompt variants: a majority panel over its prompts;
(b) each prompt that three or more distinct models ran: a majority panel of the models;
(c) each pair of models where one costs less per judgment than the other: a cascade from
    the cheaper to the dearer on the ``middle`` and ``unparseable`` rules, each model
    represented by its ``default`` prompt run (else its first prompt id in sorted order).

An ensemble that cannot be built (members on different scales...) is reported on stderr and
left out; the others are still built.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mmjudge.config.names import path_part
from mmjudge.ensembles.cascades import build_cascade
from mmjudge.ensembles.panels import build_panel
from mmjudge.errors import MMJudgeError
from mmjudge.store import ENSEMBLES, SavedRun, completed_runs, in_ensembles_folder

#: Rules of the cascades built automatically after a sweep.
DEFAULT_CASCADE_RULES = ("middle", "unparseable")
#: One run per (model, prompt) of a dataset × modality.
Cells = dict[tuple[str, str], SavedRun]


def _safe(text: str) -> str:
    """An ensemble's name as its folder's: letters, digits, ``-``, ``_`` and single dots."""
    return path_part("".join(c if c.isalnum() or c in "-_." else "-" for c in text))


def _groups(sweep_dir: Path) -> dict[tuple[str, str], Cells]:
    """The sweep's real runs by (dataset, modality), one per (model, prompt); perturbed
    runs (``perturb=…``) are no candidate members."""
    runs = [
        run
        for run in completed_runs(sweep_dir, include_virtual=False)
        if not in_ensembles_folder(run.run_dir, sweep_dir) and run.summary.cell.perturb == "none"
    ]
    groups: dict[tuple[str, str], Cells] = {}
    for run in sorted(runs, key=lambda r: str(r.run_dir)):
        cell = run.summary.cell
        cells = groups.setdefault((cell.dataset, cell.modality), {})
        cells.setdefault((cell.model, cell.prompt_id), run)
    return groups


def _plans(dataset: str, modality: str, cells: Cells) -> list[tuple[str, Callable[[Path], Any]]]:
    """The ensembles (a), (b) and (c) of one dataset × modality: a name and a builder each."""
    models = sorted({model for model, _ in cells})
    prompts = sorted({prompt for _, prompt in cells})
    plans: list[tuple[str, Callable[[Path], Any]]] = []
    for model in models:
        members = [cells[(model, p)] for p in prompts if (model, p) in cells]
        if len(members) >= 2:
            name = f"panel.{dataset}.{modality}.{model}.prompts"
            plans.append((name, functools.partial(build_panel, members, how="majority")))
    for prompt in prompts:
        members = [cells[(m, prompt)] for m in models if (m, prompt) in cells]
        if len(members) >= 3:
            name = f"panel.{dataset}.{modality}.{prompt}.models"
            plans.append((name, functools.partial(build_panel, members, how="majority")))
    representative = {}
    for model in models:
        own = sorted(p for m, p in cells if m == model)
        representative[model] = cells[(model, "default" if "default" in own else own[0])]
    for a, b in itertools.combinations(models, 2):
        cheap, dear = representative[a], representative[b]
        if cheap.usd_per_million == dear.usd_per_million:
            continue
        if cheap.usd_per_million > dear.usd_per_million:
            cheap, dear = dear, cheap
        name = (
            f"cascade.{dataset}.{modality}.{cheap.summary.cell.model}-to-{dear.summary.cell.model}"
        )
        build = functools.partial(build_cascade, cheap, dear, rules=DEFAULT_CASCADE_RULES)
        plans.append((name, build))
    return plans


def build_default_ensembles(sweep_dir: Path) -> list[Path]:
    """Build the sweep's ensembles under ``<sweep_dir>/ensembles/`` (see the module doc);
    returns their folders."""
    sweep_dir = Path(sweep_dir)
    built: list[Path] = []
    for (dataset, modality), cells in sorted(_groups(sweep_dir).items()):
        for name, build in _plans(dataset, modality, cells):
            out = sweep_dir / ENSEMBLES / _safe(name)
            try:
                build(out)
            except MMJudgeError as error:
                print(f"mmjudge: ensemble {name} left out: {error}", file=sys.stderr)
                continue
            built.append(out)
    return built
