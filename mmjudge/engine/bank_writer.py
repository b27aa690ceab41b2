"""Writing a first test bank with a configured model: one call per query, through the runner
(so cached, priced by the ledger, under the budget), with a dry-run forecast. The requests and
the reading of the answers are :mod:`mmjudge.testbank.write`'s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from mmjudge.config import SweepConfig
from mmjudge.costs.calls import CallPricer
from mmjudge.costs.forecast import forecast_call
from mmjudge.costs.sheets import ModelPrice, price_for
from mmjudge.engine.policy import Outcome, QueryCall, RunStats, WorkItem
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.engine.sync import Runner
from mmjudge.judges.registry import judge_class
from mmjudge.locations import resolve_path
from mmjudge.records import Forecast
from mmjudge.speed import read_switch
from mmjudge.testbank.bank import Bank, Entry, make_bank
from mmjudge.testbank.write import (
    Queries,
    check_writer,
    dataset_queries,
    parse_bank_answer,
    write_request,
)


class Written(NamedTuple):
    bank: Bank
    forecast: Forecast
    stats: RunStats
    cost_usd: float
    failed: dict[str, str]
    """Query id → why it got no entries."""


def _items(
    cfg: SweepConfig, queries: Queries, kind: str, n: int, price: ModelPrice
) -> Iterator[WorkItem]:
    for query_id, query in queries.texts.items():
        request = write_request(cfg, kind, n, query_id, query, queries.has_images)
        expected = forecast_call(request, cfg.model, price, 10 + 12 * n)
        yield WorkItem(
            key=request.item_key, request=request, forecast=expected, context=QueryCall(query_id)
        )


def forecast_bank(cfg: SweepConfig, kind: str, n: int) -> Forecast:
    check_writer(cfg, kind)
    price = price_for(cfg.pricing, cfg.model)
    forecast = Forecast()
    for item in _items(cfg, dataset_queries(cfg), kind, n, price):
        forecast.add(item.forecast)
    return forecast


def write_bank_with_model(cfg: SweepConfig, kind: str, n: int) -> Written:
    """Ask the configured model for every query's entries."""
    check_writer(cfg, kind)
    price = price_for(cfg.pricing, cfg.model)
    queries = dataset_queries(cfg)
    speed = read_switch()  # where this run starts
    judge = judge_class(cfg.model)(cfg.model)
    stats = RunStats()
    cache = None
    if cfg.runner.cache and judge.cacheable:
        cache = ResponseCache(resolve_path(cfg.paths.response_cache))
    runner = Runner(
        judge,
        cfg.model,
        cfg.runner,
        cache=cache,
        price=CallPricer(price, cfg.model, cfg.pricing.batch_discount),
        stats=stats,
        claims=cache.claims(cfg.runner.claim_ttl_s) if cache is not None else None,
        seed=cfg.seed,
        speed=speed,
    )
    outcomes: list[Outcome] = []

    async def run() -> None:
        try:
            async for outcome in runner.run(_items(cfg, queries, kind, n, price)):
                outcomes.append(outcome)
        finally:
            await judge.aclose()
            if cache is not None:
                cache.close()

    asyncio.run(run())
    return _collect(queries, kind, n, outcomes, stats)


def _collect(
    queries: Queries,
    kind: str,
    n: int,
    outcomes: list[Outcome],
    stats: RunStats,
) -> Written:
    by_query: dict[str, list[Entry]] = {}
    failed: dict[str, str] = {}
    spent = 0.0
    for outcome in outcomes:
        call = outcome.item.context
        assert isinstance(call, QueryCall)
        query_id = call.query_id
        if outcome.response is None:
            failed[query_id] = outcome.error or "no answer"
            continue
        if not outcome.cached:
            spent += outcome.priced.total_usd
        entries = parse_bank_answer(outcome.response.text, query_id, kind, n)
        if not entries:
            failed[query_id] = "the answer held no `text:` or `visual:` line"
        by_query[query_id] = entries
    ordered = [e for q in queries.texts for e in by_query.get(q, [])]
    return Written(make_bank(kind, ordered), stats.forecast, stats, spent, failed)


def generation_record(written: Written, cfg: SweepConfig, n: int, path: Path) -> Path:
    """``<bank>.generation.json`` beside the bank: who wrote it, what it cost, what failed."""
    record = {
        "bank": path.name,
        "version": written.bank.version,
        "kind": written.bank.kind,
        "dataset": cfg.dataset.name,
        "model": cfg.model.name,
        "model_id": cfg.model.model_id,
        "pricing_sheet": cfg.pricing.date,
        "n_per_query": n,
        "queries": len(written.bank.entries),
        "entries": written.bank.n_entries,
        "calls": written.stats.calls.api_calls,
        "cache_hits": written.stats.calls.cache_hits,
        "cost_usd": written.cost_usd,
        "forecast_usd": written.forecast.usd,
        "failed": written.failed,
    }
    out = path.with_name(path.name + ".generation.json")
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return out
