"""The settings an image is prepared with, checked when they are made, and the key that names
what they change in the encoded bytes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FITS = ("pad", "crop", "stretch")
FORMATS = ("jpeg", "png")
ENCODINGS = ("data_url", "base64", "url")

MEDIA_TYPES = {"jpeg": "image/jpeg", "png": "image/png"}

PIPELINE_VERSION = 1
"""Bumped whenever a change to the pipeline would change the encoded bytes (invalidates caches)."""


@dataclass
class ImageSettings:
    """How an image is turned into what a judge is sent: the ``images`` node of the config
    (:class:`mmjudge.config.SweepConfig`), checked when it is made.

    Not frozen: Hydra sets command-line overrides on the node, which a frozen dataclass
    refuses. Nothing hashes it; :meth:`key` names what it changes in the encoded bytes.
    """

    size: int = 512
    """Output width and height in pixels."""
    fit: str = "pad"
    """``pad`` letterboxes, ``crop`` centre-crops, ``stretch`` ignores the aspect ratio."""
    format: str = "jpeg"
    """Output format: ``jpeg`` or ``png``."""
    quality: int = 90
    """JPEG quality, 1-100 (ignored for PNG)."""
    encoding: str = "data_url"
    """``data_url``, ``base64`` (bare), or ``url`` (pass http(s) sources through)."""
    pad_color: tuple[int, int, int] = (255, 255, 255)
    """RGB colour of letterbox bars and of whatever shows through transparent pixels."""
    max_pixels: int = 40_000_000
    """Images whose header declares more pixels than this are refused before decoding."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Normalise the spelling (``JPG`` is ``jpeg``) and check every value.

        Raises:
            ValueError: a value out of range or not one of the choices, in one line naming
                the setting (the config turns it into a ``ConfigError``).
        """
        fmt = str(self.format).lower()
        self.format = "jpeg" if fmt == "jpg" else fmt
        self.fit = str(self.fit).lower()
        self.encoding = str(self.encoding).lower()
        _check_choice("fit", self.fit, FITS)
        _check_choice("format", self.format, FORMATS)
        _check_choice("encoding", self.encoding, ENCODINGS)
        if not _is_int(self.size) or self.size < 1:
            raise ValueError(f"images.size={self.size!r} must be a positive integer")
        if not _is_int(self.quality) or not 1 <= self.quality <= 100:
            raise ValueError(f"images.quality={self.quality!r} must be an integer from 1 to 100")
        if not _is_int(self.max_pixels) or self.max_pixels < 1:
            raise ValueError(f"images.max_pixels={self.max_pixels!r} must be a positive integer")
        self.pad_color = _check_color(self.pad_color)

    @property
    def media_type(self) -> str:
        """MIME type of the encoded output."""
        return MEDIA_TYPES[self.format]

    def key(self) -> str:
        """Everything that changes the encoded bytes, as a short stable string.

        ``encoding`` and ``max_pixels`` are left out: the first only changes how the same bytes
        are wrapped, the second only decides whether an image is refused.
        """
        parts = [
            f"v{PIPELINE_VERSION}",
            f"size={self.size}",
            f"fit={self.fit}",
            f"format={self.format}",
        ]
        if self.format == "jpeg":
            parts.append(f"quality={self.quality}")
        parts.append("pad=" + ",".join(str(c) for c in self.pad_color))
        return ";".join(parts)


def _check_choice(name: str, value: str, allowed: Sequence[str]) -> None:
    if value not in allowed:
        raise ValueError(f"images.{name}={value!r} is not one of {', '.join(allowed)}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_color(value: Any) -> tuple[int, int, int]:
    try:
        channels = () if isinstance(value, str) else tuple(value)
    except TypeError:
        channels = ()
    if len(channels) != 3 or not all(_is_int(c) and 0 <= c <= 255 for c in channels):
        raise ValueError(f"images.pad_color={value!r} must be three integers from 0 to 255")
    return (channels[0], channels[1], channels[2])
