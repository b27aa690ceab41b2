"""``mmjudge race [-cd DIR] OVERRIDES…``: race a sweep's grid, round after round, and stop paying
for the cells the choice no longer depends on (:mod:`mmjudge.api.race`).

It takes the overrides a multirun takes (``model=gpt4o_mini,gpt41 modality=text,mm``,
``+experiment=…``, ``hydra.sweep.dir=…``) and the race's settings under ``race.``
(``race.delta=0.02 race.alpha=0.05 race.round_items=200 race.max_usd=50``); the item order is
seeded by ``seed``. It prints one line per round and the choice; the sweep folder it leaves is
an ordinary one (``mmjudge report``, ``frontier``, ``plan`` and ``estimate`` read it), with
the race's decisions in ``race.json`` and in the report. Ctrl-C or SIGTERM stops every cell
between calls and prints the command that takes the race up where it stopped.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mmjudge.api.race import run_race
from mmjudge.api.race_result import closing_lines
from mmjudge.cli.exits import EXIT_USAGE, fail
from mmjudge.cli.race_lines import GIVEN, PROG, print_round, stopped_lines, waiting_lines
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.store.status import EXIT_GRADES_NEEDED


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Race a sweep's grid in rounds: every cell judges the same slices of one "
        "seeded order of the dataset's graded items, and a cell stops as soon as the choice "
        "(the cheapest judge within race.delta κ of the best, with chance race.alpha of "
        "missing) no longer depends on it.",
    )
    p.add_argument("-cd", "--config-dir", default=None, help="a folder of your own configs")
    p.add_argument(
        "--workers",
        type=int,
        default=None,
        help="cells judged at once in a round (default: every active cell)",
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides, as a multirun takes them")
    return p


def through_launcher(config_dir: str | None, overrides: Sequence[str]) -> int:
    """The race as a Hydra multirun whose sweeper is the race's: each round's cells go through
    the launcher named (``hydra/launcher=joblib``, ``hydra/launcher=ray``), as a sweep's do."""
    from mmjudge.cli.sweep import main as sweep

    where = ["--config-dir", config_dir] if config_dir else []
    # Panels and cascades need their members to have judged the same items, which a race's
    # stopped cells have not: the race's end builds none (as the library's does).
    settings = ["hydra/sweeper=mmjudge_race", "++hydra.callbacks.sweep_report.ensembles=false"]
    return sweep([*where, "-m", *settings, *overrides])


def main(argv: Sequence[str] | None = None) -> int:
    from mmjudge.engine.interrupt import raise_on_sigterm

    given = list(sys.argv[2:] if argv is None else argv)
    GIVEN[:] = given
    args = parser().parse_args(given)
    if any(o == "-m" or o == "--multirun" for o in args.overrides):
        return fail(PROG, "a race is always over a grid: leave out -m")
    if args.workers is not None and args.workers < 1:
        return fail(PROG, f"--workers {args.workers}: use 1 or more")
    if any(o.lstrip("+~").startswith("hydra/launcher=") for o in args.overrides):
        return through_launcher(args.config_dir, args.overrides)
    raise_on_sigterm()
    try:
        result = run_race(
            args.overrides,
            config_dir=args.config_dir,
            workers=args.workers,
            on_round=print_round,
        )
    except ConfigError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except MMJudgeError as error:
        return fail(PROG, error)
    if result.stop_signal is not None:
        print(stopped_lines(result), file=sys.stderr)
        return 128 + result.stop_signal
    if result.waiting is not None:
        print(waiting_lines(result), file=sys.stderr)
        return EXIT_GRADES_NEEDED
    for line in closing_lines(result):
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
