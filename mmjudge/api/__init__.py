"""The library surface: what a notebook or another tool calls, re-exported by :mod:`mmjudge`.

One module per concept: :mod:`~mmjudge.api.compose` composes a config from command-line
overrides, :mod:`~mmjudge.api.cells` runs a cell or a sweep, :mod:`~mmjudge.api.saved` opens
saved runs and sweeps, :mod:`~mmjudge.api.scores` scores label files,
:mod:`~mmjudge.api.prices` re-prices a finished run and :mod:`~mmjudge.api.judge` grades one
item with a configured judge. Each function loads what it needs when it is called.
"""
