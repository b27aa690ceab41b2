"""``mmjudge <subcommand> …``: the one command line of the project.

Each subcommand is a thin module of :mod:`mmjudge.cli` over the library, imported only when
it is asked for (``mmjudge reprice`` never loads Hydra or a provider SDK). ``mmjudge sweep``
is the Hydra app of :mod:`mmjudge.sweep` (``python -m mmjudge.sweep`` is the same);
``python -m mmjudge`` is the same as ``mmjudge``.
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Sequence

#: Subcommand -> (the module whose ``main(argv)`` runs it, what it does).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "sweep": ("mmjudge.cli.sweep", "judge one cell or a sweep (Hydra overrides; -m for a sweep)"),
    "race": (
        "mmjudge.cli.race",
        "race a grid in rounds and stop paying for judges out of the running",
    ),
    "init": ("mmjudge.cli.init", "write a starter folder of your own configs (use with -cd)"),
    "report": ("mmjudge.cli.report", "build the HTML report of run or sweep folders"),
    "agree": ("mmjudge.cli.agree", "score judges' qrels files against human qrels"),
    "reprice": ("mmjudge.cli.reprice", "price finished runs under another sheet, batch or model"),
    "frontier": (
        "mmjudge.cli.frontier",
        "the cheapest judge not distinguishably worse than the best",
    ),
    "select": ("mmjudge.cli.select", "what choosing a prompt costs, on held-out queries"),
    "testbank": ("mmjudge.cli.testbank", "write, import or show a dataset's test bank"),
    "review": ("mmjudge.cli.review", "export items worth a person's look; import their grades"),
    "export": ("mmjudge.cli.export", "write saved runs' labels as TREC qrels"),
    "plan": ("mmjudge.cli.plan", "human labels needed to settle each judge's κ and the choice"),
    "estimate": (
        "mmjudge.cli.estimate",
        "prediction-powered estimates from a judge's labels and a few human ones",
    ),
    "distill": (
        "mmjudge.cli.distill",
        "train a small local judge on a judge's, people's or a file's grades",
    ),
    "monitor": (
        "mmjudge.cli.monitor",
        "re-judge a fixed set of items and flag drift; its timeline",
    ),
}


def usage() -> str:
    """The help text listing the subcommands."""
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, text) in SUBCOMMANDS.items()]
    return (
        "usage: mmjudge <subcommand> [arguments]\n\nsubcommands:\n"
        + "\n".join(lines)
        + "\n\n`mmjudge <subcommand> --help` describes each one."
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the subcommand named first in ``argv`` (default: the process's arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        from mmjudge.cli.exits import EXIT_USAGE

        print(usage())
        return 0 if args else EXIT_USAGE
    name, rest = args[0], args[1:]
    if name not in SUBCOMMANDS:
        from mmjudge.cli.exits import fail

        return fail(
            "mmjudge", f"unknown subcommand '{name}'; choose one of: {', '.join(SUBCOMMANDS)}"
        )
    module = importlib.import_module(SUBCOMMANDS[name][0])
    status: int = module.main(rest)
    return status


def run() -> None:
    """The ``mmjudge`` console script. A stop signal that reaches it outside a subcommand's own
    handling (while the subcommand's modules are still loading, say) ends it quietly with the
    shell's code for that signal, as a stopped subcommand does; this module loads nothing
    heavy, so the console script itself is never caught half-imported."""
    try:
        from mmjudge.cli.exits import quiet_when_output_closes

        # Every subcommand's output may go to a pipe that closes early (``| head``).
        with quiet_when_output_closes():
            status = main()
    except KeyboardInterrupt as stop:
        number = getattr(stop, "signal_number", signal.SIGINT)
        print(file=sys.stderr)
        status = 128 + int(number)
    sys.exit(status)
