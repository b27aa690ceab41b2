"""The price sheets cross-checked against a maintained price library, genai-prices.

Both engines price the same probe usages bucket by bucket (plain input, output, cached input
or cache read, cache write) at the sheet's date, at a short prompt and just past every
long-context threshold either side knows. A mismatch fails naming the model and both figures.

Only the library's bundled data is used: its price updater is never started, so nothing is
fetched.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from omegaconf import OmegaConf

from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import ModelPrice, price_from_entry
from mmjudge.locations import CONFIG_DIR
from mmjudge.records import Usage

genai_prices = pytest.importorskip(
    "genai_prices",
    reason="genai-prices is not installed (pip install -e '.[test]'); sheets not cross-checked",
)

SHEETS_DIR = CONFIG_DIR / "pricing"
CURRENT = "2026-10-31"
PAST = ("2024-08-16",)
SHORT_PROMPT = 1000
OUTPUT_PROBE = 1000
#: Long-context thresholds providers use; probed just past each, besides the sheet's own.
COMMON_THRESHOLDS = (128_000, 200_000, 272_000)

#: Differences examined and settled in the sheet's favour; each must still be a difference.
KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {
    (CURRENT, "claude-sonnet-4-5-20250929"): (
        "long-context: the library still bills prompts over 200k tokens at $6 / $22.50, but "
        "Sonnet 4.5's 1M-context beta was retired on 2026-04-30, so on this sheet's date no "
        "prompt can pass 200k tokens and the sheet lists no tier"
    ),
}

BUCKETS = ("input", "output", "cached input / cache read", "cache write")


def sheet_entries(name: str) -> dict[str, Any]:
    data = OmegaConf.to_container(OmegaConf.load(SHEETS_DIR / f"{name}.yaml"), resolve=True)
    assert isinstance(data, dict)
    return dict(data["models"])


def sheet_time(name: str) -> datetime:
    return datetime.fromisoformat(name).replace(hour=12, tzinfo=UTC)


def cases() -> Iterator[Any]:
    for name in (CURRENT, *PAST):
        for key, entry in sheet_entries(name).items():
            if "gpu_hour" not in entry:
                yield pytest.param(name, key, id=f"{name}:{key}")


def our_rates(price: ModelPrice, n: int) -> dict[str, float]:
    """Effective USD per million tokens in each bucket for a call with ``n`` input tokens."""

    def usd(usage: Usage) -> float:
        return cost_of(usage, price).total_usd

    plain = usd(Usage(input_tokens=n))
    return {
        "input": plain / n * 1e6,
        "output": (usd(Usage(input_tokens=n, output_tokens=OUTPUT_PROBE)) - plain)
        / OUTPUT_PROBE
        * 1e6,
        "cached input / cache read": usd(Usage(input_tokens=n, cached_input_tokens=n)) / n * 1e6,
        "cache write": usd(Usage(input_tokens=n, cache_write_tokens=n)) / n * 1e6,
    }


def library_rates(key: str, when: datetime, n: int) -> dict[str, float]:
    """The same, from genai-prices' bundled data."""

    def calc(**tokens: int) -> Any:
        usage = genai_prices.Usage(input_tokens=n, **tokens)
        return genai_prices.calc_price(usage, key, genai_request_timestamp=when)

    return {
        "input": float(calc().input_price) / n * 1e6,
        "output": float(calc(output_tokens=OUTPUT_PROBE).output_price) / OUTPUT_PROBE * 1e6,
        "cached input / cache read": float(calc(cache_read_tokens=n).input_price) / n * 1e6,
        "cache write": float(calc(cache_write_tokens=n).input_price) / n * 1e6,
    }


def library_thresholds(key: str, when: datetime) -> set[int]:
    """Tier starts in the library's prices for this model (its own data layout; best effort)."""
    try:
        from genai_prices import data_snapshot

        _, model = data_snapshot.get_snapshot().find_provider_model(key, None, None, None)
        prices = model.get_prices(when)
        values = [getattr(prices, name, None) for name in vars(prices)]
        return {tier.start for value in values for tier in getattr(value, "tiers", None) or ()}
    except (AttributeError, LookupError, TypeError):
        return set()


def knows(key: str, when: datetime) -> bool:
    try:
        genai_prices.calc_price(
            genai_prices.Usage(input_tokens=1), key, genai_request_timestamp=when
        )
    except LookupError:
        return False
    return True


def differences(sheet: str, key: str) -> list[str]:
    """Every (bucket, probe) where the sheet and the library disagree, in words."""
    entry = sheet_entries(sheet)[key]
    when = sheet_time(sheet)
    price = price_from_entry(key, entry, sheet)
    probes = {SHORT_PROMPT}
    thresholds = {tier.above_input_tokens for tier in price.tiers}
    thresholds |= library_thresholds(key, when) | set(COMMON_THRESHOLDS)
    probes |= {t + 1 for t in thresholds}
    has_cache = any(entry.get(name) is not None for name in ("cached_input", "cache_read"))
    has_write = entry.get("cache_write") is not None
    found: list[str] = []
    seen: set[tuple[str, float, float]] = set()
    for n in sorted(probes):
        ours = our_rates(price, n)
        theirs = library_rates(key, when, n)
        for bucket in BUCKETS:
            # A past sheet leaves out cache prices on purpose where caching did not exist yet
            # (OpenAI's arrived on 2024-10-01); the library keeps no dated cache history.
            if sheet != CURRENT and (
                (bucket == "cached input / cache read" and not has_cache)
                or (bucket == "cache write" and not has_write)
            ):
                continue
            pair = (bucket, round(ours[bucket], 9), round(theirs[bucket], 9))
            if ours[bucket] != pytest.approx(theirs[bucket], rel=1e-9, abs=1e-9):
                if pair in seen:  # the same disagreement again at a longer prompt
                    continue
                seen.add(pair)
                where = "a short prompt" if n == SHORT_PROMPT else f"{n:,} input tokens"
                found.append(
                    f"{sheet} {key}: {bucket} at {where}: sheet ${ours[bucket]:.6g}/M, "
                    f"genai-prices {genai_prices.__version__} ${theirs[bucket]:.6g}/M"
                )
    return found


@pytest.mark.parametrize(("sheet", "key"), list(cases()))
def test_sheet_matches_genai_prices(sheet: str, key: str) -> None:
    when = sheet_time(sheet)
    if not knows(key, when):
        pytest.skip(f"genai-prices {genai_prices.__version__} does not know {key}")
    found = differences(sheet, key)
    reason = KNOWN_DIFFERENCES.get((sheet, key))
    if reason is not None:
        # Settled in the sheet's favour: the base prices must still agree.
        found = [line for line in found if "a short prompt" in line]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("sheet", "key"), list(KNOWN_DIFFERENCES))
def test_known_differences_are_still_differences(sheet: str, key: str) -> None:
    if not knows(key, sheet_time(sheet)):
        pytest.skip(f"genai-prices {genai_prices.__version__} does not know {key}")
    assert differences(sheet, key), (
        f"{sheet} {key} now agrees with genai-prices; drop it from KNOWN_DIFFERENCES"
    )


def test_the_library_knows_most_of_the_current_sheet() -> None:
    when = sheet_time(CURRENT)
    listed = [key for key, entry in sheet_entries(CURRENT).items() if "gpu_hour" not in entry]
    unknown = [key for key in listed if not knows(key, when)]
    assert len(unknown) <= len(listed) // 4, f"genai-prices does not know {unknown}"
