"""``python -m mmjudge.sweep``: run one cell, or a grid with ``-m``, as a Hydra app (the app is
:mod:`mmjudge.cli.sweep`, which ``mmjudge sweep`` runs too)."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    # Before anything else is imported: a child starts loading the judge's SDK on the other
    # core while this process composes the config (mmjudge/speed/template_child.py).
    from mmjudge.locations import CONFIG_DIR as _SHIPPED_CONFIGS
    from mmjudge.speed.template_child import start_for_argv

    start_for_argv(sys.argv[1:], _SHIPPED_CONFIGS)

from mmjudge.cli.exits import quiet_when_output_closes
from mmjudge.cli.sweep import run_app

if __name__ == "__main__":
    with quiet_when_output_closes():
        run_app()
