"""Image preprocessing: load → orient → RGB → resize → encode, cached by content hash.

Every step is a pure function of the source bytes and an :class:`ImageSettings`, so an encoded
image is fully identified by ``(sha256 of the source bytes, settings.key())``. That pair keys
the on-disk :class:`ImageCache`: a hit returns the stored payload without decoding anything.

Anything wrong with an image (missing, empty, not an image, truncated, too many pixels, an
unsupported pixel mode) becomes an :class:`~mmjudge.errors.ImageError` with a one-line message
naming the file; the caller records it on the row and the sweep carries on.

The settings and their checks are in :mod:`.settings`, the cache in :mod:`.cache`; this module
is the pipeline, and every caller imports all three from here.
"""

from __future__ import annotations

import base64
import hashlib
import io
import logging
import warnings
from pathlib import Path
from typing import NamedTuple

from PIL import Image, ImageOps

from mmjudge.errors import ImageError
from mmjudge.images.cache import EncodedPayload, ImageCache
from mmjudge.images.settings import (
    ENCODINGS,
    FITS,
    FORMATS,
    MEDIA_TYPES,
    PIPELINE_VERSION,
    ImageSettings,
)
from mmjudge.records import EncodedImage

__all__ = [
    "ENCODINGS",
    "FITS",
    "FORMATS",
    "MEDIA_TYPES",
    "PIPELINE_VERSION",
    "EncodedPayload",
    "ImageCache",
    "ImageSettings",
    "ImageSize",
    "encode_image_bytes",
    "image_dimensions",
    "is_url",
    "preprocess_image",
]

logger = logging.getLogger(__name__)

_EXIF_ORIENTATION = 0x0112
_ROTATED_ORIENTATIONS = (5, 6, 7, 8)
"""EXIF orientations that swap width and height when applied."""

_REFUSED_FORMATS = frozenset({"EPS"})
"""Formats never opened: Pillow hands EPS to an external Ghostscript process."""

_SIXTEEN_BIT_MODES = frozenset({"I;16", "I;16L", "I;16B", "I;16N"})
_ALPHA_MODES = frozenset({"RGBA", "RGBa", "LA", "La", "PA"})


class ImageSize(NamedTuple):
    """Displayed size of an image (after its EXIF orientation is applied)."""

    width: int
    height: int


# --------------------------------------------------------------------------------------------
# Entry points


def is_url(source: str | Path) -> bool:
    """True for an ``http://`` or ``https://`` string (a Path is always local)."""
    return isinstance(source, str) and source.lower().startswith(("http://", "https://"))


def preprocess_image(
    path: str | Path,
    settings: ImageSettings,
    cache: ImageCache | None = None,
    *,
    display_source: str | None = None,
) -> EncodedImage:
    """Turn one image file (or URL) into an :class:`EncodedImage` ready to send.

    ``display_source`` is what the result records as its source (e.g. the path relative to the
    dataset root); it defaults to ``str(path)``. Raises :class:`ImageError` for any image that
    cannot be used.
    """
    source = display_source or str(path)
    if is_url(path):
        url = str(path)
        if settings.encoding != "url":
            raise ImageError(
                f"{url}: is a URL, and images are only fetched by the provider;"
                " set images.encoding=url to pass it through"
            )
        return EncodedImage(
            source=source,
            sha256=hashlib.sha256(url.encode("utf-8")).hexdigest(),
            media_type=_guess_media_type(url),
            width=0,
            height=0,
            data=url,
            encoding="url",
        )

    data = _read_bytes(path)
    sha256 = hashlib.sha256(data).hexdigest()
    payload = cache.get(sha256, settings) if cache is not None else None
    if payload is None:
        payload = encode_image_bytes(data, settings, name=str(path))
        if cache is not None:
            cache.put(sha256, settings, payload)
    del data

    if settings.encoding == "base64":
        encoding, wrapped = "base64", payload.base64
    else:  # data_url, and url for a local file, which has no URL to pass through
        encoding, wrapped = "data_url", f"data:{payload.media_type};base64,{payload.base64}"
    return EncodedImage(
        source=source,
        sha256=sha256,
        media_type=payload.media_type,
        width=payload.width,
        height=payload.height,
        data=wrapped,
        encoding=encoding,
    )


def encode_image_bytes(
    data: bytes, settings: ImageSettings, *, name: str = "image"
) -> EncodedPayload:
    """Decode, orient, convert, resize and encode one image's bytes; ``name`` labels errors."""
    if not data:
        raise ImageError(f"{name}: file is empty (0 bytes)")
    try:
        img = _decode(data, settings, name)
    except ImageError:
        raise
    except Exception as exc:  # Pillow's plugins raise many types on malformed input
        raise ImageError(f"{name}: cannot decode image ({_describe(exc)})") from exc
    try:
        rgb = _to_rgb(img, settings.pad_color, name)
        if rgb is not img:
            img.close()
        img = rgb
        resized = _fit(img, settings)
        if resized is not img:
            img.close()
        img = resized
        buffer = io.BytesIO()
        if settings.format == "jpeg":
            img.save(buffer, format="JPEG", quality=settings.quality)
        else:
            img.save(buffer, format="PNG")
        width, height = img.size
    except ImageError:
        raise
    except Exception as exc:
        raise ImageError(f"{name}: cannot process image ({_describe(exc)})") from exc
    finally:
        img.close()
    return EncodedPayload(
        media_type=settings.media_type,
        width=width,
        height=height,
        base64=base64.b64encode(buffer.getvalue()).decode("ascii"),
    )


def image_dimensions(path: str | Path) -> ImageSize:
    """Displayed width and height from the file header, without decoding pixel data."""
    name = str(path)
    data = _read_bytes(path)
    if not data:
        raise ImageError(f"{name}: file is empty (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with _open(data, name) as img:
                width, height = img.size
                if _orientation(img) in _ROTATED_ORIENTATIONS:
                    width, height = height, width
    except ImageError:
        raise
    except Exception as exc:
        raise ImageError(f"{name}: cannot read image header ({_describe(exc)})") from exc
    return ImageSize(width, height)


# --------------------------------------------------------------------------------------------
# Pipeline steps


def _read_bytes(path: str | Path) -> bytes:
    name = str(path)
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise ImageError(f"{name}: file not found") from exc
    except IsADirectoryError as exc:
        raise ImageError(f"{name}: is a directory, not an image file") from exc
    except OSError as exc:
        raise ImageError(f"{name}: cannot read file ({exc.strerror or exc})") from exc


def _open(data: bytes, name: str) -> Image.Image:
    Image.init()
    formats = [fmt for fmt in Image.ID if fmt not in _REFUSED_FORMATS]
    try:
        return Image.open(io.BytesIO(data), formats=formats)
    except Image.UnidentifiedImageError as exc:
        raise ImageError(f"{name}: not a recognised image file") from exc


def _decode(data: bytes, settings: ImageSettings, name: str) -> Image.Image:
    """Open, refuse oversized images, decode fully and apply the EXIF orientation."""
    with warnings.catch_warnings():
        # Pillow warns (rather than fails) between its own limit and twice that; fail here too.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            img = _open(data, name)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
            raise ImageError(f"{name}: too many pixels to decode safely ({exc})") from exc
        try:
            width, height = img.size
            if width * height > settings.max_pixels:
                raise ImageError(
                    f"{name}: {width}x{height} is {width * height:,} pixels,"
                    f" over images.max_pixels={settings.max_pixels:,}"
                )
            orientation = _orientation(img)
            if img.format == "JPEG":
                # Let the JPEG decoder scale down by 2/4/8 while keeping both sides >= size.
                img.draft(None, (settings.size, settings.size))
            # With Pillow's default ImageFile.LOAD_TRUNCATED_IMAGES=False (left untouched here),
            # a truncated file raises in load() instead of decoding to a grey-filled image.
            img.load()
            if orientation not in (None, 1):
                try:
                    ImageOps.exif_transpose(img, in_place=True)
                except Exception:  # a damaged EXIF block should not make a good image unusable
                    logger.debug("%s: ignoring unreadable EXIF orientation", name)
            return img
        except BaseException:
            img.close()
            raise


def _orientation(img: Image.Image) -> int | None:
    try:
        value = img.getexif().get(_EXIF_ORIENTATION)
    except Exception:
        return None
    return value if isinstance(value, int) else None


def _to_rgb(img: Image.Image, background: tuple[int, int, int], name: str) -> Image.Image:
    """Any pixel mode to 8-bit RGB; transparency is composited onto ``background``."""
    mode = img.mode
    if mode in _SIXTEEN_BIT_MODES or mode in ("I", "F"):
        gray = _to_8bit_gray(img)
        try:
            return gray.convert("RGB")
        finally:
            gray.close()
    # "transparency" covers palette images and colour-keyed RGB/L images (PNG tRNS, GIF)
    if mode in _ALPHA_MODES or "transparency" in img.info:
        source = img
        if mode == "La":  # premultiplied; Pillow converts it only via LA
            source = img.convert("LA")
        rgba = source.convert("RGBA")
        out = Image.new("RGB", rgba.size, background)
        out.paste(rgba, (0, 0), rgba)
        rgba.close()
        if source is not img:
            source.close()
        return out
    if mode == "RGB":
        return img
    try:
        return img.convert("RGB")
    except ValueError as exc:
        raise ImageError(f"{name}: pixel mode {mode} cannot be converted to RGB") from exc


def _to_8bit_gray(img: Image.Image) -> Image.Image:
    """16-bit, 32-bit integer and float grayscale, scaled (not clipped) into 0-255."""
    if img.mode in _SIXTEEN_BIT_MODES:
        wide = img.convert("I")
        scale, offset = 1 / 256, 0.0
    else:
        wide = img
        low, high = img.getextrema()
        low, high = float(low), float(high)  # type: ignore[arg-type]
        if img.mode == "F" and low >= 0.0 and high <= 1.0:
            scale, offset = 255.0, 0.0
        elif low >= 0.0 and high <= 255.0:
            scale, offset = 1.0, 0.0
        elif low >= 0.0 and high <= 65535.0:
            scale, offset = 1 / 256, 0.0
        elif high > low:
            scale = 255.0 / (high - low)
            offset = -low * scale
        else:
            scale, offset = 0.0, 0.0
    unchanged = scale == 1.0 and offset == 0.0
    scaled = wide if unchanged else wide.point(lambda v: v * scale + offset)
    gray = scaled.convert("L")
    for temporary in (wide, scaled):
        if temporary is not img and temporary is not gray:
            temporary.close()
    return gray


def _fit(img: Image.Image, settings: ImageSettings) -> Image.Image:
    size = settings.size
    width, height = img.size
    resample = Image.Resampling.LANCZOS
    if settings.fit == "stretch":
        return img.resize((size, size), resample)
    if settings.fit == "crop":
        # Crop first (rather than resizing with a box) so no pixel outside the square
        # bleeds into the edges through the resampling filter.
        side = min(width, height)
        left = (width - side) // 2
        top = (height - side) // 2
        square = img.crop((left, top, left + side, top + side))
        try:
            return square.resize((size, size), resample)
        finally:
            square.close()
    # pad: scale the long side to ``size`` and centre on the pad colour
    scale = size / max(width, height)
    new_w = min(size, max(1, round(width * scale)))
    new_h = min(size, max(1, round(height * scale)))
    canvas = Image.new("RGB", (size, size), settings.pad_color)
    if (new_w, new_h) == (width, height):
        canvas.paste(img, ((size - new_w) // 2, (size - new_h) // 2))
    else:
        resized = img.resize((new_w, new_h), resample)
        canvas.paste(resized, ((size - new_w) // 2, (size - new_h) // 2))
        resized.close()
    return canvas


def _guess_media_type(url: str) -> str:
    path = url.split("?", 1)[0].split("#", 1)[0].lower()
    if path.endswith(".png"):
        return "image/png"
    if path.endswith(".webp"):
        return "image/webp"
    if path.endswith(".gif"):
        return "image/gif"
    return "image/jpeg"


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
