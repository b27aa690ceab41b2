"""``python -m mmjudge.sweep``: run one cell, or a grid with ``-m``, as a Hydra app (the app is
:mod:`mmjudge.cli.sweep`, which ``mmjudge sweep`` runs too). A Ctrl-C while the app is still
loading ends the command quietly with the shell's code for it, as a stop later does."""

from __future__ import annotations

import signal

try:
    from mmjudge.cli.exits import quiet_when_output_closes
    from mmjudge.cli.sweep import run_app
except KeyboardInterrupt:
    raise SystemExit(128 + signal.SIGINT) from None

if __name__ == "__main__":
    with quiet_when_output_closes():
        run_app()
