"""Image-token rules: how many input tokens an image of a given size costs, per the rule in
its model's price sheet entry (``image_rule``)."""

from __future__ import annotations

import math
from typing import Any

from mmjudge.errors import ConfigError


def openai_tile_tokens(width: int, height: int, detail: str, base: int, tile: int) -> int:
    """OpenAI's tile rule: a fixed base at low detail; at high detail, fit in 2048², scale the
    short side to 768, and pay per 512-px tile on top of the base."""
    if detail == "low":
        return base
    if width <= 0 or height <= 0:
        return base
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = 768 / min(w, h)
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return base + tile * tiles


def anthropic_2024_tokens(
    width: int, height: int, max_edge: int = 1568, max_tokens: int = 1600
) -> int:
    """Anthropic's 2024 rule: ⌈width × height / 750⌉ whole tokens per image.

    The provider documents ``tokens = (width px × height px) / 750`` and bills whole
    tokens; its own worked examples round up (200×200 → 54, 1000×1000 → 1,334,
    1092×1092 → 1,590), so a 512×512 image is 350 tokens, not 349.525. An image whose long
    edge passes ``max_edge`` or whose count passes ``max_tokens`` is first shrunk, keeping
    its aspect ratio, to whole pixels that fit both limits.
    """
    if width <= 0 or height <= 0:
        return 0
    scale = min(1.0, max_edge / max(width, height))
    if width * height * scale * scale / 750 > max_tokens:
        scale *= math.sqrt(max_tokens * 750 / (width * height * scale * scale))
    if scale < 1.0:
        width, height = max(1, math.floor(width * scale)), max(1, math.floor(height * scale))
    return -(-width * height // 750)


def openai_patch_tokens(
    width: int, height: int, patch: int, budget: int, multiplier: float
) -> float:
    """OpenAI's patch rule: 32-px patches, shrunk to fit the patch budget, times the model's
    multiplier."""
    patches = math.ceil(width / patch) * math.ceil(height / patch)
    if patches > budget:
        shrink = math.sqrt(patch * patch * budget / (width * height))
        w_cols = width * shrink / patch
        h_rows = height * shrink / patch
        adjusted = shrink * min(math.floor(w_cols) / w_cols, math.floor(h_rows) / h_rows)
        patches = min(
            math.ceil(width * adjusted / patch) * math.ceil(height * adjusted / patch), budget
        )
    return patches * multiplier


def anthropic_patch_tokens(
    width: int, height: int, patch: int = 28, max_edge: int = 1568, max_tokens: int = 1568
) -> int:
    """Anthropic's current rule: 28-px patches, after shrinking to the largest aspect-preserving
    size whose padded edges and patch count fit the tier's limits."""

    def cost(w: int, h: int) -> tuple[int, int]:
        cols, rows = math.ceil(w / patch), math.ceil(h / patch)
        return max(cols, rows) * patch, cols * rows

    edge, tokens = cost(width, height)
    if edge <= max_edge and tokens <= max_tokens:
        return tokens
    low, high = 1, width
    while low < high:
        mid = (low + high + 1) // 2
        mid_h = max(1, round(mid * height / width))
        mid_edge, mid_tokens = cost(mid, mid_h)
        if mid_edge <= max_edge and mid_tokens <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return cost(low, max(1, round(low * height / width)))[1]


def gemini_tokens(
    width: int, height: int, per_tile: int = 258, small: int = 384, tile: int = 768
) -> int:
    """Gemini 2.x: a small image is one 258-token unit; a larger one is cut into 768-px tiles."""
    if width <= small and height <= small:
        return per_tile
    return math.ceil(width / tile) * math.ceil(height / tile) * per_tile


def image_tokens(rule: dict[str, Any], width: int, height: int, detail: str = "low") -> int:
    """Estimated input tokens for one image under a sheet's image rule, in whole tokens.

    This is the one estimate used everywhere an image's tokens are not reported by the
    provider: the dry-run forecast, the records' image share, and ``reprice --as-model``.
    Several images cost the sum of their own counts. A rule whose formula gives a fraction
    (the patch multipliers) is rounded up, as providers bill whole tokens.
    """
    return math.ceil(_image_tokens(rule, width, height, detail) - 1e-9)


def _image_tokens(rule: dict[str, Any], width: int, height: int, detail: str) -> float:
    kind = rule.get("rule")
    if not kind:
        return 0.0
    if kind == "openai_tile":
        return float(
            openai_tile_tokens(width, height, detail, int(rule["base"]), int(rule["tile"]))
        )
    if kind == "openai_patch":
        return openai_patch_tokens(
            width,
            height,
            int(rule.get("patch", 32)),
            int(rule.get("budget", 1536)),
            float(rule.get("multiplier", 1.0)),
        )
    if kind == "anthropic_2024":
        return float(anthropic_2024_tokens(width, height))
    if kind == "anthropic_patch":
        return float(
            anthropic_patch_tokens(
                width,
                height,
                int(rule.get("patch", 28)),
                int(rule.get("max_edge", 1568)),
                int(rule.get("max_tokens", 1568)),
            )
        )
    if kind == "gemini":
        return float(gemini_tokens(width, height, int(rule.get("tokens", 258))))
    if kind == "fixed":
        return float(rule["tokens"])
    raise ConfigError(
        f"image rule '{kind}' is unknown; use openai_tile, openai_patch, anthropic_2024, "
        "anthropic_patch, gemini or fixed"
    )
