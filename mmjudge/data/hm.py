"""The H&M product catalogue joined with a label file of (query, article) grades.

Layout, as published for the H&M Personalized Fashion Recommendations data:

    <root>/articles.csv                       # dataset.items; one row per article
    <root>/images/010/0108775015.jpg          # images/<first 3 digits>/<10-digit id>.jpg

The catalogue has no relevance labels. They come from ``dataset.labels_file`` (relative to the
root, or absolute): a CSV (``.tsv`` for tab-separated) with columns ``query_id``, ``query``,
``article_id`` and one grade column per annotator: those named in ``dataset.annotators``, or
every other column when that list is empty. An empty grade cell means that annotator did not
grade the pair. Article ids may be written with or without the leading zero.

Memory: the label file is read whole (it is small: one row per judged pair); ``articles.csv``
is then streamed once, keeping only the rows of labelled articles, and the scan stops as soon
as every labelled article has been found. Examples come out in label-file order.

An article without an image file is not a dataset error: its example has no image, and the
image stage records that on the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from mmjudge.config import DatasetConfig
from mmjudge.data.grades import GradeReader
from mmjudge.data.leniency import Leniency
from mmjudge.data.schema import Example, dataset_root
from mmjudge.data.validation import (
    CsvTable,
    DuplicateCheck,
    checked_text,
    dataset_file,
    is_file,
    require_file,
    shown,
    where,
)
from mmjudge.errors import DatasetError

ARTICLES = "articles.csv"
"""Default catalogue file, used when ``dataset.items`` is left at its generic default."""

DEFAULT_TEXT_FIELDS = (
    "prod_name",
    "index_name",
    "detail_desc",
    "department_name",
    "index_group_name",
    "colour_group_name",
    "product_type_name",
    "graphical_appearance_name",
    "perceived_colour_value_name",
    "perceived_colour_master_name",
)
LABEL_KEYS = ("query_id", "query", "article_id")
LABEL_FORMAT = "a CSV with columns query_id, query, article_id and one grade column per annotator"


class _Label(NamedTuple):
    line: int
    query_id: str
    query: str
    article_id: str
    labels: dict[str, int]


class _Article(NamedTuple):
    line: int
    fields: tuple[tuple[str, str], ...]


def article_id(raw: str, path: Path, line: int) -> str:
    """The 10-digit, zero-padded article id used in file names."""
    text = raw.strip()
    if not text.isdigit() or len(text) > 10:
        raise DatasetError(
            f"{where(path, line)}: field 'article_id' must be an H&M article number of up to "
            f"10 digits, got {shown(raw)}"
        )
    return text.zfill(10)


def image_name(article: str) -> str:
    """Where the catalogue keeps an article's photo, relative to the dataset root."""
    return f"images/{article[:3]}/{article}.jpg"


def load(cfg: DatasetConfig) -> Iterator[Example]:
    root = dataset_root(cfg)
    items = ARTICLES if cfg.items == "items.jsonl" else cfg.items
    articles_path = require_file(
        dataset_file(root, items), "the H&M articles file", "dataset.items"
    )
    if not cfg.labels_file:
        raise DatasetError(
            f"dataset '{cfg.name}': the H&M catalogue has no relevance labels of its own; give "
            f"a label file with dataset.labels_file=PATH ({LABEL_FORMAT}, e.g. annotator_a)"
        )
    labels_path = require_file(
        dataset_file(root, cfg.labels_file), "the label file", "dataset.labels_file"
    )
    labels = list(_read_labels(labels_path, cfg))
    if not labels:
        raise DatasetError(f"{labels_path}: the label file has no rows")

    text_fields = list(cfg.text_fields) or list(DEFAULT_TEXT_FIELDS)
    articles = _read_articles(
        articles_path, cfg.encoding, text_fields, {label.article_id for label in labels}
    )
    missing = [label for label in labels if label.article_id not in articles]
    if missing:
        first = missing[0]
        more = f" ({len(missing)} labelled rows in all)" if len(missing) > 1 else ""
        raise DatasetError(
            f"{where(labels_path, first.line)}: article_id '{first.article_id}' is not in "
            f"{articles_path}{more}; fix the id or label only articles of the catalogue"
        )

    for label in labels:
        fields = articles[label.article_id].fields
        name = image_name(label.article_id)
        image = (root / name).resolve()
        has_image = cfg.max_images > 0 and is_file(image)
        yield Example(
            query_id=label.query_id,
            query=label.query,
            result_id=label.article_id,
            fields=fields,
            images=(str(image),) if has_image else (),
            labels=label.labels,
            image_names=(name,) if has_image else (),
        )


def _read_labels(path: Path, cfg: DatasetConfig) -> Iterator[_Label]:
    table = CsvTable(path, cfg.encoding, "\t" if path.suffix.lower() == ".tsv" else ",")
    table.require(LABEL_KEYS, f"the label file must be {LABEL_FORMAT}")
    if cfg.annotators:
        table.require(cfg.annotators, "one grade column per name in dataset.annotators")
        annotators = list(cfg.annotators)
    else:
        annotators = [column for column in table.columns if column not in LABEL_KEYS]
    if not annotators:
        raise DatasetError(
            f"{where(path, 1)}: the label file has no grade columns; add one column per "
            f"annotator beside {', '.join(LABEL_KEYS)}"
        )
    grades = GradeReader.from_config(cfg)
    duplicates = DuplicateCheck(path)
    for line, row in table.rows():
        for key in ("query_id", "query"):
            if not row[key].strip():
                raise DatasetError(f"{where(path, line)}: field '{key}' is empty")
        article = article_id(row["article_id"], path, line)
        labels: dict[str, int] = {}
        for annotator in annotators:
            grade = grades.read(row[annotator], path, line, annotator)
            if grade is not None:
                labels[annotator] = grade
        if not labels:
            raise DatasetError(
                f"{where(path, line)}: no grade in column(s) {', '.join(annotators)}; every "
                "row needs at least one"
            )
        duplicates.add(row["query_id"], article, line)
        yield _Label(line, row["query_id"], row["query"], article, labels)


def _read_articles(
    path: Path, encoding: str, text_fields: list[str], wanted: set[str]
) -> dict[str, _Article]:
    """Stream the catalogue and keep the rows of the wanted articles only."""
    table = CsvTable(path, encoding)
    table.require(["article_id", *text_fields], "article_id and the text fields shown")
    found: dict[str, _Article] = {}
    with Leniency(path) as lenient:
        for line, row in table.rows():
            article = article_id(row["article_id"], path, line)
            if article not in wanted:
                continue
            if article in found:
                raise DatasetError(
                    f"{where(path, line)}: article_id '{article}' appears again (first on line "
                    f"{found[article].line}); keep one row per article"
                )
            fields = tuple(
                (name, checked_text(row[name], name, path, line, lenient)) for name in text_fields
            )
            found[article] = _Article(line, fields)
            if len(found) == len(wanted):
                break
    return found
