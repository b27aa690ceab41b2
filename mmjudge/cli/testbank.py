"""``mmjudge testbank``: write a first test bank with a model, or import one.

    mmjudge testbank generate dataset=… model=… kind=nuggets|questions [n=10]
                                        [out=FILE] [overwrite=true] [runner.dry_run=true] …
    mmjudge testbank import FILE dataset=… [kind=…] [out=FILE]
    mmjudge testbank show dataset=… kind=…

Settings other than ``kind``, ``n``, ``out`` and ``overwrite`` are the sweep's (``dataset=``,
``model=``, ``runner.*``, ``pricing=``…), composed from the config groups as a sweep composes them.
The bank goes where a sweep with ``prompt=<kind>`` reads it (``dataset.testbanks.<kind>``,
else ``testbanks/<dataset>/<kind>.jsonl``) unless ``out=`` says otherwise; an existing file is
replaced only with ``overwrite=true`` (``import`` replaces it, and says which version it
replaced).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mmjudge.api.compose import compose
from mmjudge.display import usd
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.testbank.bank import KINDS, check_queries, read_bank, write_bank
from mmjudge.testbank.grading import bank_path

PROG = "mmjudge testbank"
OWN_KEYS = ("kind", "n", "out", "overwrite")
USAGE = (
    f"usage: {PROG} generate dataset=… model=… kind=nuggets|questions [n=10] [out=FILE] "
    "[overwrite=true] | import FILE dataset=… [kind=…] [out=FILE] | show dataset=… kind=…"
)


class Arguments(NamedTuple):
    command: str
    file: str | None
    own: dict[str, str]
    overrides: list[str]


def split_arguments(argv: Sequence[str]) -> Arguments:
    """The subcommand, an optional file, this command's keys and the sweep's overrides."""
    if not argv or argv[0] not in ("generate", "import", "show"):
        raise ConfigError(USAGE)
    own: dict[str, str] = {}
    overrides: list[str] = []
    file = None
    for token in argv[1:]:
        key, sep, value = token.partition("=")
        if not sep:
            if file is not None or argv[0] != "import":
                raise ConfigError(f"unexpected argument {token!r}; {USAGE}")
            file = token
        elif key in OWN_KEYS:
            own[key] = value
        else:
            overrides.append(token)
    if argv[0] == "import" and file is None:
        raise ConfigError(f"import needs the bank file; {USAGE}")
    return Arguments(argv[0], file, own, overrides)


def _kind(own: dict[str, str], default: str | None = None) -> str:
    kind = own.get("kind", default)
    if kind not in KINDS:
        raise ConfigError(f"kind={kind!r}: give kind=nuggets or kind=questions")
    return kind


def _n(own: dict[str, str]) -> int:
    text = own.get("n", "10")
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"n={text!r}: give the most entries per query, a whole number ≥ 1")
    return int(text)


def _true(own: dict[str, str], key: str) -> bool:
    value = own.get(key, "false").lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key}={value!r}: use true or false")
    return value == "true"


def _out(own: dict[str, str], default: Path) -> Path:
    from mmjudge.locations import resolve_path

    return resolve_path(own["out"]) if own.get("out") else default


def generate(args: Arguments) -> int:
    from mmjudge.engine import bank_writer as write

    cfg = compose(args.overrides)
    kind, n = _kind(args.own), _n(args.own)
    path = _out(args.own, bank_path(cfg.dataset, kind))
    if cfg.runner.dry_run:
        f = write.forecast_bank(cfg, kind, n)
        print(
            f"{cfg.dataset.name} × {cfg.model.name}: forecast {f.calls} calls (one per query), "
            f"{f.input_tokens:,} input tokens, {f.output_tokens:,} output tokens, {usd(f.usd)}"
        )
        return 0
    if path.exists() and not _true(args.own, "overwrite"):
        raise ConfigError(f"{path} exists; give overwrite=true to replace it, or out=<file>")
    written = write.write_bank_with_model(cfg, kind, n)
    if not written.bank.n_entries:
        raise MMJudgeError(f"no entries written: {next(iter(written.failed.values()), '')}")
    write_bank(written.bank, path)
    record = write.generation_record(written, cfg, n, path)
    print(
        f"{path}: {written.bank.n_entries} {kind} for {len(written.bank.entries)} queries, "
        f"version {written.bank.version}; {written.stats.calls.api_calls} calls, "
        f"{written.stats.calls.cache_hits} from the cache, {usd(written.cost_usd)} ({record.name})",
        file=sys.stderr,
    )
    for query_id, why in written.failed.items():
        print(f"{PROG}: query {query_id!r} got no entries: {why}", file=sys.stderr)
    return 1 if written.failed else 0


def import_bank(args: Arguments) -> int:
    from mmjudge.testbank.write import dataset_queries

    assert args.file is not None
    cfg = compose(args.overrides)
    bank = read_bank(args.file, args.own.get("kind"))
    check_queries(bank, dataset_queries(cfg).texts)
    path = _out(args.own, bank_path(cfg.dataset, bank.kind))
    before = read_bank(path).version if path.is_file() else None
    write_bank(bank._replace(path=path), path)
    was = f", replacing version {before}" if before and before != bank.version else ""
    print(
        f"{path}: {bank.n_entries} {bank.kind} for {len(bank.entries)} queries, "
        f"version {bank.version}{was}",
        file=sys.stderr,
    )
    return 0


def show(args: Arguments) -> int:
    cfg = compose(args.overrides)
    kind = _kind(args.own)
    bank = read_bank(_out(args.own, bank_path(cfg.dataset, kind)), kind)
    print(f"{bank.path}: {bank.kind}, version {bank.version}, {bank.n_entries} entries")
    for query_id, entries in bank.entries.items():
        texts = "; ".join(e.text + (" (visual)" if e.visual else "") for e in entries)
        print(f"{query_id}: {texts}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; 2 for bad settings or input, 1 when some queries got no entries."""
    try:
        args = split_arguments(list(sys.argv[1:] if argv is None else argv))
        return {"generate": generate, "import": import_bank, "show": show}[args.command](args)
    except MMJudgeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
