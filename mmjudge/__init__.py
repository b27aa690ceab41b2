"""mmjudge: measure LLM and multimodal LLM relevance judges against humans, with exact costs.

The library surface (see ``docs/library.md``)::

    import mmjudge

    cfg = mmjudge.compose(["model=lexical", "modality=text"])
    summary = mmjudge.run_cell(cfg)            # a typed RunSummary
    sweep = mmjudge.run_sweep(["model=lexical,minilm"])
    race = mmjudge.run_race(["model=gpt4o_mini,gpt41,claude_haiku45"])
    run = mmjudge.open_run("results/runs/…")
    scores = mmjudge.score_labels("human.qrels", ["judge.qrels"])
    priced = mmjudge.reprice("results/runs/…", "2024-08-16")
    with mmjudge.Judge.from_config(["model=gpt4o_mini"]) as judge:
        grade = judge.grade("red dress", {"title": "Red summer dress"})

The names load on first use (``__getattr__`` below), so ``import mmjudge`` stays cheap and
the package's own modules, which import ``mmjudge.<module>`` directly, never load the surface;
the types are declared for type checkers in ``__init__.pyi``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: Each public name and the module that defines it.
_SURFACE = {
    "compose": "mmjudge.api.compose",
    "run_cell": "mmjudge.api.cells",
    "forecast": "mmjudge.api.cells",
    "run_sweep": "mmjudge.api.cells",
    "run_race": "mmjudge.api.race",
    "RaceResult": "mmjudge.grid.race",
    "open_run": "mmjudge.api.saved",
    "open_sweep": "mmjudge.api.saved",
    "Run": "mmjudge.api.saved",
    "Sweep": "mmjudge.api.saved",
    "SweepCell": "mmjudge.api.saved",
    "CellForecast": "mmjudge.api.saved",
    "score_labels": "mmjudge.api.scores",
    "LabelScores": "mmjudge.api.scores",
    "reprice": "mmjudge.api.prices",
    "RepricedRun": "mmjudge.api.prices",
    "PriceFigures": "mmjudge.api.prices",
    "Judge": "mmjudge.api.judge",
    "Grade": "mmjudge.api.judge",
    "SweepConfig": "mmjudge.config",
    "RunSummary": "mmjudge.store",
    "JudgmentRecord": "mmjudge.records",
    "MMJudgeError": "mmjudge.errors",
    "ConfigError": "mmjudge.errors",
    "CredentialError": "mmjudge.errors",
}

__all__ = ["__version__", *_SURFACE]


def __getattr__(name: str) -> Any:
    """The surface's names, each imported from its module when first asked for."""
    module = _SURFACE.get(name)
    if module is None:
        raise AttributeError(f"module 'mmjudge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SURFACE})
