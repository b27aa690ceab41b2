"""Flickr8k expert judgments: does a caption describe an image? Graded 1–4 by three experts.

Layout, as distributed with Flickr8k:

    <root>/ExpertAnnotations.txt   # dataset.items: image_file<TAB>caption_id<TAB>r1<TAB>r2<TAB>r3
    <root>/Flickr8k.token.txt      # dataset.queries_file: caption_id<TAB>caption text
    <root>/images/<image_file>     # the photos (folder: dataset.columns.image_dir)

Each annotation row is one example: the caption is the query (``query_id`` = caption id), the
image is the result (``result_id`` = image file name, no text fields), and the three ratings
are the labels ``expert_1``, ``expert_2``, ``expert_3``.

``dataset.columns`` options:

- ``skip_missing_images`` (default false): drop annotation rows whose image is not in the
  image folder, with one warning that counts them, instead of failing. Useful with a subset
  of the images.
- ``image_dir`` (default ``images``): the image folder, relative to the root.

Memory: the annotation rows are read whole (a few thousand); the caption file is streamed,
keeping only the captions those rows use.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from mmjudge.config import DatasetConfig
from mmjudge.data.grades import GradeReader
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.validation import (
    DuplicateCheck,
    dataset_file,
    is_file,
    require_file,
    shown,
    tab_texts,
    text_lines,
    undeclared,
    where,
)
from mmjudge.errors import ConfigError, DatasetError

ANNOTATIONS = "ExpertAnnotations.txt"
CAPTIONS = "Flickr8k.token.txt"
RATERS = ("expert_1", "expert_2", "expert_3")
OPTIONS = {"skip_missing_images": False, "image_dir": "images"}


class _Row(NamedTuple):
    line: int
    image_file: str
    caption_id: str
    labels: dict[str, int]


def _options(cfg: DatasetConfig) -> tuple[bool, str]:
    unknown = [key for key in cfg.columns if key not in OPTIONS]
    if unknown:
        raise ConfigError(
            f"dataset.columns has unknown key(s) {', '.join(map(str, unknown))} for the "
            f"flickr8k_expert loader; valid keys: {', '.join(OPTIONS)}"
        )
    skip = cfg.columns.get("skip_missing_images", OPTIONS["skip_missing_images"])
    if not isinstance(skip, bool):
        raise ConfigError(
            f"dataset.columns.skip_missing_images must be true or false, got {skip!r}"
        )
    image_dir = cfg.columns.get("image_dir", OPTIONS["image_dir"])
    if not isinstance(image_dir, str) or not image_dir.strip():
        raise ConfigError(f"dataset.columns.image_dir must be a folder name, got {image_dir!r}")
    return skip, image_dir.strip().rstrip("/")


def load(cfg: DatasetConfig) -> Iterator[Example]:
    skip_missing, image_dir = _options(cfg)
    absent = undeclared(cfg, RATERS)
    if absent:
        raise ConfigError(
            f"dataset.annotators must include {', '.join(RATERS)} for the flickr8k_expert "
            f"loader (missing: {', '.join(absent)}), or be left empty"
        )
    root = dataset_root(cfg)
    items = ANNOTATIONS if cfg.items == "items.jsonl" else cfg.items
    annotations = require_file(
        dataset_file(root, items), "the expert annotation file", "dataset.items"
    )
    captions_path = require_file(
        dataset_file(root, cfg.queries_file or CAPTIONS),
        "the caption file",
        "dataset.queries_file",
    )
    images = root / image_dir

    rows = _rows_with_images(annotations, images, cfg, skip_missing)
    captions = _read_captions(captions_path, cfg.encoding, {row.caption_id for row in rows})
    for row in rows:
        caption = captions.get(row.caption_id)
        if caption is None:
            raise DatasetError(
                f"{where(annotations, row.line)}: caption_id '{row.caption_id}' is not in "
                f"{captions_path}; every judged caption needs its text there"
            )
        name = f"{image_dir}/{row.image_file}"
        with_image = cfg.max_images > 0
        yield Example(
            query_id=row.caption_id,
            query=caption,
            result_id=row.image_file,
            fields=(),
            images=(str((images / row.image_file).resolve()),) if with_image else (),
            labels=row.labels,
            image_names=(name,) if with_image else (),
        )


def _rows_with_images(
    annotations: Path, images: Path, cfg: DatasetConfig, skip_missing: bool
) -> list[_Row]:
    """The annotation rows whose image is in the image folder; a row without one stops the
    load, or with ``skip_missing_images`` is dropped (one warning counts them)."""
    rows: list[_Row] = []
    total = skipped = 0
    for row in _read_annotations(annotations, cfg):
        total += 1
        if not is_file(images / row.image_file):
            if not skip_missing:
                raise DatasetError(
                    f"{where(annotations, row.line)}: image '{row.image_file}' is not in "
                    f"{images}; add it, or set dataset.columns.skip_missing_images=true to drop "
                    "such rows"
                )
            skipped += 1
            continue
        rows.append(row)
    if total == 0:
        raise DatasetError(f"{annotations}: dataset '{cfg.name}' has no annotation rows")
    if skipped:
        warnings.warn(
            f"{annotations}: skipped {skipped} of {total} annotation rows whose image is not "
            f"in {images} (dataset.columns.skip_missing_images=true)",
            stacklevel=3,
        )
    if not rows:
        raise DatasetError(
            f"{annotations}: none of its {total} rows has its image in {images}; check "
            "dataset.path and dataset.columns.image_dir"
        )

    return rows


def _read_annotations(path: Path, cfg: DatasetConfig) -> Iterator[_Row]:
    grades = GradeReader.from_config(cfg)
    duplicates = DuplicateCheck(path)
    for line, raw in enumerate(text_lines(path, cfg.encoding), start=1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        parts = [part.strip() for part in text.split("\t")]
        if len(parts) != 5:
            raise DatasetError(
                f"{where(path, line)}: expected 5 tab-separated values (image_file, caption_id, "
                f"rater1, rater2, rater3), got {len(parts)}"
            )
        image_file, caption_id = parts[0], parts[1]
        for key, value in (("image_file", image_file), ("caption_id", caption_id)):
            if not value:
                raise DatasetError(f"{where(path, line)}: field '{key}' is empty")
        if Path(image_file).name != image_file:
            raise DatasetError(
                f"{where(path, line)}: field 'image_file' must be a bare file name, got "
                f"{shown(image_file)}"
            )
        labels: dict[str, int] = {}
        for number, (annotator, value) in enumerate(zip(RATERS, parts[2:], strict=True), 1):
            grade = grades.read(value, path, line, f"rater{number}")
            if grade is None:
                raise DatasetError(f"{where(path, line)}: field 'rater{number}' is empty")
            labels[annotator] = grade
        duplicates.add(caption_id, image_file, line)
        yield _Row(line, image_file, caption_id, labels)


def _read_captions(path: Path, encoding: str, wanted: set[str]) -> dict[str, str]:
    """Stream the caption file, keeping the wanted captions; stops once all are found."""
    return tab_texts(
        path, encoding, wanted, "caption_id<TAB>caption", "the caption of '{id}' is empty"
    )
