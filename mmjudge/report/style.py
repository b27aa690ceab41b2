"""How judges look in every figure and in the interactive chart: the model family by colour
(one hue per family, one shade per model), the modality by marker, and short names for
ensembles. Computed once per report so that a judge looks the same everywhere.

Free judges are grey whatever their provider. Which judges are free is not listed here: a
judge says so itself (its descriptor's ``free``), the run prices its judgments at nothing, and
the report reads that from the run's cost (:attr:`mmjudge.report.analysis.Cell.free`), so a new
local provider needs no entry in the report. Nor are families: a judge's descriptor names the
maker of the models it serves, and models served by others are known by their id
(:func:`mmjudge.judges.registry.family_of`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from matplotlib import colormaps
from matplotlib.colors import to_hex

from mmjudge.judges.registry import family_of

#: Matplotlib markers and the Vega-Lite shapes that look like them, per modality.
MARKERS = {"text": "o", "mm": "s", "image": "^"}
SHAPES = {"text": "circle", "mm": "square", "image": "triangle-up"}
FREE_FAMILY = "free (local)"
#: Colour maps handed to families in order of first appearance; free judges are grey.
_FAMILY_MAPS = ("Blues", "Oranges", "Greens", "Purples", "Reds", "YlOrBr", "PuRd", "BuGn")


def model_family(model_id: str | None, provider: str | None, free: bool = False) -> str:
    """The family a judge model belongs to, from its provider and model id (``gpt-4o…`` →
    OpenAI); every free judge is in one family of its own."""
    if free:
        return FREE_FAMILY
    return family_of(provider, model_id)


@dataclass
class Palette:
    """Model → family and colour, fixed for one report."""

    family: dict[str, str] = field(default_factory=dict)
    colour: dict[str, str] = field(default_factory=dict)

    @classmethod
    def build(cls, models: Iterable[tuple[str, str | None, str | None, bool]]) -> Palette:
        """From (model name, model id, provider, whether it ran free) of every judge's cell; a
        model is free when every one of its cells was."""
        cells = sorted(models, key=lambda m: m[0])
        paid_models = {name for name, _, _, free in cells if not free}
        family: dict[str, str] = {}
        for name, model_id, provider, _ in cells:
            family.setdefault(name, model_family(model_id, provider, name not in paid_models))
        families = sorted(set(family.values()), key=lambda f: (f == FREE_FAMILY, f))
        colour: dict[str, str] = {}
        paid = [f for f in families if f != FREE_FAMILY]
        for f in families:
            members = sorted(m for m, g in family.items() if g == f)
            cmap = colormaps["Greys" if f == FREE_FAMILY else _FAMILY_MAPS[paid.index(f) % 8]]
            for i, model in enumerate(members):
                shade = 0.85 - 0.45 * i / max(1, len(members) - 1) if len(members) > 1 else 0.7
                colour[model] = to_hex(cmap(shade))
        return cls(family, colour)

    def of(self, model: str) -> str:
        return self.colour.get(model, "#555555")

    @property
    def families(self) -> dict[str, list[str]]:
        """Family → its models, in the legend's order (free judges last)."""
        out: dict[str, list[str]] = {}
        for model in sorted(self.family, key=lambda m: (self.family[m] == FREE_FAMILY, m)):
            out.setdefault(self.family[model], []).append(model)
        return dict(sorted(out.items(), key=lambda kv: (kv[0] == FREE_FAMILY, kv[0])))


_ENSEMBLE = re.compile(r"^(panel|cascade):([^(]*)\((.*)\)$")


def ensemble_label(name: str) -> str:
    """A short name for a panel or cascade (``panel:majority(gpt4o: a+b+c)`` → ``gpt4o ×
    3 prompts``; ``cascade:middle(cheap→dear)`` → ``cheap→dear``)."""
    found = _ENSEMBLE.match(name)
    if not found:
        return name
    kind, _, inside = found.groups()
    if kind == "cascade":
        return inside.replace(": ", " ", 1)
    if ": " in inside:
        model, prompts = inside.split(": ", 1)
        return f"{model} × {len(prompts.split('+'))} prompts"
    members = inside.split("+")
    return f"panel of {len(members)} models" if len(members) > 3 else "+".join(members)
