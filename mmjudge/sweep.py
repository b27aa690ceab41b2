"""``python -m mmjudge.sweep``: run one cell, or a grid with ``-m``, as a Hydra app (the app is
:mod:`mmjudge.cli.sweep`, which ``mmjudge sweep`` runs too)."""

from __future__ import annotations

from mmjudge.cli.exits import quiet_when_output_closes
from mmjudge.cli.sweep import run_app

if __name__ == "__main__":
    with quiet_when_output_closes():
        run_app()
