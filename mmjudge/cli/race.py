"""``mmjudge race [-cd DIR] OVERRIDES…``: race a sweep's grid, round after round, and stop paying
for the cells the choice no longer depends on (:mod:`mmjudge.api.race`).

It takes the overrides a multirun takes (``model=gpt4o_mini,gpt41 modality=text,mm``,
``+experiment=…``, ``hydra.sweep.dir=…``) and the race's settings under ``race.``
(``race.delta=0.02 race.alpha=0.05 race.round_items=200 race.max_usd=50``); the item order is
seeded by ``seed``. It prints one line per round and the choice; the sweep folder it leaves is
an ordinary one (``mmjudge report``, ``frontier``, ``plan`` and ``estimate`` read it), with
the race's decisions in ``race.json`` and in the report.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from mmjudge.api.race import RaceResult, run_race
from mmjudge.cli.exits import EXIT_USAGE, fail
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.studies.race_records import RoundDecision

PROG = "mmjudge race"
#: The exit status of a race stopped by an interrupt (as a shell reports SIGINT).
EXIT_INTERRUPTED = 130


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


def print_round(result: RaceResult, decision: RoundDecision) -> None:
    print(result.line(decision), file=sys.stderr, flush=True)


def closing_lines(result: RaceResult) -> list[str]:
    """What the race prints when it ends: the choice, its evidence, the spend."""
    outcome = result.outcome
    assert outcome is not None
    lines = [f"race: chose {outcome.name} (κ {outcome.kappa:.3f}) — {outcome.ending}"]
    versus = outcome.versus_runner_up
    if versus is not None and outcome.runner_up is not None:
        lines.append(
            f"  against {result.cells[outcome.runner_up].name}: κ diff {versus.difference:+.3f} "
            f"[{versus.low:+.3f}, {versus.high:+.3f}] on {versus.n_items:,} items"
        )
    if not outcome.guarantee:
        lines.append("  the dollar cap ended the race: the choice carries no guarantee")
    share = outcome.judgments / outcome.full_judgments if outcome.full_judgments else 0.0
    lines.append(
        f"  {outcome.judgments:,} of {outcome.full_judgments:,} judgments ({share:.0%}); "
        f"${result.spent_usd:,.4f} spent of ${result.full_grid_usd:,.4f} the full grid would "
        "cost (forecast)"
    )
    lines.append(f"  sweep folder: {result.folder}")
    if result.report is not None:
        lines.append(f"  report: {result.report / 'index.html'}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if any(o == "-m" or o == "--multirun" for o in args.overrides):
        return fail(PROG, "a race is always over a grid: leave out -m")
    if args.workers is not None and args.workers < 1:
        return fail(PROG, f"--workers {args.workers}: use 1 or more")
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
    if result.interrupted:
        kept = [o for o in args.overrides if not o.startswith("hydra.sweep.dir=")]
        head = [PROG, *(["-cd", args.config_dir] if args.config_dir else [])]
        again = shlex.join([*head, *kept, f"hydra.sweep.dir={result.folder}"])
        print(
            f"{PROG}: interrupted after {len(result.rounds)} rounds; judgments made are kept. "
            f"Take the race up where it stopped with:\n  {again}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    for line in closing_lines(result):
        print(line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
