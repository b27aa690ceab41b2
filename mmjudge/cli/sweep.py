"""``mmjudge sweep [OVERRIDES…] [-m]``: the Hydra app of :mod:`mmjudge.sweep`, under the
``mmjudge`` command (the same as ``python -m mmjudge.sweep``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    """Run the sweep with ``argv`` as its command line (Hydra reads ``sys.argv``)."""
    from mmjudge import sweep

    sys.argv = [sys.argv[0], *argv]
    try:
        sweep.main()
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    return 0
