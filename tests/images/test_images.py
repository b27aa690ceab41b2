"""Image preprocessing: modes, orientation, fits, encodings, failures and the cache."""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import OmegaConf
from PIL import Image

from mmjudge.errors import ImageError
from mmjudge.images import (
    ImageCache,
    ImageSettings,
    image_dimensions,
    preprocess_image,
)
from mmjudge.records import EncodedImage

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

RED = (255, 0, 0)
GREEN = (0, 255, 0)
BLUE = (0, 0, 255)
WHITE = (255, 255, 255)


# ---------------------------------------------------------------------------------- helpers


def decode(encoded: EncodedImage) -> Image.Image:
    """The image a judge would see, decoded back from the result."""
    if encoded.encoding == "data_url":
        header, payload = encoded.data.split(",", 1)
        assert header == f"data:{encoded.media_type};base64"
    else:
        assert encoded.encoding == "base64"
        payload = encoded.data
    img = Image.open(io.BytesIO(base64.b64decode(payload, validate=True)))
    img.load()
    return img


def near(pixel: Any, expected: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(int(a) - b) <= tolerance for a, b in zip(pixel[:3], expected, strict=True))


def save(img: Image.Image, path: Path, **params: Any) -> Path:
    img.save(path, **params)
    return path


def two_colour(size: tuple[int, int], left: tuple[int, int, int], right: tuple[int, int, int]):
    """An RGB image whose left half is one colour and right half another."""
    img = Image.new("RGB", size, left)
    img.paste(right, (size[0] // 2, 0, size[0], size[1]))
    return img


def png_header_only(path: Path, width: int, height: int) -> Path:
    """A tiny PNG file whose header claims ``width`` x ``height`` 1-bit pixels."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )
    return path


PNG_STRETCH = ImageSettings(fit="stretch", format="png")
PNG_PAD = ImageSettings(fit="pad", format="png")


# ---------------------------------------------------------------------------------- settings


def test_settings_are_the_config_node_and_take_overrides() -> None:
    """``images`` in the config is an ImageSettings node: overrides land on it (a frozen
    dataclass would refuse them), ``pad_color`` round-trips as a list, and the node becomes
    checked settings."""
    cfg = OmegaConf.structured(ImageSettings)
    cfg.size = 256
    cfg.fit = "CROP"
    cfg.pad_color = [0, 0, 0]
    settings = OmegaConf.to_object(cfg)
    assert isinstance(settings, ImageSettings)
    assert (settings.size, settings.fit, settings.pad_color) == (256, "crop", (0, 0, 0))
    assert OmegaConf.structured(settings).pad_color == [0, 0, 0]
    cfg.quality = 500
    with pytest.raises(ValueError, match=r"images\.quality=500"):
        OmegaConf.to_object(cfg)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fit": "cover"}, "images.fit='cover' is not one of pad, crop, stretch"),
        ({"format": "gif"}, "images.format='gif' is not one of jpeg, png"),
        ({"encoding": "raw"}, "images.encoding='raw' is not one of data_url, base64, url"),
        ({"size": 0}, "images.size=0"),
        ({"quality": 0}, "images.quality=0"),
        ({"quality": 101}, "images.quality=101"),
        ({"pad_color": (255, 255)}, "images.pad_color"),
        ({"pad_color": (0, 0, 300)}, "images.pad_color"),
        ({"pad_color": "white"}, "images.pad_color"),
        ({"max_pixels": 0}, "images.max_pixels"),
    ],
)
def test_settings_validation_names_the_setting(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        ImageSettings(**kwargs)
    assert message in str(info.value)


def test_settings_are_normalised() -> None:
    settings = ImageSettings(fit="PAD", format="jpg", pad_color=[1, 2, 3])  # type: ignore[arg-type]
    assert settings.fit == "pad"
    assert settings.format == "jpeg"
    assert settings.pad_color == (1, 2, 3)


@pytest.mark.parametrize(
    "changed",
    [
        {"size": 256},
        {"fit": "crop"},
        {"fit": "stretch"},
        {"format": "png"},
        {"quality": 80},
        {"pad_color": (0, 0, 0)},
    ],
)
def test_cache_key_changes_with_output_settings(changed: dict) -> None:
    assert ImageSettings(**changed).key() != ImageSettings().key()


def test_cache_key_ignores_settings_that_do_not_change_the_bytes() -> None:
    base = ImageSettings()
    assert ImageSettings(encoding="base64").key() == base.key()
    assert ImageSettings(max_pixels=1000).key() == base.key()
    # quality means nothing for PNG
    assert (
        ImageSettings(format="png", quality=50).key()
        == ImageSettings(format="png", quality=90).key()
    )


# ---------------------------------------------------------------------------------- fits


@pytest.mark.parametrize("fit", ["pad", "crop", "stretch"])
@pytest.mark.parametrize("source_size", [(300, 120), (90, 400), (7, 3), (2400, 1100)])
@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_output_is_exactly_size_by_size(
    tmp_path: Path, fit: str, source_size: tuple[int, int], fmt: str
) -> None:
    path = save(two_colour(source_size, RED, BLUE), tmp_path / "src.jpg", quality=95)
    encoded = preprocess_image(path, ImageSettings(fit=fit, format=fmt))
    assert (encoded.width, encoded.height) == (512, 512)
    img = decode(encoded)
    assert img.size == (512, 512)
    assert img.mode == "RGB"
    assert img.format == fmt.upper()


def test_other_sizes(tmp_path: Path) -> None:
    path = save(two_colour((300, 200), RED, BLUE), tmp_path / "src.png")
    encoded = preprocess_image(path, ImageSettings(size=224))
    assert decode(encoded).size == (224, 224) == (encoded.width, encoded.height)


def test_pad_letterboxes_a_wide_image_without_cropping(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (400, 100), RED), tmp_path / "wide.png")
    img = decode(preprocess_image(path, PNG_PAD))
    # 400x100 scaled to 512x128, centred: white bars above and below
    assert img.getpixel((256, 5)) == WHITE
    assert img.getpixel((256, 506)) == WHITE
    assert img.getpixel((256, 256)) == RED
    # nothing cut off at the sides
    assert img.getpixel((0, 256)) == RED
    assert img.getpixel((511, 256)) == RED
    column = [img.getpixel((256, y)) for y in range(512)]
    red_rows = [y for y, pixel in enumerate(column) if near(pixel, RED, 10)]
    assert 124 <= len(red_rows) <= 130
    assert red_rows[0] in range(190, 195)


def test_pad_uses_the_pad_colour(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (100, 400), RED), tmp_path / "tall.png")
    img = decode(preprocess_image(path, ImageSettings(format="png", pad_color=(0, 0, 0))))
    assert img.getpixel((5, 256)) == (0, 0, 0)
    assert img.getpixel((506, 256)) == (0, 0, 0)
    assert img.getpixel((256, 0)) == RED


def test_crop_keeps_the_centre_square(tmp_path: Path) -> None:
    img = Image.new("RGB", (400, 100), BLUE)
    img.paste(RED, (150, 0, 250, 100))
    path = save(img, tmp_path / "wide.png")
    out = decode(preprocess_image(path, ImageSettings(fit="crop", format="png")))
    for xy in [(0, 0), (511, 0), (0, 511), (511, 511), (256, 256)]:
        assert near(out.getpixel(xy), RED, 10), xy


def test_stretch_ignores_aspect(tmp_path: Path) -> None:
    path = save(two_colour((400, 100), RED, BLUE), tmp_path / "wide.png")
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert out.getpixel((10, 5)) == RED
    assert out.getpixel((10, 506)) == RED
    assert out.getpixel((501, 5)) == BLUE
    assert out.getpixel((501, 506)) == BLUE


# ---------------------------------------------------------------------------------- modes


@pytest.mark.parametrize("pad_color", [WHITE, (0, 0, 0), (10, 200, 30)])
def test_rgba_transparency_becomes_pad_colour(
    tmp_path: Path, pad_color: tuple[int, int, int]
) -> None:
    img = Image.new("RGBA", (100, 100), (0, 0, 0, 0))
    img.paste((0, 255, 0, 255), (50, 0, 100, 100))
    path = save(img, tmp_path / "alpha.png")
    settings = ImageSettings(fit="stretch", format="png", pad_color=pad_color)
    out = decode(preprocess_image(path, settings))
    assert out.mode == "RGB"
    assert out.getpixel((20, 256)) == pad_color
    assert out.getpixel((490, 256)) == GREEN


def test_half_transparent_pixels_blend_with_pad_colour(tmp_path: Path) -> None:
    path = save(Image.new("RGBA", (20, 20), (0, 0, 0, 128)), tmp_path / "half.png")
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert near(out.getpixel((256, 256)), (128, 128, 128), 8)


def test_la_transparency(tmp_path: Path) -> None:
    img = Image.new("LA", (40, 40), (0, 0))
    img.paste((0, 255), (20, 0, 40, 40))
    out = decode(preprocess_image(save(img, tmp_path / "la.png"), PNG_STRETCH))
    assert out.getpixel((20, 256)) == WHITE
    assert out.getpixel((490, 256)) == (0, 0, 0)


def test_palette_with_transparency(tmp_path: Path) -> None:
    img = Image.new("P", (40, 40), 0)
    img.putpalette([0, 0, 0, 255, 0, 0] + [0] * (256 * 3 - 6))
    img.paste(1, (20, 0, 40, 40))
    path = tmp_path / "palette.png"
    img.save(path, transparency=0)
    with Image.open(path) as reopened:
        assert reopened.mode == "P"
        assert "transparency" in reopened.info
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert out.getpixel((20, 256)) == WHITE  # index 0 is transparent black
    assert out.getpixel((490, 256)) == RED


def test_palette_gif_with_transparency(tmp_path: Path) -> None:
    img = Image.new("P", (40, 40), 0)
    img.putpalette([0, 0, 0, 0, 0, 255] + [0] * (256 * 3 - 6))
    img.paste(1, (20, 0, 40, 40))
    path = tmp_path / "palette.gif"
    img.save(path, transparency=0)
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert out.getpixel((20, 256)) == WHITE
    assert out.getpixel((490, 256)) == BLUE


def test_colour_keyed_rgb_transparency(tmp_path: Path) -> None:
    path = tmp_path / "keyed.png"
    two_colour((40, 40), (1, 2, 3), RED).save(path, transparency=(1, 2, 3))
    with Image.open(path) as reopened:
        assert reopened.mode == "RGB"
        assert reopened.info.get("transparency") == (1, 2, 3)
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert out.getpixel((20, 256)) == WHITE
    assert out.getpixel((490, 256)) == RED


def test_cmyk_jpeg(tmp_path: Path) -> None:
    path = save(Image.new("CMYK", (64, 48), (0, 255, 255, 0)), tmp_path / "cmyk.jpg")
    with Image.open(path) as reopened:
        assert reopened.mode == "CMYK"
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert out.mode == "RGB"
    assert near(out.getpixel((256, 256)), RED)


def test_sixteen_bit_grayscale_is_scaled_not_clipped(tmp_path: Path) -> None:
    gradient = np.tile(np.linspace(0, 65535, 256).astype(np.uint16), (64, 1))
    path = save(Image.fromarray(gradient), tmp_path / "deep.png")
    with Image.open(path) as reopened:
        assert reopened.mode.startswith("I")
    out = np.asarray(decode(preprocess_image(path, PNG_STRETCH)).convert("L"))
    row = out[256]
    assert row[:10].max() < 20
    assert row[-10:].min() > 235
    assert 100 <= row[256] <= 155
    assert (np.diff(row.astype(int)) >= -2).all()  # still a rising gradient


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        (np.linspace(0, 65535, 256), np.int32),  # 32-bit integer holding 16-bit data
        (np.linspace(-5000, 5000, 256), np.int32),  # out of any standard range: stretched
        (np.linspace(0.0, 1.0, 256), np.float32),  # float in 0..1
    ],
)
def test_wide_grayscale_modes_are_scaled(tmp_path: Path, values: np.ndarray, dtype: type) -> None:
    array: np.ndarray = np.tile(values.astype(dtype), (32, 1))
    path = save(Image.fromarray(array), tmp_path / "wide.tiff")
    with Image.open(path) as reopened:
        assert reopened.mode in ("I", "F")
    row = np.asarray(decode(preprocess_image(path, PNG_STRETCH)).convert("L"))[256]
    assert row[:10].max() < 20
    assert row[-10:].min() > 235


@pytest.mark.parametrize("mode", ["L", "1", "YCbCr", "LAB", "CMYK"])
def test_other_modes_become_rgb(tmp_path: Path, mode: str) -> None:
    img = Image.new("RGB", (30, 20), (200, 200, 200)).convert(mode)
    path = tmp_path / "img.tiff"
    img.save(path)
    out = decode(preprocess_image(path, PNG_STRETCH))
    assert out.mode == "RGB"
    assert out.size == (512, 512)


# ---------------------------------------------------------------------------------- orientation


def exif_rotated_jpeg(path: Path) -> Path:
    """A 200x100 image (red left, blue right) tagged 'rotate 90 degrees clockwise to view'."""
    exif = Image.Exif()
    exif[0x0112] = 6
    two_colour((200, 100), RED, BLUE).save(path, quality=95, exif=exif.tobytes())
    return path


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    path = exif_rotated_jpeg(tmp_path / "rotated.jpg")
    with Image.open(path) as raw:
        assert raw.size == (200, 100)
    out = decode(preprocess_image(path, ImageSettings(format="png")))
    # shown upright it is 100 wide and 200 tall: bars on the left and right, not top and bottom
    assert out.getpixel((10, 256)) == WHITE
    assert out.getpixel((501, 256)) == WHITE
    # turned clockwise, the left (red) half ends up on top and the right (blue) half below
    assert near(out.getpixel((256, 10)), RED)
    assert near(out.getpixel((256, 501)), BLUE)


def test_image_dimensions_reads_header_and_orientation(tmp_path: Path) -> None:
    assert image_dimensions(exif_rotated_jpeg(tmp_path / "rotated.jpg")) == (100, 200)
    plain = save(Image.new("RGB", (321, 123)), tmp_path / "plain.png")
    size = image_dimensions(plain)
    assert size == (321, 123)
    assert (size.width, size.height) == (321, 123)
    # a header is enough: a large claimed size is reported, not decoded
    big = png_header_only(tmp_path / "big.png", 10000, 10000)
    assert image_dimensions(big) == (10000, 10000)
    # past Pillow's hard limit it is refused, as an ImageError
    with pytest.raises(ImageError, match=r"huge\.png"):
        image_dimensions(png_header_only(tmp_path / "huge.png", 20000, 20000))
    with pytest.raises(ImageError, match="not found"):
        image_dimensions(tmp_path / "absent.png")


# ---------------------------------------------------------------------------------- failures


def assert_image_error(path: Path, settings: ImageSettings, *fragments: str) -> str:
    with pytest.raises(ImageError) as info:
        preprocess_image(path, settings)
    message = str(info.value)
    assert str(path) in message
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message
    return message


def test_missing_file(tmp_path: Path) -> None:
    assert_image_error(tmp_path / "absent.jpg", ImageSettings(), "not found")


def test_zero_byte_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jpg"
    path.write_bytes(b"")
    assert_image_error(path, ImageSettings(), "empty")


def test_directory_is_not_an_image(tmp_path: Path) -> None:
    assert_image_error(tmp_path, ImageSettings(), "directory")


def test_text_file_is_not_an_image(tmp_path: Path) -> None:
    path = tmp_path / "notes.jpg"
    path.write_text("this is not a picture\n")
    assert_image_error(path, ImageSettings(), "not a recognised image")


def test_truncated_jpeg(tmp_path: Path) -> None:
    noise = np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)
    full = tmp_path / "full.jpg"
    Image.fromarray(noise).save(full, quality=95)
    path = tmp_path / "truncated.jpg"
    path.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    assert_image_error(path, ImageSettings(), "truncated")


def test_truncated_png(tmp_path: Path) -> None:
    noise = np.random.default_rng(1).integers(0, 256, (128, 128, 3), dtype=np.uint8)
    full = tmp_path / "full.png"
    Image.fromarray(noise).save(full)
    path = tmp_path / "truncated.png"
    path.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    assert_image_error(path, ImageSettings())


def test_header_over_max_pixels_is_refused_before_decoding(tmp_path: Path) -> None:
    # 5000x5000 is under Pillow's own limits, so only our setting stops it
    path = png_header_only(tmp_path / "big.png", 5000, 5000)
    message = assert_image_error(path, ImageSettings(max_pixels=1_000_000), "5000x5000")
    assert "max_pixels" in message


@pytest.mark.parametrize("side", [10000, 20000])
def test_pillow_decompression_bomb_limits_become_image_errors(tmp_path: Path, side: int) -> None:
    # 10000^2 is past Pillow's warning threshold, 20000^2 past its hard limit; with our own
    # limit raised out of the way, both must still be refused, and nothing global changes.
    limit_before = Image.MAX_IMAGE_PIXELS
    filters_before = list(warnings.filters)
    path = png_header_only(tmp_path / "bomb.png", side, side)
    assert_image_error(path, ImageSettings(max_pixels=10**10), "too many pixels")
    assert limit_before == Image.MAX_IMAGE_PIXELS
    assert list(warnings.filters) == filters_before


def test_url_source_needs_url_encoding() -> None:
    with pytest.raises(ImageError, match=r"images\.encoding=url"):
        preprocess_image("https://example.invalid/a.jpg", ImageSettings())


# ---------------------------------------------------------------------------------- encodings


def test_media_types(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (50, 40), RED), tmp_path / "img.png")
    jpeg = preprocess_image(path, ImageSettings(format="jpeg"))
    png = preprocess_image(path, ImageSettings(format="png"))
    assert jpeg.media_type == "image/jpeg"
    assert jpeg.data.startswith("data:image/jpeg;base64,")
    assert base64.b64decode(jpeg.data.split(",", 1)[1])[:3] == b"\xff\xd8\xff"
    assert png.media_type == "image/png"
    assert png.data.startswith("data:image/png;base64,")
    assert base64.b64decode(png.data.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"


def test_data_url_and_base64_carry_the_same_bytes(tmp_path: Path) -> None:
    path = save(two_colour((80, 60), RED, BLUE), tmp_path / "img.png")
    as_url = preprocess_image(path, ImageSettings(encoding="data_url"))
    bare = preprocess_image(path, ImageSettings(encoding="base64"))
    assert as_url.encoding == "data_url"
    assert bare.encoding == "base64"
    assert not bare.data.startswith("data:")
    assert as_url.data == f"data:image/jpeg;base64,{bare.data}"
    assert decode(bare).size == (512, 512)


@pytest.mark.parametrize(
    "url", ["https://example.invalid/img/a.jpg?x=1", "http://example.invalid/b.png"]
)
def test_url_passthrough(url: str) -> None:
    encoded = preprocess_image(url, ImageSettings(encoding="url"))
    assert encoded.data == url
    assert encoded.encoding == "url"
    assert encoded.source == url
    assert encoded.sha256 == hashlib.sha256(url.encode("utf-8")).hexdigest()
    assert (encoded.width, encoded.height) == (0, 0)


def test_local_file_with_url_encoding_falls_back_to_data_url(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (50, 40), RED), tmp_path / "img.png")
    encoded = preprocess_image(path, ImageSettings(encoding="url"))
    assert encoded.encoding == "data_url"
    assert encoded.data.startswith("data:image/jpeg;base64,")
    assert decode(encoded).size == (512, 512)


def test_source_and_sha256(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (50, 40), RED), tmp_path / "img.png")
    copy = tmp_path / "copy.png"
    copy.write_bytes(path.read_bytes())
    encoded = preprocess_image(path, ImageSettings())
    assert encoded.source == str(path)
    assert encoded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    shown = preprocess_image(str(copy), ImageSettings(), display_source="images/img.png")
    assert shown.source == "images/img.png"
    assert shown.sha256 == encoded.sha256
    assert shown.data == encoded.data


# ---------------------------------------------------------------------------------- cache


def test_cache_hit_does_not_decode_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save(two_colour((300, 200), RED, BLUE), tmp_path / "img.png")
    cache_dir = tmp_path / "cache"
    first = preprocess_image(path, ImageSettings(), ImageCache(cache_dir))
    entries = list(cache_dir.rglob("*.json"))
    assert len(entries) == 1
    assert not [p for p in cache_dir.rglob("*") if p.name.startswith(".tmp-")]

    def refuse(*args: object, **kwargs: object) -> Image.Image:
        raise AssertionError("the image was opened again")

    monkeypatch.setattr(Image, "open", refuse)
    # a fresh cache object: the hit comes from disk, not from memory
    second = preprocess_image(path, ImageSettings(), ImageCache(cache_dir))
    assert second == first
    # the encoding is applied on top of the cached bytes
    bare = preprocess_image(path, ImageSettings(encoding="base64"), ImageCache(cache_dir))
    assert first.data == f"data:image/jpeg;base64,{bare.data}"


def test_memory_layer_serves_repeats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save(Image.new("RGB", (30, 30), RED), tmp_path / "img.png")
    cache = ImageCache(tmp_path / "cache")
    first = preprocess_image(path, ImageSettings(), cache)
    for entry in (tmp_path / "cache").rglob("*.json"):
        entry.unlink()
    monkeypatch.setattr(Image, "open", lambda *a, **k: pytest.fail("opened again"))
    assert preprocess_image(path, ImageSettings(), cache) == first


def test_cache_keeps_settings_apart(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (300, 200), RED), tmp_path / "img.png")
    cache = ImageCache(tmp_path / "cache")
    big = preprocess_image(path, ImageSettings(), cache)
    small = preprocess_image(path, ImageSettings(size=128), cache)
    png = preprocess_image(path, ImageSettings(size=128, format="png"), cache)
    assert (big.width, small.width, png.width) == (512, 128, 128)
    assert decode(small).size == (128, 128)
    assert png.media_type == "image/png"
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 3


def test_changed_file_is_a_new_cache_entry(tmp_path: Path) -> None:
    path = tmp_path / "img.png"
    cache = ImageCache(tmp_path / "cache")
    Image.new("RGB", (30, 30), RED).save(path)
    red = preprocess_image(path, PNG_STRETCH, cache)
    Image.new("RGB", (30, 30), BLUE).save(path)
    blue = preprocess_image(path, PNG_STRETCH, cache)
    assert red.sha256 != blue.sha256
    assert decode(blue).getpixel((0, 0)) == BLUE


def test_corrupt_cache_file_is_a_miss(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (30, 30), RED), tmp_path / "img.png")
    cache_dir = tmp_path / "cache"
    first = preprocess_image(path, ImageSettings(), ImageCache(cache_dir))
    (entry,) = cache_dir.rglob("*.json")
    entry.write_text("{not json")
    again = preprocess_image(path, ImageSettings(), ImageCache(cache_dir))
    assert again == first
    assert entry.read_text().startswith("{")
    assert ImageCache(cache_dir).get(first.sha256, ImageSettings()) is not None


def test_failures_are_not_cached(tmp_path: Path) -> None:
    path = tmp_path / "bad.jpg"
    path.write_text("nope")
    cache_dir = tmp_path / "cache"
    for _ in range(2):
        with pytest.raises(ImageError):
            preprocess_image(path, ImageSettings(), ImageCache(cache_dir))
    assert not list(cache_dir.rglob("*.json"))


def test_unwritable_cache_is_not_fatal(tmp_path: Path) -> None:
    path = save(Image.new("RGB", (30, 30), RED), tmp_path / "img.png")
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    encoded = preprocess_image(path, ImageSettings(), ImageCache(blocker))
    assert encoded.width == 512


# ---------------------------------------------------------------------------------- real photos


HM_IMAGES = SHARED_DATA / "hm_sample" / "images"
HM_PHOTOS = sorted(HM_IMAGES.rglob("*.jpg"))[:4] if HM_IMAGES.is_dir() else []


@pytest.mark.skipif(
    not HM_PHOTOS,
    reason=f"no H&M sample photos under {HM_IMAGES} (shared data is not part of the repo)",
)
@pytest.mark.parametrize("fit", ["pad", "crop"])
def test_real_hm_photos(tmp_path: Path, fit: str) -> None:
    cache = ImageCache(tmp_path / "cache")
    for photo in HM_PHOTOS:
        shown_as = photo.relative_to(HM_IMAGES).as_posix()
        encoded = preprocess_image(photo, ImageSettings(fit=fit), cache, display_source=shown_as)
        img = decode(encoded)
        assert img.size == (512, 512)
        assert encoded.source.endswith(photo.name)
        assert encoded.sha256 == hashlib.sha256(photo.read_bytes()).hexdigest()
        width, height = image_dimensions(photo)
        assert width > 0 and height > 0
