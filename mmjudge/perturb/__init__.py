"""Perturbations: what an attacker who writes a result could do to it, applied to each
example before its request is built (``perturb`` group, :class:`~mmjudge.config.PerturbConfig`).

Each perturbation is a pure function of the example, the config and the seed: the draw for
an item comes from a generator seeded with ``(seed, perturbation name, item key)``, so an item
gets the same perturbation in every cell and on every rerun, whatever order items run in.
Nothing here touches the request or its cache key directly: the perturbed text is rendered by
the ordinary prompt, and a perturbed picture is sent with the hash of what is sent, so the
cache key changes exactly where the request does and a clean cell (``perturb=none``) keeps
its keys.

``inject_image`` draws into the picture *after* it is prepared (oriented, resized to
``images.size``, encoded): the text then has the same size in pixels on every picture the
judge sees, whatever the source's resolution, so it is legible and comparable across items,
and the prepared clean picture comes from the image cache as before.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import random
import textwrap

from PIL import Image, ImageDraw, ImageFont

from mmjudge.config import PerturbConfig
from mmjudge.data.schema import Example
from mmjudge.records import EncodedImage

__all__ = ["inject_image", "instruction", "perturb_example", "perturb_images", "stuffing"]


def item_random(seed: int, config: PerturbConfig, key: str) -> random.Random:
    """The generator of one item's perturbation (the same for an item in every cell)."""
    return random.Random(f"{seed}\t{config.name}\t{key}")


def instruction(config: PerturbConfig, grades: tuple[int, ...], rng: random.Random) -> str:
    """One of ``config.texts``, drawn with ``rng``, ``{top}`` replaced by the top grade."""
    text = rng.choice(config.texts)
    return text.replace("{top}", str(max(grades)))


def stuffing(query: str, repeat: int, rng: random.Random) -> str:
    """The query's terms, ``repeat`` times, each time in a shuffled order."""
    terms = query.split()
    rounds = []
    for _ in range(repeat):
        shuffled = list(terms)
        rng.shuffle(shuffled)
        rounds.append(" ".join(shuffled))
    return " ".join(rounds)


def perturb_example(
    example: Example, config: PerturbConfig, seed: int, grades: tuple[int, ...]
) -> Example:
    """The example with its text perturbed (``inject_text``, ``stuff_query``); the example
    itself for the other kinds, or when it has no text field to append to."""
    if config.kind not in ("inject_text", "stuff_query") or not example.fields:
        return example
    rng = item_random(seed, config, example.key)
    if config.kind == "inject_text":
        added = instruction(config, grades, rng)
    else:
        added = stuffing(example.query, config.repeat, rng)
    names = [name for name, _value in example.fields]
    target = names.index(config.field) if config.field in names else len(names) - 1
    fields = tuple(
        (name, f"{value} {added}" if position == target else value)
        for position, (name, value) in enumerate(example.fields)
    )
    return dataclasses.replace(example, fields=fields)


def perturb_images(
    images: tuple[EncodedImage, ...],
    config: PerturbConfig,
    seed: int,
    key: str,
    grades: tuple[int, ...],
    quality: int = 90,
) -> tuple[EncodedImage, ...]:
    """The pictures with an instruction drawn into each (``inject_image``); as they are for
    the other kinds. ``quality``: the JPEG quality of the re-encoded pictures."""
    if config.kind != "inject_image" or not images:
        return images
    rng = item_random(seed, config, key)
    text = instruction(config, grades, rng)
    height = rng.random()
    return tuple(inject_image(image, text, config.font_size, height, quality) for image in images)


def inject_image(
    image: EncodedImage, text: str, font_size: int, height: float, quality: int = 90
) -> EncodedImage:
    """``image`` with ``text`` drawn across it, black on a white band whose top is at
    ``height`` (0-1) of the free space, re-encoded in the same format; its ``sha256`` is that
    of the bytes sent, so it never shares a cache key with the clean picture."""
    raw = base64.b64decode(
        image.data.partition(",")[2] if image.encoding == "data_url" else image.data
    )
    with Image.open(io.BytesIO(raw)) as opened:
        picture = opened.convert("RGB")
    font = ImageFont.load_default(size=font_size)
    draw = ImageDraw.Draw(picture)
    width = max(8, int(picture.width / (font_size * 0.55)))
    block = "\n".join(textwrap.wrap(text, width=width)) or text
    left, top, _right, bottom = draw.multiline_textbbox((0, 0), block, font=font)
    margin = max(2, font_size // 4)
    free = max(0, picture.height - (bottom - top) - 2 * margin)
    y = int(free * height)
    draw.rectangle((0, y, picture.width, y + bottom - top + 2 * margin), fill=(255, 255, 255))
    draw.multiline_text((margin - left, y + margin - top), block, fill=(0, 0, 0), font=font)
    buffer = io.BytesIO()
    if image.media_type == "image/png":
        picture.save(buffer, format="PNG")
    else:
        picture.save(buffer, format="JPEG", quality=quality)
    sent = buffer.getvalue()
    encoded = base64.b64encode(sent).decode("ascii")
    return dataclasses.replace(
        image,
        sha256=hashlib.sha256(sent).hexdigest(),
        data=f"data:{image.media_type};base64,{encoded}"
        if image.encoding == "data_url"
        else encoded,
        width=picture.width,
        height=picture.height,
    )
