"""``python -m mmjudge.sweep``: run one cell, or a grid with ``-m``, as a Hydra app (the app is
:mod:`mmjudge.cli.sweep`, which ``mmjudge sweep`` runs too).

It runs as ``mmjudge sweep`` does, through :func:`mmjudge.cli.main.run`, which loads nothing
heavy itself: a Ctrl-C (or SIGTERM) that comes while the app's modules are still loading (Hydra,
the SDKs: the first few tenths of a second) ends the command quietly with the shell's code for
the signal, as a stop anywhere later does, not with a traceback of the import under way.
Imported rather than run, it registers the config schema and its resolvers.
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from mmjudge.cli.main import run

    sys.argv = [sys.argv[0], "sweep", *sys.argv[1:]]
    run()
else:
    import mmjudge.cli.sweep  # noqa: F401  (registers the schema and the resolvers)
