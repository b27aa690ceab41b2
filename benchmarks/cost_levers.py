"""What a judgment really costs with several results per call, the providers' prompt caches,
sync and batch.

Each cell runs the command a user types (``python -m mmjudge.sweep``) on the real-shaped
product catalogue of :mod:`e2e` (scraped HTML descriptions cut to 300 tokens; its rows in
runs of ``--per-query`` results that share a query, as a search log's are) against a fresh
loopback server of its own, which caches prompt prefixes and reports them the way each
provider does (Anthropic's ``cache_creation_input_tokens`` / ``cache_read_input_tokens`` for
the part a request marks; OpenAI's ``cached_tokens`` for any prefix of 1,024 tokens and more,
in steps of 128). Per model and prompt it prints, for each K of ``--passages``
(``prompt.passages_per_call``), ``runner.prompt_cache=off`` and ``auto`` in sync and batch
mode:

- calls: the requests the server answered (a query's K results in one call);
- forecast: the dry-run figure the run forecast, dollars per million judgments (its
  ``summary.json``'s ``forecast.usd_per_million``, at batch prices in batch mode);
- $/M: the run's dollars per million judgments (``summary.json``'s ``cost.usd_per_million``,
  the ledger's price of what the server reported under the 2026-10-31 sheet);
- hit: the share of input tokens the server reported as read from its cache;
- × off: how many times cheaper than the same K and mode with caching off; × list: how many
  times cheaper than K=1, sync, caching off (the list price of one result per call); both
  against the first of ``--caches`` and ``--passages``;
- judgments/s from the command's start to its exit.

The prompts: ``default`` (a short static part, below every model's minimum, so ``auto``
changes nothing), ``terse`` (the same without the explanation: the forecast expects the grade
alone, while the server answers every one-result prompt with a short reason, as it does
``default``; with K above 1 neither asks for reasons, and the server gives none), ``lines``
(``default`` with ``prompt.answer_format=lines``: the K results' grades as ``R<n>: N`` lines
instead of the provider's structured output, whose schema is paid as input) and ``long``: the
``guidelines`` design with ``--guideline-words`` words of grading guidelines (about 1.3 tokens
a word), like a collection's written assessor manual.

The server takes requests in the order they arrive, so every call after the first reads what
the first wrote; a real provider's concurrent first calls may each write, and its cache lapses
after five minutes (or an hour) without a call.

    python benchmarks/cost_levers.py
    python benchmarks/cost_levers.py --n 400 --models gpt4o_mini,claude_haiku45 --passages 1,5
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import Cell, Server, machine, sweep_command, timed_sweep, write_real_dataset

#: Seconds the loopback server waits before each answer.
LATENCY = 0.05
#: Calls in flight.
CONCURRENCY = 16
#: The text the long prompt's guidelines draw their words from.
_TEXT = (
    "grade the product against what the query names first its kind then colour size material "
    "brand and use a listing that names another kind of product is not relevant even when its "
    "colour matches an accessory sold for the product named is partly relevant at most"
)


def guidelines(words: int) -> str:
    """Grading guidelines of ``words`` words, the same every time."""
    rng = random.Random(48)
    vocabulary = _TEXT.split()
    sentences: list[str] = []
    while sum(len(s.split()) for s in sentences) < words:
        sentences.append(" ".join(rng.choice(vocabulary) for _ in range(rng.randint(8, 20))) + ".")
    return " ".join(sentences)


def run_cell(
    data: Path, work: Path, model: str, mode: str, cache: str, extra: list[str]
) -> dict[str, float]:
    """One cell against a fresh server: its calls, forecast and paid dollars per million,
    hit rate and speed."""
    server = Server(LATENCY)
    try:
        cell = Cell("real", CONCURRENCY, LATENCY)
        command = sweep_command(cell, data, work, server.base_url, work / "responses.sqlite", model)
        command = [c for c in command if not c.startswith("report.build")]
        command += [
            "report.build=false",
            f"runner.mode={mode}",
            "runner.batch_poll_s=0.2",
            f"runner.prompt_cache={cache}",
            *extra,
        ]
        started = time.perf_counter()
        code, stderr, _usage = timed_sweep(command)
        seconds = time.perf_counter() - started
    finally:
        server.close()
    if code != 0:
        raise SystemExit(f"{model} {mode} {cache}: exit {code}\n{stderr[-2000:]}")
    (run_dir,) = sorted((work / "results" / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    block = summary.get("prompt_cache") or {}
    return {
        "calls": float(summary["calls"]["api_calls"]),
        "forecast": float((summary.get("forecast") or {}).get("usd_per_million", 0.0)),
        "usd_per_million": float(summary["cost"]["usd_per_million"]),
        "hit": float(block.get("hit_rate", 0.0)),
        "per_second": summary["n_judgments"] / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="items per cell")
    parser.add_argument(
        "--models", default="gpt4o_mini,claude_haiku45,claude_sonnet45", help="conf/model names"
    )
    parser.add_argument("--guideline-words", type=int, default=3500)
    parser.add_argument(
        "--passages", default="1,5,10", help="values of prompt.passages_per_call (K) to run"
    )
    parser.add_argument("--per-query", type=int, default=10, help="results of each query")
    parser.add_argument(
        "--prompts",
        default="default,terse,long",
        help="which prompts to run (default, terse, lines, long)",
    )
    parser.add_argument("--caches", default="off,auto", help="runner.prompt_cache values to run")
    args = parser.parse_args()
    prompts = {
        "default": ["prompt=default"],
        "terse": ["prompt=terse"],
        "lines": ["prompt=default", "prompt.answer_format=lines"],
        "long": ["prompt=guidelines", f"dataset.guidelines='{guidelines(args.guideline_words)}'"],
    }
    passages = [int(k) for k in args.passages.split(",")]
    caches = args.caches.split(",")
    print(
        f"{machine()}; {args.n} items a cell, {args.per_query} results a query, "
        f"{CONCURRENCY} in flight, {LATENCY} s latency"
    )
    print(
        f"{'model':<16} {'prompt':<8} {'K':>3} {'mode':<6} {'cache':<5} {'calls':>6} "
        f"{'forecast':>9} {'$/M':>9} {'hit':>5} {'× off':>6} {'× list':>7} {'judg./s':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "catalogue"
        write_real_dataset(data, args.n, per_query=args.per_query)
        for model in args.models.split(","):
            for name in args.prompts.split(","):
                figures: dict[tuple[int, str, str], dict[str, float]] = {}
                for k in passages:
                    for mode in ("sync", "batch"):
                        for cache in caches:
                            work = Path(tmp) / f"{model}-{name}-{k}-{mode}-{cache}"
                            work.mkdir()
                            extra = [*prompts[name], f"prompt.passages_per_call={k}"]
                            got = run_cell(data, work, model, mode, cache, extra)
                            figures[k, mode, cache] = got
                            listed = figures[passages[0], "sync", caches[0]]["usd_per_million"]
                            off = figures[k, mode, caches[0]]["usd_per_million"]
                            print(
                                f"{model:<16} {name:<8} {k:>3} {mode:<6} {cache:<5} "
                                f"{got['calls']:>6.0f} {got['forecast']:>9,.2f} "
                                f"{got['usd_per_million']:>9,.2f} {got['hit']:>5.0%} "
                                f"{off / got['usd_per_million']:>6.2f} "
                                f"{listed / got['usd_per_million']:>7.2f} "
                                f"{got['per_second']:>8.1f}",
                                flush=True,
                            )


if __name__ == "__main__":
    main()
