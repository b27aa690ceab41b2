#!/usr/bin/env python3
"""Build the synthetic ``demo_fashion`` relevance dataset.

Everything in the dataset is invented: the products are flat garment drawings made with
Pillow, the catalogue text is assembled from word lists, and the two "annotators" are
deterministic rules with a seeded error rate. Nothing here is a real product or a real
human label. The point is a small, offline demo and test set for mmjudge.

Usage (from the repository root)::

    python scripts/generate_demo_fashion.py            # rewrite the shipped copy
    python scripts/generate_demo_fashion.py --out DIR  # write a fresh copy somewhere else

Only the standard library and Pillow are needed. The same seed gives the same bytes.
"""

import argparse
import hashlib
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

SEED = 20240517
HERE = Path(__file__).resolve().parent.parent / "datasets" / "demo_fashion"
ANNOTATORS = ("annotator_a", "annotator_b")
GRADES = (0, 1, 2)
RESULTS_PER_QUERY = 8
EXTRA_PRODUCTS = 16
CONTRADICTION_SHARE = 0.12
SLIP_RATE = {"annotator_a": 0.02, "annotator_b": 0.04}
FIELD_ORDER = ("name", "product_type", "colour", "pattern", "description")

# --------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (196, 32, 44),
    "pink": (238, 148, 178),
    "navy": (28, 38, 84),
    "blue": (44, 104, 200),
    "black": (28, 28, 32),
    "grey": (132, 134, 140),
    "white": (250, 250, 248),
    "beige": (214, 194, 158),
    "green": (40, 138, 72),
    "yellow": (240, 198, 44),
}
COLOUR_NAMES = tuple(COLOURS)

# Colour pairs that annotator_b accepts as the same colour (annotator_a does not).
CLOSE_COLOURS = (("navy", "blue"), ("pink", "red"), ("beige", "white"), ("grey", "black"))

# For a colour-ambiguous drawing, the shade is pulled towards this neighbour.
COLOUR_LEAN = {
    "navy": "black",
    "black": "navy",
    "blue": "navy",
    "grey": "beige",
    "beige": "grey",
    "pink": "red",
    "red": "pink",
}

# Ink used for the stripes, dots and checks drawn on each base colour.
PATTERN_INK = {
    "red": (250, 250, 248),
    "pink": (250, 250, 248),
    "navy": (250, 250, 248),
    "blue": (250, 250, 248),
    "black": (250, 250, 248),
    "grey": (250, 250, 248),
    "white": (28, 38, 84),
    "beige": (112, 80, 52),
    "green": (250, 250, 248),
    "yellow": (28, 38, 84),
}
INK_WORD = {
    "white": "navy",
    "yellow": "navy",
    "beige": "brown",
}

PATTERNS = ("solid", "stripes", "dots", "checks")
PATTERN_FIELD = {"solid": "Solid", "stripes": "Striped", "dots": "Polka dot", "checks": "Checked"}

KINDS = ("t-shirt", "v-neck tee", "dress", "skirt", "jacket", "trousers", "shorts")
CLOSE_KINDS = (("t-shirt", "v-neck tee"), ("dress", "skirt"), ("trousers", "shorts"))
KIND_FIELD = {
    "t-shirt": "T-shirt",
    "v-neck tee": "V-neck tee",
    "dress": "Dress",
    "skirt": "Skirt",
    "jacket": "Jacket",
    "trousers": "Trousers",
    "shorts": "Shorts",
}
KIND_NOUNS = {
    "t-shirt": ("Crew-neck Tee", "T-Shirt", "Crew Tee", "Boxy Tee"),
    "v-neck tee": ("V-neck Tee", "V-neck T-Shirt", "Deep V Tee"),
    "dress": ("Midi Dress", "Skater Dress", "Shift Dress", "Sundress", "Tea Dress"),
    "skirt": ("A-line Skirt", "Mini Skirt", "Midi Skirt", "Flared Skirt"),
    "jacket": ("Tailored Jacket", "Single-breasted Blazer", "Utility Jacket", "Cropped Jacket"),
    "trousers": ("Straight-leg Trousers", "Wide-leg Trousers", "Chinos", "Tailored Trousers"),
    "shorts": ("Chino Shorts", "Bermuda Shorts", "Tailored Shorts", "Linen Shorts"),
}
KIND_PHRASES = {
    "t-shirt": ("crew-neck t-shirt", "short-sleeved t-shirt", "boxy crew-neck tee"),
    "v-neck tee": ("v-neck t-shirt", "short-sleeved v-neck tee"),
    "dress": ("sleeveless dress with a flared skirt", "knee-length dress", "fitted dress"),
    "skirt": ("A-line skirt", "flared skirt with a flat waistband", "knee-length skirt"),
    "jacket": ("single-breasted jacket", "tailored jacket with notch lapels", "buttoned jacket"),
    "trousers": ("straight-leg trousers", "mid-rise trousers", "pleat-free trousers"),
    "shorts": ("mid-thigh shorts", "shorts with a flat front", "relaxed shorts"),
}
ADJECTIVES = (
    "Ribbed",
    "Classic",
    "Relaxed",
    "Organic Cotton",
    "Slim-fit",
    "Oversized",
    "Linen-blend",
    "Everyday",
    "Soft-touch",
    "Heavyweight",
    "Essential",
    "Washed",
)
DETAILS = (
    "Cut from soft cotton jersey.",
    "Made from a breathable linen blend.",
    "Machine washable at 30 degrees.",
    "Finished with a clean, double-stitched hem.",
    "A wardrobe staple for every season.",
    "Easy to pair with denim or chinos.",
    "True to size; the model wears a medium.",
    "Woven from responsibly sourced fibres.",
)
BACKGROUNDS = ((246, 245, 242), (240, 243, 247), (247, 241, 234), (242, 246, 241), (250, 250, 250))

# --------------------------------------------------------------------------------------
# Queries: (text, garment kind, colour or None, pattern or None)
# --------------------------------------------------------------------------------------

QUERY_SPECS: tuple[tuple[str, str, str | None, str | None], ...] = (
    ("red striped t-shirt", "t-shirt", "red", "stripes"),
    ("navy dress", "dress", "navy", None),
    ("polka dot skirt", "skirt", None, "dots"),
    ("checked trousers", "trousers", None, "checks"),
    ("black jacket", "jacket", "black", None),
    ("v-neck tee in green", "v-neck tee", "green", None),
    ("white t-shirt", "t-shirt", "white", None),
    ("pink dress", "dress", "pink", None),
    ("grey trousers", "trousers", "grey", None),
    ("beige shorts", "shorts", "beige", None),
    ("yellow polka dot dress", "dress", "yellow", "dots"),
    ("striped shorts", "shorts", None, "stripes"),
    ("blue jacket", "jacket", "blue", None),
    ("black skirt", "skirt", "black", None),
    ("navy striped v-neck tee", "v-neck tee", "navy", "stripes"),
    ("red skirt", "skirt", "red", None),
    ("plain white v-neck", "v-neck tee", "white", "solid"),
    ("green checked jacket", "jacket", "green", "checks"),
    ("beige trousers", "trousers", "beige", None),
    ("navy shorts", "shorts", "navy", None),
    ("pink striped t-shirt", "t-shirt", "pink", "stripes"),
    ("black dress", "dress", "black", None),
    ("grey jacket", "jacket", "grey", None),
    ("blue trousers", "trousers", "blue", None),
    ("yellow t-shirt", "t-shirt", "yellow", None),
    ("checked skirt", "skirt", None, "checks"),
    ("red polka dot dress", "dress", "red", "dots"),
    ("solid black t-shirt", "t-shirt", "black", "solid"),
    ("white shorts", "shorts", "white", None),
    ("blue striped dress", "dress", "blue", "stripes"),
)


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    kind: str
    colour: str | None
    pattern: str | None


@dataclass(frozen=True)
class Style:
    """How one product picture is laid out."""

    background: tuple[int, int, int] = (250, 250, 250)
    period: float = 8.0
    phase: float = 0.0
    margin: float = 0.1
    shadow: bool = False


@dataclass(eq=False)
class Product:
    """One catalogue product: what is drawn (the truth) and what the text says."""

    kind: str
    colour: str
    pattern: str
    origin: str = ""
    pid: str = ""
    ambiguous: tuple[str, ...] = ()
    stated: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    size: tuple[int, int] = (0, 0)
    style: Style = field(default_factory=Style)


QUERIES = tuple(
    Query(f"q{i:02d}", text, kind, colour, pattern)
    for i, (text, kind, colour, pattern) in enumerate(QUERY_SPECS, start=1)
)

# --------------------------------------------------------------------------------------
# Grading rules
# --------------------------------------------------------------------------------------


def _pair_in(a: str, b: str, pairs: Sequence[tuple[str, str]]) -> bool:
    return (a, b) in pairs or (b, a) in pairs


def kind_relation(wanted: str, seen: str) -> str:
    """'same', 'close' or 'other'."""
    if wanted == seen:
        return "same"
    return "close" if _pair_in(wanted, seen, CLOSE_KINDS) else "other"


def rule_grade(query: Query, kind: str, colour: str, pattern: str, lenient: bool) -> int:
    """Grade one product as seen by an annotator (before any random slip).

    Each defect counts one: a close (not identical) garment kind, a named colour that is
    off, a named pattern that is off. Grade 2 needs the same kind and no defect, grade 1
    a same-or-close kind and exactly one defect, anything else is 0. With ``lenient``,
    colours listed in CLOSE_COLOURS count as matching.
    """
    relation = kind_relation(query.kind, kind)
    if relation == "other":
        return 0
    defects = 1 if relation == "close" else 0
    colour_ok = (
        query.colour is None
        or colour == query.colour
        or (lenient and _pair_in(colour, query.colour, CLOSE_COLOURS))
    )
    if not colour_ok:
        defects += 1
    if query.pattern is not None and pattern != query.pattern:
        defects += 1
    return 2 if defects == 0 else 1 if defects == 1 else 0


def truth_grade(query: Query, product: Product) -> int:
    """The strict grade of the drawn attributes (annotator_a without slips)."""
    return rule_grade(query, product.kind, product.colour, product.pattern, lenient=False)


def seen_by_b(product: Product) -> tuple[str, str]:
    """Colour and pattern as annotator_b reads them: the text wins where the image is unclear."""
    colour, pattern = product.colour, product.pattern
    if "colour" in product.ambiguous and product.stated.get("colour"):
        colour = product.stated["colour"]
    if "pattern" in product.ambiguous and product.stated.get("pattern"):
        pattern = product.stated["pattern"]
    return colour, pattern


def slip(grade: int, rng: random.Random) -> int:
    if grade == 0:
        return 1
    if grade == 2:
        return 1
    return rng.choice((0, 2))


def cohen_kappa(first: Sequence[int], second: Sequence[int]) -> float:
    total = len(first)
    observed = sum(1 for x, y in zip(first, second, strict=True) if x == y) / total
    count_a, count_b = Counter(first), Counter(second)
    expected = sum(count_a[g] * count_b[g] for g in GRADES) / (total * total)
    return (observed - expected) / (1 - expected)


# --------------------------------------------------------------------------------------
# Catalogue
# --------------------------------------------------------------------------------------


def _random_pattern(rng: random.Random) -> str:
    return rng.choices(PATTERNS, weights=(5, 2, 2, 2))[0]


def _other(rng: random.Random, options: Sequence[str], *exclude: str | None) -> str:
    return rng.choice([o for o in options if o not in exclude])


def _close_colour(colour: str) -> str | None:
    for a, b in CLOSE_COLOURS:
        if colour == a:
            return b
        if colour == b:
            return a
    return None


def _close_kind(kind: str) -> str | None:
    for a, b in CLOSE_KINDS:
        if kind == a:
            return b
        if kind == b:
            return a
    return None


def _near_miss(query: Query, rng: random.Random) -> Product:
    """A product one step away from the query (a likely grade 1)."""
    colour = query.colour or rng.choice(COLOUR_NAMES)
    pattern = query.pattern or _random_pattern(rng)
    options = []
    if query.colour and _close_colour(query.colour):
        options.append("close colour")
        options.append("close colour")
    if _close_kind(query.kind):
        options.append("close kind")
    if query.pattern:
        options.append("other pattern")
    if query.colour:
        options.append("other colour")
    choice = rng.choice(options)
    if choice == "close colour":
        return Product(query.kind, _close_colour(colour) or colour, pattern, query.qid)
    if choice == "close kind":
        return Product(_close_kind(query.kind) or query.kind, colour, pattern, query.qid)
    if choice == "other pattern":
        return Product(query.kind, colour, _other(rng, PATTERNS, query.pattern), query.qid)
    far = [c for c in COLOUR_NAMES if c != colour and c != _close_colour(colour)]
    return Product(query.kind, rng.choice(far), pattern, query.qid)


def build_catalogue(rng: random.Random) -> list[Product]:
    products: list[Product] = []
    for query in QUERIES:
        for _ in range(2):
            colour = query.colour or rng.choice(COLOUR_NAMES)
            pattern = query.pattern or _random_pattern(rng)
            products.append(Product(query.kind, colour, pattern, query.qid))
        products.append(_near_miss(query, rng))
    for _ in range(EXTRA_PRODUCTS):
        products.append(
            Product(rng.choice(KINDS), rng.choice(COLOUR_NAMES), _random_pattern(rng), "extra")
        )
    return products


def _hard_negative(query: Query, product: Product) -> bool:
    """A grade-0 product that shares something visible with the query."""
    if kind_relation(query.kind, product.kind) != "other":
        return True
    return product.colour == query.colour or (
        query.pattern is not None and product.pattern == query.pattern
    )


def _take(rng: random.Random, pool: list[Product], first: list[Product], n: int) -> list[Product]:
    preferred = [p for p in pool if p in first]
    rest = [p for p in pool if p not in first]
    rng.shuffle(preferred)
    rng.shuffle(rest)
    return (preferred + rest)[:n]


def select_results(rng: random.Random, catalogue: list[Product]) -> list[tuple[Query, Product]]:
    pairs: list[tuple[Query, Product]] = []
    for query in QUERIES:
        buckets: dict[int, list[Product]] = {0: [], 1: [], 2: []}
        for product in catalogue:
            buckets[truth_grade(query, product)].append(product)
        own = [p for p in catalogue if p.origin == query.qid]
        n2 = min(rng.choice((2, 3, 3)), len(buckets[2]))
        n1 = min(3, len(buckets[1]))
        picked = _take(rng, buckets[2], own, n2) + _take(rng, buckets[1], own, n1)
        hard = [p for p in buckets[0] if _hard_negative(query, p)][:]
        rng.shuffle(hard)
        negatives = hard[:1]
        others = [p for p in buckets[0] if p not in negatives]
        rng.shuffle(others)
        negatives += others[: RESULTS_PER_QUERY - len(picked) - len(negatives)]
        chosen = picked + negatives
        rng.shuffle(chosen)
        pairs.extend((query, p) for p in chosen)
    return pairs


# --------------------------------------------------------------------------------------
# Catalogue text
# --------------------------------------------------------------------------------------


def assign_text(rng: random.Random, products: list[Product]) -> None:
    """Pick ambiguous drawings, contradicting text and gaps, then write the text fields."""
    n = len(products)
    leanable = [p for p in products if p.colour in COLOUR_LEAN]
    for p in rng.sample(leanable, k=max(1, round(0.08 * n))):
        p.ambiguous += ("colour",)
    patterned = [p for p in products if p.pattern != "solid"]
    for p in rng.sample(patterned, k=max(1, round(0.08 * n))):
        p.ambiguous += ("pattern",)

    stated: dict[str, dict[str, str]] = {
        p.pid: {"product_type": p.kind, "colour": p.colour, "pattern": p.pattern} for p in products
    }
    contradicting = rng.sample(products, k=max(1, round(CONTRADICTION_SHARE * n)))
    for p in contradicting:
        which = [a for a in ("colour", "pattern") if a in p.ambiguous] or ["colour", "pattern"]
        attribute = rng.choice(which)
        if attribute == "colour":
            if "colour" in p.ambiguous:
                stated[p.pid]["colour"] = COLOUR_LEAN[p.colour]
            else:
                stated[p.pid]["colour"] = _other(rng, COLOUR_NAMES, p.colour)
        elif "pattern" in p.ambiguous:
            stated[p.pid]["pattern"] = "solid"
        else:
            stated[p.pid]["pattern"] = _other(rng, PATTERNS, p.pattern)

    protected = {p.pid for p in contradicting}
    for p in products:
        text = stated[p.pid]
        if p.pid not in protected:
            if rng.random() < 0.04:
                text["product_type"] = ""
            if rng.random() < 0.10:
                text["colour"] = ""
            if rng.random() < 0.15:
                text["pattern"] = ""
        p.stated = text
        p.fields = _fields(rng, p)


def _fields(rng: random.Random, p: Product) -> dict[str, str]:
    kind = p.kind  # the garment kind is never misstated, only sometimes left out
    colour = p.stated["colour"]
    pattern = p.stated["pattern"]
    adjective = rng.choice(ADJECTIVES)
    noun = rng.choice(KIND_NOUNS[kind])
    roll = rng.random()
    if pattern and pattern != "solid" and roll < 0.35:
        prefix = {"stripes": "Striped", "dots": "Polka Dot", "checks": "Checked"}[pattern]
        name = f"{prefix} {noun}"
    elif colour and roll < 0.55:
        name = f"{adjective} {noun} in {colour.title()}"
    else:
        name = f"{adjective} {noun}"

    if rng.random() < 0.07:
        description = ""
    else:
        phrase = rng.choice(KIND_PHRASES[kind])
        adj = adjective.lower() if adjective != "Organic Cotton" else "organic cotton"
        article = "An" if adj[0] in "aeiou" else "A"
        parts = [f"{article} {adj} {phrase}"]
        if colour and rng.random() < 0.8:
            parts.append(f"in {colour}")
        if pattern and rng.random() < 0.8:
            ink = INK_WORD.get(colour or p.colour, "white")
            parts.append(
                {
                    "solid": "with a plain, unpatterned finish",
                    "stripes": f"with {ink} horizontal stripes",
                    "dots": f"with a {ink} polka dot print",
                    "checks": "with a small woven check",
                }[pattern]
            )
        description = " ".join(parts) + ". " + rng.choice(DETAILS)
    fields = {
        "name": name,
        "product_type": KIND_FIELD[kind] if p.stated["product_type"] else "",
        "colour": colour.title() if colour else "",
        "pattern": PATTERN_FIELD[pattern] if pattern else "",
        "description": description,
    }
    return {key: fields[key] for key in FIELD_ORDER}


# --------------------------------------------------------------------------------------
# Drawing
# --------------------------------------------------------------------------------------

Point = tuple[float, float]

OUTLINES: dict[str, list[Point]] = {
    "t-shirt": [
        (38, 12), (30, 14), (10, 30), (18, 44), (28, 38), (28, 92), (72, 92), (72, 38),
        (82, 44), (90, 30), (70, 14), (62, 12), (58, 17), (50, 19), (42, 17),
    ],
    "v-neck tee": [
        (38, 12), (30, 14), (10, 30), (18, 44), (28, 38), (28, 92), (72, 92), (72, 38),
        (82, 44), (90, 30), (70, 14), (62, 12), (50, 30),
    ],
    "dress": [
        (40, 6), (35, 8), (33, 22), (35, 40), (18, 94), (82, 94), (65, 40), (67, 22),
        (65, 8), (60, 6), (55, 15), (45, 15),
    ],
    "skirt": [(32, 24), (68, 24), (69, 32), (84, 84), (16, 84), (31, 32)],
    "jacket": [
        (38, 8), (24, 12), (12, 70), (22, 73), (28, 40), (28, 92), (72, 92), (72, 40),
        (78, 73), (88, 70), (76, 12), (62, 8), (50, 44),
    ],
    "trousers": [(30, 6), (70, 6), (76, 96), (55, 96), (50, 30), (45, 96), (24, 96)],
    "shorts": [(28, 30), (72, 30), (80, 74), (55, 76), (50, 52), (45, 76), (20, 74)],
}  # fmt: skip

DETAIL_LINES: dict[str, list[list[Point]]] = {
    "t-shirt": [
        [(38, 14.5), (42, 19.5), (50, 21.5), (58, 19.5), (62, 14.5)],
        [(30, 15), (28, 38)],
        [(70, 15), (72, 38)],
        [(28, 88), (72, 88)],
    ],
    "v-neck tee": [
        [(38.5, 15), (50, 33), (61.5, 15)],
        [(30, 15), (28, 38)],
        [(70, 15), (72, 38)],
        [(28, 88), (72, 88)],
    ],
    "dress": [[(35, 40), (65, 40)], [(45, 15), (50, 20), (55, 15)]],
    "skirt": [[(31, 32), (69, 32)], [(50, 32), (50, 44)]],
    "jacket": [
        [(38, 8), (43, 30), (50, 44)],
        [(62, 8), (57, 30), (50, 44)],
        [(50, 44), (50, 92)],
        [(32, 72), (44, 72)],
        [(56, 72), (68, 72)],
        [(28, 40), (28, 92)],
        [(72, 40), (72, 92)],
    ],
    "trousers": [[(30.4, 12), (69.6, 12)], [(50, 12), (50, 28)]],
    "shorts": [[(28.6, 36), (71.4, 36)], [(50, 36), (50, 48)]],
}
BUTTONS: dict[str, list[Point]] = {
    "jacket": [(53, 54), (53, 66), (53, 78)],
    "trousers": [(50, 9)],
    "shorts": [(50, 33)],
}


def _blend(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> tuple[int, int, int]:
    return (
        round(a[0] + (b[0] - a[0]) * t),
        round(a[1] + (b[1] - a[1]) * t),
        round(a[2] + (b[2] - a[2]) * t),
    )


def _luma(c: tuple[int, int, int]) -> float:
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]


def assign_style(rng: random.Random, p: Product) -> None:
    width = rng.randrange(300, 641, 20)
    aspect = rng.choice((1.0, 1.0, 1.25, 4 / 3, 1.5, 0.75))
    height = min(800, round(width * aspect))
    p.size = (width, height)
    background = rng.choice(BACKGROUNDS)
    period = rng.uniform(6.5, 10.0)
    phase = rng.uniform(0.0, 1.0)
    margin = rng.uniform(0.07, 0.12)
    p.style = Style(background, period, phase, margin, shadow=rng.random() < 0.6)


def draw_product(p: Product) -> Image.Image:
    width, height = p.size
    style = p.style
    background = style.background
    base = COLOURS[p.colour]
    if "colour" in p.ambiguous:
        base = _blend(base, COLOURS[COLOUR_LEAN[p.colour]], 0.42)
    ink = PATTERN_INK[p.colour]
    if "pattern" in p.ambiguous:
        ink = _blend(base, ink, 0.2)
    dark = _luma(base) < 70
    line = _blend(base, (255, 255, 255), 0.35) if dark else _blend(base, (0, 0, 0), 0.45)

    template = OUTLINES[p.kind]
    xs = [x for x, _ in template]
    ys = [y for _, y in template]
    margin = style.margin
    scale = min(
        width * (1 - 2 * margin) / (max(xs) - min(xs)),
        height * (1 - 2 * margin) / (max(ys) - min(ys)),
    )
    off_x = (width - (max(xs) - min(xs)) * scale) / 2 - min(xs) * scale
    off_y = (height - (max(ys) - min(ys)) * scale) / 2 - min(ys) * scale

    def at(point: Point) -> tuple[float, float]:
        return (off_x + point[0] * scale, off_y + point[1] * scale)

    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    outline = [at(pt) for pt in template]
    if style.shadow:
        bottom = max(y for _, y in outline)
        left, right = min(x for x, _ in outline), max(x for x, _ in outline)
        shade = _blend(background, (0, 0, 0), 0.06)
        draw.ellipse(
            (left, bottom - scale * 2.5, right, min(height - 1, bottom + scale * 2.5)), fill=shade
        )

    if p.kind == "jacket":
        shirt = (214, 224, 238) if p.colour in ("white", "beige") else (244, 244, 244)
        draw.polygon([at(pt) for pt in ((38, 8), (50, 46), (62, 8))], fill=shirt)

    layer = Image.new("RGB", (width, height), base)
    paint = ImageDraw.Draw(layer)
    period = style.period * scale
    phase = style.phase * period
    if "pattern" in p.ambiguous:
        period *= 0.6
    if p.pattern == "stripes":
        y = -phase
        while y < height:
            paint.rectangle((0, y, width, y + period * 0.42), fill=ink)
            y += period
    elif p.pattern == "dots":
        radius = period * 0.2
        row = 0
        y = -phase
        while y < height + period:
            x = -phase + (period / 2 if row % 2 else 0)
            while x < width + period:
                paint.ellipse((x - radius, y - radius, x + radius, y + radius), fill=ink)
                x += period
            y += period * 0.87
            row += 1
    elif p.pattern == "checks":
        mid = _blend(base, ink, 0.5)
        band = period * 0.5
        y = -phase
        while y < height:
            paint.rectangle((0, y, width, y + band), fill=mid)
            y += period
        x = -phase
        while x < width:
            paint.rectangle((x, 0, x + band, height), fill=mid)
            y = -phase
            while y < height:
                paint.rectangle((x, y, x + band, y + band), fill=ink)
                y += period
            x += period
    mask = Image.new("L", (width, height), 0)
    ImageDraw.Draw(mask).polygon(outline, fill=255)
    image.paste(layer, (0, 0), mask)

    stroke = max(1, round(scale * 0.6))
    for detail in DETAIL_LINES.get(p.kind, []):
        draw.line([at(pt) for pt in detail], fill=line, width=max(1, stroke - 1), joint="curve")
    for centre in BUTTONS.get(p.kind, []):
        cx, cy = at(centre)
        r = scale * 1.4
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=line)
    draw.polygon(outline, outline=line, width=stroke)
    return image.quantize(colors=16, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)


# --------------------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------------------


@dataclass
class Dataset:
    products: list[Product]
    items: list[dict]


def build(seed: int = SEED) -> Dataset:
    """Build the whole dataset in memory (no files written)."""
    rng = random.Random(seed)
    catalogue = build_catalogue(rng)
    pairs = select_results(rng, catalogue)

    used: list[Product] = []
    for _, product in pairs:
        if not any(product is u for u in used):
            used.append(product)
    order = list(range(len(used)))
    rng.shuffle(order)
    for number, index in enumerate(order, start=1):
        used[index].pid = f"p{number:03d}"
    products = sorted(used, key=lambda p: p.pid)

    assign_text(rng, products)
    for product in products:
        assign_style(rng, product)

    slip_rng = random.Random(seed * 31 + 7)
    items = []
    for query, product in pairs:
        grade_a = truth_grade(query, product)
        colour_b, pattern_b = seen_by_b(product)
        grade_b = rule_grade(query, product.kind, colour_b, pattern_b, lenient=True)
        if slip_rng.random() < SLIP_RATE["annotator_a"]:
            grade_a = slip(grade_a, slip_rng)
        if slip_rng.random() < SLIP_RATE["annotator_b"]:
            grade_b = slip(grade_b, slip_rng)
        items.append(
            {
                "query_id": query.qid,
                "query": query.text,
                "result_id": product.pid,
                "fields": dict(product.fields),
                "images": [f"images/{product.pid}.png"],
                "labels": {"annotator_a": grade_a, "annotator_b": grade_b},
            }
        )
    return Dataset(products, items)


def _drawn(p: Product) -> dict[str, str]:
    return {"product_type": p.kind, "colour": p.colour, "pattern": p.pattern}


def _contradicted(p: Product) -> list[str]:
    """The attributes whose (non-empty) text disagrees with the drawing."""
    return [k for k, v in _drawn(p).items() if p.stated[k] and p.stated[k] != v]


def ground_truth(seed: int = SEED) -> dict[str, dict[str, object]]:
    """What each product image actually shows, next to what its text claims.

    Keys are result ids. ``drawn`` holds the garment kind, colour and pattern of the image;
    ``stated`` holds the same attributes as the catalogue text gives them ("" when left
    out); ``ambiguous`` names the attributes that are hard to read from the image;
    ``contradicts`` names the attributes whose text disagrees with the image.
    """
    truth: dict[str, dict[str, object]] = {}
    for p in build(seed).products:
        truth[p.pid] = {
            "drawn": _drawn(p),
            "stated": dict(p.stated),
            "ambiguous": list(p.ambiguous),
            "contradicts": _contradicted(p),
        }
    return truth


def statistics(data: Dataset) -> dict[str, Any]:
    a = [item["labels"]["annotator_a"] for item in data.items]
    b = [item["labels"]["annotator_b"] for item in data.items]
    pairs = Counter(zip(a, b, strict=True))
    empty = Counter(k for p in data.products for k, v in p.fields.items() if not v)
    contradicting = sum(1 for p in data.products if _contradicted(p))
    return {
        "queries": len({item["query_id"] for item in data.items}),
        "items": len(data.items),
        "products": len(data.products),
        "grades": {
            "annotator_a": [a.count(g) for g in GRADES],
            "annotator_b": [b.count(g) for g in GRADES],
        },
        "agreement": sum(1 for x, y in zip(a, b, strict=True) if x == y) / len(a),
        "kappa": cohen_kappa(a, b),
        "confusion": [[pairs[(i, j)] for j in GRADES] for i in GRADES],
        "contradicting": contradicting,
        "ambiguous_colour": sum(1 for p in data.products if "colour" in p.ambiguous),
        "ambiguous_pattern": sum(1 for p in data.products if "pattern" in p.ambiguous),
        "empty_fields": {k: empty.get(k, 0) for k in FIELD_ORDER},
        "widths": (min(p.size[0] for p in data.products), max(p.size[0] for p in data.products)),
        "heights": (min(p.size[1] for p in data.products), max(p.size[1] for p in data.products)),
    }


def _percent(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.0f}%)"


def render_readme(stats: dict[str, Any], seed: int) -> str:
    total = stats["items"]
    grade_rows = "\n".join(
        f"| {name} | " + " | ".join(_percent(c, total) for c in stats["grades"][name]) + " |"
        for name in ANNOTATORS
    )
    confusion = "\n".join(
        f"| a = {g} | " + " | ".join(str(c) for c in row) + " |"
        for g, row in zip(GRADES, stats["confusion"], strict=True)
    )
    empty = ", ".join(f"{k}: {v}" for k, v in stats["empty_fields"].items())
    queries = "\n".join(f"| {q.qid} | {q.text} |" for q in QUERIES)
    close_kinds = ", ".join(f"{a} ~ {b}" for a, b in CLOSE_KINDS)
    close_colours = ", ".join(f"{a} ~ {b}" for a, b in CLOSE_COLOURS)
    return f"""# demo_fashion: a synthetic fashion relevance set

**This dataset is synthetic.** The "products" are flat garment shapes drawn with Pillow,
their catalogue text is stitched together from word lists, and the two "annotators" are
hand-written rules with a seeded slip rate. None of it describes real products, and none
of the labels come from real people.

It exists so that mmjudge can be demonstrated and tested end to end without a network or
a licensed dataset: the files are small, fully reproducible, and exercise the parts that
matter for judging search relevance (text fields with gaps, text that disagrees with the
picture, images of different shapes, and two label sets that mostly but not always agree).
Numbers measured on it say nothing about how a judge performs on real catalogues.

## Contents

| | count |
|---|---|
| queries | {stats["queries"]} |
| (query, result) items | {total} |
| distinct products / images | {stats["products"]} |
| products whose text contradicts the image | {stats["contradicting"]} |
| products with a hard-to-read colour | {stats["ambiguous_colour"]} |
| products with a faint, hard-to-read pattern | {stats["ambiguous_pattern"]} |

Each query has {RESULTS_PER_QUERY} results; a product can be a result of several queries
and then reuses its image. Images are palette PNGs, {stats["widths"][0]}-{stats["widths"][1]}
px wide and {stats["heights"][0]}-{stats["heights"][1]} px high (square, portrait and
landscape). Empty text fields (product count): {empty}.

### Grade distribution

| annotator | 0 | 1 | 2 |
|---|---|---|---|
{grade_rows}

Annotator agreement: {100 * stats["agreement"]:.1f}% of items get the same grade;
Cohen's kappa between annotator_a and annotator_b = **{stats["kappa"]:.3f}**.

| | b = 0 | b = 1 | b = 2 |
|---|---|---|---|
{confusion}

## File format

`items.jsonl` holds one JSON object per line, one line per (query, result) pair:

```json
{{"query_id": "q01", "query": "red striped t-shirt", "result_id": "p001",
  "fields": {{"name": "...", "product_type": "...", "colour": "...", "pattern": "...",
             "description": "..."}},
  "images": ["images/p001.png"], "labels": {{"annotator_a": 2, "annotator_b": 1}}}}
```

- `fields` keeps the order name, product_type, colour, pattern, description. All values
  are strings; a missing value is `""`, as in a real catalogue with gaps.
- `images` lists paths relative to this folder.
- `labels` maps each annotator to a grade: 0 = not relevant, 1 = partly relevant,
  2 = relevant.
- No (query_id, result_id) pair appears twice.

## How the data is made

Every product has a drawn garment kind ({", ".join(KINDS)}), a drawn main colour
({", ".join(COLOUR_NAMES)}) and a drawn pattern ({", ".join(PATTERNS)}). **The drawing is
the truth** used for grading. The catalogue text is written from a separate set of
"stated" attributes that usually equals the drawing, except that:

- about {round(100 * CONTRADICTION_SHARE)}% of products have a colour or pattern field
  (and the name/description written from it) that disagrees with the image, e.g. the
  text says "Blue" while the drawn garment is red, or "Solid" while it is striped;
- some products leave product_type, colour, pattern or description empty;
- a few images are hard to read: a colour shade pulled towards a neighbouring colour
  (navy towards black, pink towards red, ...), or a faint, low-contrast pattern.

For every query the catalogue holds a few exact matches and near misses; each query gets
a mix of exact matches, partial matches and unrelated or misleading products.

## Grading guidelines

Both annotators grade what the image shows, on the 0/1/2 scale. A query names a garment
kind and may name a colour and/or a pattern ("plain" and "solid" mean no pattern).
Close garment kinds are: {close_kinds}.

Count the *defects* of a product against the query: one if its kind is close to (but not
the same as) the query's kind, one if a colour named in the query is off, one if a pattern
named in the query is off. Then:

- **2**: the same garment kind and no defect; every colour and pattern the query names is
  there.
- **1**: the same or a close garment kind with exactly one defect.
- **0**: any other kind of garment, or two or more defects.

### annotator_a (strict)

- Goes by the image only; never reads the text fields.
- Colours must match exactly: navy is not blue, pink is not red.
- Slips: on about {round(100 * SLIP_RATE["annotator_a"])}% of items (seeded) the grade
  moves one step (0 becomes 1, 2 becomes 1, 1 becomes 0 or 2).

### annotator_b (lenient on colour, reads the text when unsure)

- Treats these colour pairs as the same colour: {close_colours}.
- When the image's colour or pattern is hard to read, takes that attribute from the
  product's colour or pattern field instead (when the field is not empty), even if the
  text is wrong.
- Slips: on about {round(100 * SLIP_RATE["annotator_b"])}% of items (seeded) the grade
  moves one step, as for annotator_a.

## Queries

| id | query |
|---|---|
{queries}

## Regenerating

From the repository root, with Pillow installed:

```
python scripts/generate_demo_fashion.py             # rewrite the copy shipped in the package
python scripts/generate_demo_fashion.py --out DIR   # write a copy to DIR instead
```

The generator uses seed {seed} and only the Python standard library plus Pillow, so a
run reproduces these files byte for byte (PNG bytes can change with a different Pillow or
zlib build even though the pixels stay the same). `ground_truth()` in
`scripts/generate_demo_fashion.py` returns what each image shows next to what its text claims.
"""


# --------------------------------------------------------------------------------------
# Test banks: what each query asks for, as nuggets and as questions
# --------------------------------------------------------------------------------------

PATTERN_NUGGET = {
    "solid": "plain, no pattern",
    "stripes": "striped",
    "dots": "polka dots",
    "checks": "checked",
}
PATTERN_QUESTION = {
    "solid": "Is it plain, with no pattern?",
    "stripes": "Is it striped?",
    "dots": "Does it have polka dots?",
    "checks": "Is it checked?",
}


def entry_id(query_id: str, text: str) -> str:
    """mmjudge's test-bank entry id: sha256 of the canonical JSON of [query id, text]."""
    canonical = json.dumps(
        [query_id, text], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def bank_entries(query: Query, kind: str) -> list[dict[str, Any]]:
    """The query's garment type, colour and pattern; every one can be seen in the drawing."""
    if kind == "nuggets":
        texts = [KIND_FIELD[query.kind].lower()]
        texts += [query.colour] if query.colour else []
        texts += [PATTERN_NUGGET[query.pattern]] if query.pattern else []
    else:
        texts = [f"Is it a {query.kind}?"]
        texts += [f"Is it {query.colour}?"] if query.colour else []
        texts += [PATTERN_QUESTION[query.pattern]] if query.pattern else []
    return [
        {
            "query_id": query.qid,
            "id": entry_id(query.qid, text),
            "kind": kind,
            "text": text,
            "visual": True,
        }
        for text in texts
    ]


def write_banks(out_dir: Path) -> None:
    for kind in ("nuggets", "questions"):
        with (out_dir / f"testbank_{kind}.jsonl").open("w", encoding="utf-8", newline="\n") as f:
            for query in QUERIES:
                for entry in bank_entries(query, kind):
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def write(data: Dataset, out_dir: Path, seed: int) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    images = out_dir / "images"
    images.mkdir(exist_ok=True)
    keep = {f"{p.pid}.png" for p in data.products}
    for stale in sorted(images.glob("p*.png")):
        if stale.name not in keep:
            stale.unlink()
    for product in data.products:
        draw_product(product).save(images / f"{product.pid}.png", optimize=True)
    with (out_dir / "items.jsonl").open("w", encoding="utf-8", newline="\n") as handle:
        for item in data.items:
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    write_banks(out_dir)
    stats = statistics(data)
    (out_dir / "README.md").write_text(render_readme(stats, seed), encoding="utf-8", newline="\n")
    return stats


def main(
    out_dir: Path | str | None = None, seed: int = SEED, quiet: bool = False
) -> dict[str, Any]:
    """Generate the dataset into ``out_dir`` (default: this script's folder)."""
    target = Path(out_dir) if out_dir is not None else HERE
    stats = write(build(seed), target, seed)
    if not quiet:
        print(f"wrote {target}")
        print(
            f"queries={stats['queries']} items={stats['items']} products={stats['products']} "
            f"contradicting={stats['contradicting']}"
        )
        for name in ANNOTATORS:
            counts = stats["grades"][name]
            print(f"{name}: " + " ".join(f"{g}:{c}" for g, c in zip(GRADES, counts, strict=True)))
        print(f"agreement={stats['agreement']:.3f} cohen_kappa={stats['kappa']:.3f}")
    return stats


def _cli(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the synthetic demo_fashion dataset.")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="output folder (default: the shipped copy)"
    )
    parser.add_argument("--seed", type=int, default=SEED, help=f"random seed (default: {SEED})")
    args = parser.parse_args(argv)
    main(args.out, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(_cli())
