"""``mmjudge monitor``: canary checks of a chosen judge, and their timeline.

    mmjudge monitor check model=… dataset=… [modality=…] [prompt=…] [history=FILE]
                          [baseline=first|last|CHECK] [max_change=0.05] [alpha=0.01]
                          [allow_new_model=false] …
    mmjudge monitor report [history=FILE] [out=DIR] [paths.results=…]
    mmjudge monitor audit LABELS_FILE period=P dataset=… [per_stratum=1] [seed=0] [out=FILE]
    mmjudge monitor audit LABELS_FILE period=P dataset=… assessed=QRELS [alpha=0.01]

``check`` judges the dataset's items once more with the judge, bypassing the response cache,
appends an entry to the monitoring history and compares it with the baseline check of the
same dataset, judge, modality and prompt. It exits 0 within the thresholds and 1 with one
line on stderr saying what moved; settings it cannot use exit 2, and a check whose cell did
not complete exits with the cell's code. Settings other than its own are the sweep's.

``audit`` draws a stratified sample (by query and grade) of a period's production labels (TREC
qrels, or JSONL with query_id, result_id and label) into a review file; once people have
graded it and ``mmjudge review import`` has written their grades as qrels, ``audit`` with
``assessed=`` scores the period against them, appends it to the history and exits 1 when its
disagreement rate or pattern differs from the earlier periods' (p below ``alpha``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

from mmjudge.api.compose import compose
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import AuditEntry, CheckEntry

PROG = "mmjudge monitor"
#: The exit status of a check that moved past a threshold.
EXIT_MOVED = 1
CHECK_KEYS = ("history", "baseline", "max_change", "alpha", "allow_new_model")
REPORT_KEYS = ("history", "out")
AUDIT_KEYS = ("history", "period", "per_stratum", "seed", "out", "assessed", "alpha")
USAGE = (
    f"usage: {PROG} check model=… dataset=… [history=FILE] [baseline=first|last|CHECK] "
    "[max_change=0.05] [alpha=0.01] [allow_new_model=false] … | report [history=FILE] [out=DIR] "
    "| audit LABELS_FILE period=P dataset=… [per_stratum=1] [seed=0] [out=FILE] "
    "[assessed=QRELS] [alpha=0.01]"
)


def split_arguments(argv: Sequence[str]) -> tuple[str, dict[str, str], list[str]]:
    """The subcommand, this command's own keys (an audit's labels file as ``labels``) and
    the sweep's overrides."""
    if not argv or argv[0] not in ("check", "report", "audit"):
        raise ConfigError(USAGE)
    own_keys = {"check": CHECK_KEYS, "report": REPORT_KEYS, "audit": AUDIT_KEYS}[argv[0]]
    own: dict[str, str] = {}
    overrides: list[str] = []
    for token in argv[1:]:
        key, sep, value = token.partition("=")
        if not sep and argv[0] == "audit" and "labels" not in own:
            own["labels"] = token
            continue
        if not sep:
            raise ConfigError(f"unexpected argument {token!r}; {USAGE}")
        if key in own_keys:
            own[key] = value
        else:
            overrides.append(token)
    return argv[0], own, overrides


def _share(own: dict[str, str], key: str, default: float) -> float:
    text = own.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value <= 1):
        raise ConfigError(f"{key}={text}: give a share between 0 and 1 (0.05 = 5%)")
    return value


def _flag(own: dict[str, str], key: str) -> bool:
    value = own.get(key, "false").lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}={value!r}: use true or false")
    return value == "true"


def _interval(block: Bounds | None, percent: bool = False) -> str:
    block = block or Bounds()

    def show(value: float) -> str:
        return f"{100 * value:.1f}%" if percent else f"{value:.3f}"

    if block.estimate is None:
        return "n/a"
    if block.low is None or block.high is None:
        return show(block.estimate)
    return f"{show(block.estimate)} [{show(block.low)}, {show(block.high)}]"


def check_lines(entry: CheckEntry) -> list[str]:
    """What a check prints on stdout: the check, then its comparison with the baseline."""
    models = ", ".join(f"{m} ({n})" for m, n in sorted(entry.models.items())) or "none"
    prints = ", ".join(sorted(entry.fingerprints)) or "none"
    lines = [
        f"check {entry.check} of {entry.series}: {entry.n_items} items answered, "
        f"status {entry.status}; provider's model {models}; fingerprint {prints}; "
        f"κ vs people {_interval(entry.kappa_people)}; spent ${entry.spent_usd:.4f}"
    ]
    compared = entry.comparison
    if compared is None:
        lines.append("no earlier complete check of this series: this check is the baseline")
        return lines
    drift = compared.drift
    sm = drift.stuart_maxwell
    test = "n/a" if sm.p is None else f"χ²={sm.statistic:.2f}, df={sm.df:g}, p={sm.p:.3g}"
    lines.append(
        f"against {compared.baseline}: {drift.changed} of {drift.n_paired} labels changed, "
        f"{_interval(drift.change_share, percent=True)}; κ between checks "
        f"{_interval(drift.kappa)}; Stuart–Maxwell {test}; κ vs people then "
        f"{_interval(compared.baseline_kappa_people)}, now "
        f"{_interval(entry.kappa_people)}; spent then "
        f"${compared.baseline_spent_usd:.4f}, now ${entry.spent_usd:.4f}"
        + ("" if compared.same_items else "; the item set differs from the baseline's")
    )
    if compared.new_fingerprints:
        lines.append(f"new fingerprints: {', '.join(compared.new_fingerprints)}")
    return lines


def check(own: dict[str, str], overrides: list[str]) -> int:
    from mmjudge.monitor.check import history_path, run_check
    from mmjudge.store.monitor_history import Thresholds

    cfg = compose(overrides)
    if cfg.runner.dry_run:
        raise ConfigError("runner.dry_run=true: a check judges the items; leave it off")
    thresholds = Thresholds(
        max_change=_share(own, "max_change", Thresholds.max_change),
        alpha=_share(own, "alpha", Thresholds.alpha),
        allow_new_model=_flag(own, "allow_new_model"),
    )
    history = history_path(cfg, own.get("history"))
    entry = run_check(cfg, history, baseline=own.get("baseline", "first"), thresholds=thresholds)
    for line in check_lines(entry):
        print(line)
    if entry.status != "complete":
        from mmjudge.store import read_summary

        summary = read_summary(Path(entry.run_dir))
        print(f"{PROG}: check {entry.status}: {summary.status.status_reason}", file=sys.stderr)
        return summary.status.exit_code or EXIT_MOVED
    if entry.moved:
        print(f"{PROG}: moved: {'; '.join(entry.moved)}", file=sys.stderr)
        return EXIT_MOVED
    return 0


def report(own: dict[str, str], overrides: list[str]) -> int:
    from mmjudge.locations import resolve_path
    from mmjudge.monitor.check import history_path
    from mmjudge.report.monitor_section import write_timeline

    cfg = compose(overrides)
    history = history_path(cfg, own.get("history"))
    if not history.is_file():
        raise ConfigError(f"no monitoring history at {history}; run `{PROG} check …` first")
    out = (
        resolve_path(own["out"]) if own.get("out") else resolve_path(cfg.paths.reports) / "monitor"
    )
    page = write_timeline(history, out)
    print(page)
    return 0


def audit_lines(entry: AuditEntry) -> list[str]:
    """What scoring an audit prints: the period's disagreement, then its change."""
    figures = entry.figures
    lines = [
        f"audit {entry.period} of {entry.dataset}: {figures.n_graded} of {figures.n_sampled} "
        f"sampled items graded by people, {figures.n_disagree} disagree; disagreement rate "
        f"{_interval(figures.disagreement, percent=True)} (weighted by stratum size)"
    ]
    change = entry.change
    if change is None:
        lines.append("no earlier audited period to compare with")
        return lines
    p, pattern = change.p, change.pattern_p
    lines.append(
        f"against {change.earlier_periods} earlier period(s) at "
        f"{100 * change.earlier_disagreement:.1f}%: difference "
        f"{100 * change.difference:+.1f} points, p={'n/a' if p is None else f'{p:.3g}'}; "
        f"pattern of disagreements p={'n/a' if pattern is None else f'{pattern:.3g}'}"
    )
    return lines


def _whole(own: dict[str, str], key: str, default: int, minimum: int) -> int:
    text = own.get(key, str(default))
    if not text.isdigit() or int(text) < minimum:
        raise ConfigError(f"{key}={text}: give a whole number of at least {minimum}")
    return int(text)


def audit(own: dict[str, str], overrides: list[str]) -> int:
    from mmjudge.locations import resolve_path
    from mmjudge.monitor import auditing

    if "labels" not in own or not own.get("period"):
        raise ConfigError(f"audit needs the labels file and period=NAME; {USAGE}")
    cfg = compose(overrides)
    folder = auditing.period_folder(cfg, own["period"])
    if "assessed" not in own:
        sample = auditing.draw(
            cfg,
            Path(own["labels"]),
            own["period"],
            per_stratum=_whole(own, "per_stratum", 1, 1),
            seed=_whole(own, "seed", 0, 0),
        )
        out = resolve_path(own["out"]) if own.get("out") else folder / "review.csv"
        from mmjudge.store.review_file import write_review

        write_review(sample.rows, out)
        print(
            f"{out}: {len(sample.rows)} items from {sample.strata} strata (query × grade) of "
            f"{sample.n_labels} labels; fill in corrected_grade on every row, then run "
            f"`mmjudge review import {out} --assessor auditor` and this command with "
            "assessed=<the qrels it writes>"
        )
        return 0
    history = Path(own["history"]) if own.get("history") else None
    entry = auditing.score(
        cfg,
        Path(own["labels"]),
        own["period"],
        Path(own["assessed"]),
        history,
        alpha=_share(own, "alpha", 0.01),
    )
    for line in audit_lines(entry):
        print(line)
    if entry.moved:
        print(f"{PROG}: moved: {'; '.join(entry.moved)}", file=sys.stderr)
        return EXIT_MOVED
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command: 0 within thresholds, 1 when a check moved, 2 for bad settings."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    try:
        command, own, overrides = split_arguments(args)
        commands = {"check": check, "report": report, "audit": audit}
        return commands[command](own, overrides)
    except MMJudgeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
