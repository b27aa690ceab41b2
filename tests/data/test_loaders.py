"""The dataset loaders beyond canonical JSONL: hm, flickr8k_expert, trec and table."""

from __future__ import annotations

import csv
import inspect
import itertools
import json
import logging
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from PIL import Image

from mmjudge.config import DatasetConfig, ScaleConfig, SweepConfig
from mmjudge.data import load_dataset
from mmjudge.data import table as table_loader
from mmjudge.data.trec import run_paths
from mmjudge.data.validation import approx_tokens, query_id_from_text, truncate_fields
from mmjudge.errors import ConfigError, DatasetError
from tests.helpers import REPO_ROOT, compose_config, shared_data

TREC_TINY = REPO_ROOT / "tests" / "fixtures" / "trec_tiny"


def dataset(path: Path, **settings: Any) -> DatasetConfig:
    settings.setdefault("name", "t")
    return DatasetConfig(path=str(path), **settings)


def error_of(cfg: DatasetConfig, kind: type[Exception] = DatasetError) -> str:
    with pytest.raises(kind) as info:
        list(load_dataset(cfg))
    message = str(info.value)
    assert "\n" not in message
    return message


def write_csv(path: Path, header: list[str], rows: list[list[Any]], delimiter: str = ",") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


# --- H&M -------------------------------------------------------------------------------------

HM_COLUMNS = [
    "article_id",
    "prod_name",
    "product_type_name",
    "index_name",
    "detail_desc",
    "department_name",
    "index_group_name",
    "colour_group_name",
    "graphical_appearance_name",
    "perceived_colour_value_name",
    "perceived_colour_master_name",
]


def hm_layout(tmp_path: Path) -> Path:
    """A synthetic H&M layout: three articles, photos for the first two only."""
    root = tmp_path / "hm"
    rows = []
    for number, (name, kind) in enumerate(
        [("Stripe tee", "T-shirt"), ("Linen trousers", "Trousers"), ("Beanie", "Hat/beanie")],
        start=1,
    ):
        article = f"01234567{number:02d}"
        rows.append(
            [
                article,
                name,
                kind,
                "Ladieswear",
                f"A {kind.lower()}.",
                "Dept",
                "Ladies",
                "Black",
                "Solid",
                "Dark",
                "Black",
            ]
        )
        if number < 3:
            (root / "images" / article[:3]).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (4, 6), "blue").save(root / "images" / article[:3] / f"{article}.jpg")
    write_csv(root / "articles.csv", HM_COLUMNS, rows)
    return root


def hm_labels(
    path: Path, rows: list[list[Any]], annotators: tuple[str, ...] = ("ann_a", "ann_b")
) -> Path:
    return write_csv(path, ["query_id", "query", "article_id", *annotators], rows)


def test_hm_joins_labels_with_the_synthetic_catalogue(tmp_path: Path) -> None:
    root = hm_layout(tmp_path)
    labels = hm_labels(
        tmp_path / "labels.csv",
        [
            ["q1", "black hat", "0123456703", 2, 1],
            ["q1", "black hat", "123456701", 0, ""],  # no leading zero; ann_b did not grade
            ["q2", "linen trousers", "0123456702", 2, 2],
        ],
    )
    cfg = dataset(root, loader="hm", items="articles.csv", labels_file=str(labels))
    examples = list(load_dataset(cfg))
    assert [(e.query_id, e.result_id) for e in examples] == [
        ("q1", "0123456703"),
        ("q1", "0123456701"),
        ("q2", "0123456702"),
    ]
    beanie, tee, trousers = examples
    assert beanie.images == () and beanie.image_names == ()  # no photo: not a dataset error
    assert tee.image_names == ("images/012/0123456701.jpg",)
    assert Path(tee.images[0]).is_file()
    assert tee.labels == {"ann_a": 0}
    assert trousers.labels == {"ann_a": 2, "ann_b": 2}
    names = [name for name, _ in tee.fields]
    assert names[:3] == ["prod_name", "index_name", "detail_desc"]
    assert dict(tee.fields)["prod_name"] == "Stripe tee"


def test_hm_text_with_a_nul_byte_names_the_line_and_field(tmp_path: Path) -> None:
    root = hm_layout(tmp_path)
    articles = root / "articles.csv"
    articles.write_text(
        articles.read_text(encoding="utf-8").replace("Stripe tee", "Stripe\x00tee"), "utf-8"
    )
    labels = hm_labels(tmp_path / "labels.csv", [["q1", "tee", "0123456701", 2, 1]])
    cfg = dataset(root, loader="hm", items="articles.csv", labels_file=str(labels))
    assert "articles.csv:2: field 'prod_name' contains a NUL byte" in error_of(cfg)


def test_hm_on_the_real_sample(tmp_path: Path) -> None:
    root = shared_data("hm_sample")
    with (root / "articles.csv").open(encoding="utf-8", newline="") as handle:
        articles = list(itertools.islice(csv.DictReader(handle), 0, 400, 100))
    rows = [["q1", "black socks", a["article_id"], 1] for a in articles]
    rows[0][2] = rows[0][2].lstrip("0")
    labels = hm_labels(tmp_path / "labels.csv", rows, annotators=("annotator_a",))
    cfg = OmegaConf.to_object(
        compose_config(
            ["dataset=hm_sample", f"dataset.path={root}", f"dataset.labels_file={labels}"]
        )
    )
    assert isinstance(cfg, SweepConfig)
    examples = list(load_dataset(cfg.dataset))
    assert [e.result_id for e in examples] == [a["article_id"] for a in articles]
    for example, article in zip(examples, articles, strict=True):
        fields = dict(example.fields)
        assert fields["prod_name"] == article["prod_name"]
        assert fields["detail_desc"] == article["detail_desc"]
        assert len(example.fields) == 10
        assert example.image_names == (
            f"images/{article['article_id'][:3]}/{article['article_id']}.jpg",
        )
        assert Path(example.images[0]).is_file()
        assert example.labels == {"annotator_a": 1}


def test_hm_without_a_label_file_says_how_to_give_one(tmp_path: Path) -> None:
    message = error_of(dataset(hm_layout(tmp_path), loader="hm", items="articles.csv"))
    assert "no relevance labels" in message
    assert "dataset.labels_file=" in message
    assert "query_id, query, article_id" in message


def test_hm_labelled_article_missing_from_the_catalogue(tmp_path: Path) -> None:
    labels = hm_labels(
        tmp_path / "labels.csv",
        [["q1", "hat", "0123456703", 1, 1], ["q1", "hat", "0999999999", 1, 1]],
    )
    cfg = dataset(hm_layout(tmp_path), loader="hm", items="articles.csv", labels_file=str(labels))
    message = error_of(cfg)
    assert "labels.csv:3: article_id '0999999999' is not in" in message
    assert "articles.csv" in message


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (["q1", "hat", "0123456703", 7, 1], "labels.csv:2: field 'ann_a' is '7', outside"),
        (["q1", "hat", "0123456703", "good", 1], "labels.csv:2: field 'ann_a' must be a number"),
        (["q1", "hat", "0123456703", "", ""], "labels.csv:2: no grade in column(s) ann_a, ann_b"),
        (["q1", "hat", "A-123", 1, 1], "labels.csv:2: field 'article_id' must be an H&M"),
        (["", "hat", "0123456703", 1, 1], "labels.csv:2: field 'query_id' is empty"),
    ],
)
def test_hm_bad_label_rows(tmp_path: Path, row: list[Any], expected: str) -> None:
    labels = hm_labels(tmp_path / "labels.csv", [row])
    cfg = dataset(hm_layout(tmp_path), loader="hm", items="articles.csv", labels_file=str(labels))
    assert expected in error_of(cfg)


def test_hm_header_checks_name_missing_and_present_columns(tmp_path: Path) -> None:
    root = hm_layout(tmp_path)
    labels = hm_labels(tmp_path / "labels.csv", [["q1", "hat", "0123456703", 1, 1]])
    cfg = dataset(root, loader="hm", labels_file=str(labels), annotators=["ann_a", "ann_c"])
    message = error_of(cfg)
    assert "labels.csv:1: missing column(s) ann_c" in message
    assert "the file has columns: query_id, query, article_id, ann_a, ann_b" in message

    cfg = dataset(root, loader="hm", labels_file=str(labels), text_fields=["prod_name", "fit"])
    message = error_of(cfg)
    assert "articles.csv:1: missing column(s) fit" in message
    assert "prod_name" in message.split("the file has columns:")[1]

    cfg = dataset(root, loader="hm", labels_file=str(labels), annotators=["ann_b"])
    assert [e.labels for e in load_dataset(cfg)] == [{"ann_b": 1}]


def test_hm_duplicate_pair(tmp_path: Path) -> None:
    labels = hm_labels(
        tmp_path / "labels.csv",
        [["q1", "hat", "0123456703", 1, 1], ["q1", "hat", "123456703", 2, 2]],
    )
    cfg = dataset(hm_layout(tmp_path), loader="hm", labels_file=str(labels))
    assert "labels.csv:3: duplicate pair" in error_of(cfg)


# --- Flickr8k expert -------------------------------------------------------------------------


def test_flickr8k_on_the_real_data() -> None:
    root = shared_data("flickr8k_expert")
    captions = dict(
        line.rstrip("\n").split("\t", 1)
        for line in (root / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines(True)
    )
    cfg = OmegaConf.to_object(compose_config(["dataset=flickr8k_expert", f"dataset.path={root}"]))
    assert isinstance(cfg, SweepConfig)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every image of the subset is present: nothing skipped
        examples = list(load_dataset(cfg.dataset))
    assert len(examples) == 766
    assert len({e.result_id for e in examples}) == 125
    assert all(set(e.labels) == {"expert_1", "expert_2", "expert_3"} for e in examples)
    assert {g for e in examples for g in e.labels.values()} == {1, 2, 3, 4}
    assert all(e.fields == () for e in examples)
    assert all(e.query == captions[e.query_id].strip() for e in examples)
    assert all(Path(e.images[0]).is_file() for e in examples)
    assert examples[0].image_names == (f"images/{examples[0].result_id}",)


def flickr_layout(
    tmp_path: Path, rows: list[str], images: tuple[str, ...] = ("a.jpg", "b.jpg")
) -> Path:
    root = tmp_path / "flickr"
    (root / "images").mkdir(parents=True)
    for name in images:
        Image.new("RGB", (4, 4), "green").save(root / "images" / name)
    (root / "ExpertAnnotations.txt").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (root / "Flickr8k.token.txt").write_text(
        "a.jpg#0\tA dog runs on grass .\nb.jpg#1\tTwo children on a beach .\n", encoding="utf-8"
    )
    return root


def flickr_config(root: Path, **settings: Any) -> DatasetConfig:
    return dataset(
        root,
        loader="flickr8k_expert",
        items="ExpertAnnotations.txt",
        queries_file="Flickr8k.token.txt",
        scale=ScaleConfig(grades=[1, 2, 3, 4]),
        **settings,
    )


def test_flickr8k_skips_rows_without_images_with_one_warning(tmp_path: Path) -> None:
    root = flickr_layout(
        tmp_path,
        ["a.jpg\ta.jpg#0\t4\t4\t3", "c.jpg\ta.jpg#0\t1\t1\t1", "b.jpg\ta.jpg#0\t1\t2\t1"],
    )
    cfg = flickr_config(root, columns={"skip_missing_images": True})
    with pytest.warns(UserWarning, match="skipped 1 of 3 annotation rows") as caught:
        examples = list(load_dataset(cfg))
    assert len(caught) == 1
    assert [(e.query, e.result_id) for e in examples] == [
        ("A dog runs on grass .", "a.jpg"),
        ("A dog runs on grass .", "b.jpg"),
    ]
    assert examples[1].labels == {"expert_1": 1, "expert_2": 2, "expert_3": 1}

    message = error_of(flickr_config(root))  # the loader's own default is strict
    assert "ExpertAnnotations.txt:2: image 'c.jpg' is not in" in message
    assert "skip_missing_images=true" in message


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (["a.jpg\ta.jpg#0\t4\t4\t3", "a.jpg\ta.jpg#0\t1\t1\t1"], ":2: duplicate pair"),
        (["a.jpg\tb.jpg#7\t4\t4\t3"], ":1: caption_id 'b.jpg#7' is not in"),
        (["a.jpg\ta.jpg#0\t4\t4"], ":1: expected 5 tab-separated values"),
        (["a.jpg\ta.jpg#0\t4\t5\t3"], ":1: field 'rater2' is '5', outside"),
        (["a.jpg\ta.jpg#0\t4\t\t3"], ":1: field 'rater2' is empty"),
    ],
)
def test_flickr8k_bad_input(tmp_path: Path, rows: list[str], expected: str) -> None:
    message = error_of(flickr_config(flickr_layout(tmp_path, rows)))
    assert f"ExpertAnnotations.txt{expected}" in message
    if "caption_id" in expected:
        assert "Flickr8k.token.txt" in message


def test_flickr8k_config_errors(tmp_path: Path) -> None:
    root = flickr_layout(tmp_path, ["a.jpg\ta.jpg#0\t4\t4\t3"])
    assert "valid keys: skip_missing_images, image_dir" in error_of(
        flickr_config(root, columns={"skip_missing": True}), ConfigError
    )
    assert "must include expert_1, expert_2, expert_3" in error_of(
        flickr_config(root, annotators=["expert_1"]), ConfigError
    )


def test_sweep_composes_with_flickr8k() -> None:
    cfg = compose_config(["dataset=flickr8k_expert", "modality=image"])
    typed = OmegaConf.to_object(cfg)
    assert isinstance(typed, SweepConfig)
    assert typed.dataset.loader == "flickr8k_expert"
    assert typed.dataset.scale.grades == [1, 2, 3, 4]
    assert typed.dataset.scale.relevant_from == 3
    assert typed.dataset.annotators == ["expert_1", "expert_2", "expert_3"]
    assert typed.dataset.columns == {"skip_missing_images": True, "image_dir": "images"}
    assert "flickr8k_expert" in OmegaConf.to_yaml(cfg)  # what --cfg job prints


# --- TREC ------------------------------------------------------------------------------------


def trec_config(**settings: Any) -> DatasetConfig:
    path = settings.pop("path", TREC_TINY)
    base: dict[str, Any] = {
        "loader": "trec",
        "items": "docs.jsonl",
        "labels_file": "qrels.txt",
        "queries_file": "queries.tsv",
        "scale": ScaleConfig(grades=[0, 1, 2, 3]),
    }
    base.update(settings)
    return dataset(path, **base)


def copy_trec(tmp_path: Path, **replace: str) -> Path:
    root = tmp_path / "trec"
    root.mkdir()
    for source in TREC_TINY.iterdir():
        (root / source.name).write_text(
            replace.get(source.stem, source.read_text(encoding="utf-8")), encoding="utf-8"
        )
    return root


def test_trec_loads_the_tiny_collection_in_qrels_order() -> None:
    examples = list(load_dataset(trec_config(runs=["run_tiny.txt"])))
    assert [(e.query_id, e.result_id, e.labels) for e in examples] == [
        ("q1", "d1", {"assessor": 3}),
        ("q1", "d2", {"assessor": 0}),
        ("q2", "d3", {"assessor": 2}),
        ("q2", "d1", {"assessor": 1}),
    ]
    assert examples[0].query == "what do cats eat"
    assert examples[0].fields == (
        ("title", "Feeding cats"),
        ("text", "Cats are carnivores and eat mostly meat."),
    )
    assert examples[2].fields[0] == ("title", "")  # no title: empty, kept
    assert examples[0].images == ()
    assert run_paths(trec_config(runs=["run_tiny.txt"])) == [TREC_TINY / "run_tiny.txt"]


def test_trec_judges_the_runs_unjudged_top_ten_when_unlabelled_items_are_allowed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With dataset.allow_unlabelled, the documents a run ranks in a judged query's top ten
    that the qrels lack follow the judged items, once each and with no human label; one not
    in the collection is left out with a warning; off, the runs add nothing."""
    run_a = "q1 Q0 d1 1 12.5 a\nq1 Q0 d4 2 11.0 a\nq1 Q0 d9 3 10.0 a\nq7 Q0 d2 1 5.0 a\n"
    run_b = "q2 Q0 d4 1 3.0 b\nq2 Q0 d3 2 2.0 b\nq1 Q0 d4 1 9.0 b\n"
    root = copy_trec(tmp_path, run_tiny=run_a)
    (root / "run_b.txt").write_text(run_b, encoding="utf-8")
    runs = ["run_tiny.txt", "run_b.txt"]
    assert len(list(load_dataset(trec_config(path=root, runs=runs)))) == 4
    with caplog.at_level(logging.WARNING):
        examples = list(load_dataset(trec_config(path=root, runs=runs, allow_unlabelled=True)))
    assert [(e.query_id, e.result_id, e.labels) for e in examples[4:]] == [
        ("q1", "d4", {}),
        ("q2", "d4", {}),
    ]
    assert examples[4].fields == (("title", "Unjudged"), ("text", "Nobody judged this document."))
    assert "1 of the 3 unjudged documents the runs rank in a top 10" in caplog.text


def test_trec_annotator_name_and_text_fields() -> None:
    cfg = trec_config(annotators=["nist"], text_fields=["text"])
    first = next(iter(load_dataset(cfg)))
    assert first.labels == {"nist": 3}
    assert first.fields == (("text", "Cats are carnivores and eat mostly meat."),)


def test_trec_doc_id_key_is_configurable(tmp_path: Path) -> None:
    docs = (TREC_TINY / "docs.jsonl").read_text(encoding="utf-8").replace('"doc_id"', '"_id"')
    root = copy_trec(tmp_path, docs=docs)
    assert len(list(load_dataset(trec_config(path=root, columns={"doc_id": "_id"})))) == 4
    assert "field 'doc_id' is missing or empty" in error_of(trec_config(path=root))


@pytest.mark.parametrize(
    ("file", "text", "expected"),
    [
        ("qrels", "q1 0 d1 3\nq1 0 d9 1\n", "qrels.txt:2: doc_id 'd9' is not in"),
        ("qrels", "q1 0 d1 3\nq7 0 d1 1\n", "qrels.txt:2: query_id 'q7' is not in"),
        ("qrels", "q1 0 d1 3\nq1 0 d2 4\n", "qrels.txt:2: field 'grade' is '4', outside"),
        ("qrels", "q1 0 d1\n", "qrels.txt:1: expected 4 values"),
        ("qrels", "q1 0 d1 3\nq1 0 d1 2\n", "qrels.txt:2: duplicate pair"),
        ("qrels", "\n", "has no qrels lines"),
        ("queries", "q1 what do cats eat\n", "queries.tsv:1: expected 'query_id<TAB>query text'"),
        ("docs", '{"doc_id": "d1", "text": "x"}\n{oops\n', "docs.jsonl:2: not valid JSON"),
        (
            "docs",
            '{"doc_id": "d1", "text": "a\\u0000b"}\n',
            "docs.jsonl:1: field 'text' contains a NUL",
        ),
    ],
)
def test_trec_bad_input(tmp_path: Path, file: str, text: str, expected: str) -> None:
    message = error_of(trec_config(path=copy_trec(tmp_path, **{file: text})))
    assert expected in message
    if "is not in" in expected:
        assert ("docs.jsonl" if "doc_id" in expected else "queries.tsv") in message


def test_trec_missing_settings_and_runs() -> None:
    assert "needs dataset.labels_file" in error_of(trec_config(labels_file=None))
    assert "needs dataset.queries_file" in error_of(trec_config(queries_file=None))
    message = error_of(trec_config(runs=["run_tiny.txt", "nope.txt"]))
    assert "run file(s) not found" in message and "nope.txt" in message
    assert "run_tiny.txt" not in message


# --- table (CSV / TSV / JSONL with a column mapping) -----------------------------------------

CROWDFLOWER_HEADER = [
    "id",
    "query",
    "product_title",
    "product_description",
    "median_relevance",
    "relevance_variance",
]


def crowdflower(tmp_path: Path, rows: list[list[Any]], *overrides: str) -> DatasetConfig:
    root = tmp_path / "crowdflower"
    write_csv(root / "train.csv", CROWDFLOWER_HEADER, rows)
    cfg = OmegaConf.to_object(
        compose_config(["dataset=crowdflower_example", f"dataset.path={root}", *overrides])
    )
    assert isinstance(cfg, SweepConfig)
    return cfg.dataset


GOOD_ROWS = [
    [1, "bridal shower decorations", "Accent Pillow with Heart Design", "Red satin pillow", 1, 0],
    [2, "led christmas lights", "Set of 10 Battery Operated LED Lights", "", 4, 0.471],
]


def test_crowdflower_mapping_loads_through_config_only(tmp_path: Path) -> None:
    examples = list(load_dataset(crowdflower(tmp_path, GOOD_ROWS)))
    first, second = examples
    assert first.query == "bridal shower decorations"
    assert first.query_id == query_id_from_text(first.query)  # no blanks, for qrels
    assert first.result_id == "1"
    assert first.fields == (
        ("product_title", "Accent Pillow with Heart Design"),
        ("product_description", "Red satin pillow"),
    )
    assert first.labels == {"crowd_median": 0}  # 1 on the file's scale, mapped to 0
    assert second.labels == {"crowd_median": 3}
    assert second.fields[1] == ("product_description", "")
    assert first.images == ()


def test_table_missing_columns_fail_once_at_the_header(tmp_path: Path) -> None:
    cfg = crowdflower(tmp_path, GOOD_ROWS)
    header = [c for c in CROWDFLOWER_HEADER if c not in ("id", "median_relevance")]
    write_csv(Path(cfg.path) / "train.csv", header, [])
    message = error_of(cfg)
    assert "train.csv:1: missing column(s) id, median_relevance" in message
    assert "the file has columns: query, product_title" in message


@pytest.mark.parametrize(
    ("grade", "expected"),
    [
        (
            "high",
            "train.csv:3: field 'median_relevance' is 'high', which dataset.columns.grade_map",
        ),
        ("5", "train.csv:3: field 'median_relevance' is '5', which dataset.columns.grade_map"),
        ("", "train.csv:3: no grade in column(s) median_relevance"),
    ],
)
def test_table_grades_with_a_grade_map(tmp_path: Path, grade: str, expected: str) -> None:
    rows = [GOOD_ROWS[0], [3, "lamp", "Desk lamp", "", grade, 0]]
    assert expected in error_of(crowdflower(tmp_path, rows))


@pytest.mark.parametrize(
    ("grade", "expected"),
    [
        (
            "high",
            "train.csv:3: field 'median_relevance' must be a number on the scale [1, 2, 3, 4]",
        ),
        ("0", "train.csv:3: field 'median_relevance' is '0', outside the declared scale"),
        ("2.5", "train.csv:3: field 'median_relevance' is '2.5', outside"),
    ],
)
def test_table_grades_without_a_grade_map(tmp_path: Path, grade: str, expected: str) -> None:
    rows = [GOOD_ROWS[0], [3, "lamp", "Desk lamp", "", grade, 0]]
    cfg = crowdflower(
        tmp_path, rows, "~dataset.columns.grade_map", "dataset.scale.grades=[1,2,3,4]"
    )
    assert expected in error_of(cfg)


@pytest.mark.slow  # over a second
def test_table_config_mistakes(tmp_path: Path) -> None:
    cfg = crowdflower(tmp_path, GOOD_ROWS, "dataset.annotators=[someone_else]")
    assert "unknown annotator(s) crowd_median" in error_of(cfg, ConfigError)
    cfg = crowdflower(tmp_path, GOOD_ROWS, "+dataset.columns.title=product_title")
    assert "unknown key(s) title" in error_of(cfg, ConfigError)
    cfg = crowdflower(tmp_path, GOOD_ROWS, "~dataset.columns.annotators")
    assert "dataset.columns.annotators is required" in error_of(cfg, ConfigError)
    cfg = crowdflower(tmp_path, GOOD_ROWS, "dataset.columns.grade_map={1: 0, 2: 9}")
    assert "maps 2 to 9, which is not on the scale" in error_of(cfg, ConfigError)
    cfg = crowdflower(tmp_path, GOOD_ROWS, "dataset.encoding=klingon")
    assert "dataset.encoding='klingon' is not a known text encoding" in error_of(cfg, ConfigError)
    cfg = crowdflower(tmp_path, GOOD_ROWS, "dataset.items=train.xlsx")
    (Path(cfg.path) / "train.xlsx").write_bytes(b"")
    assert "reads .csv, .tsv and .jsonl" in error_of(cfg)


def test_table_empty_duplicate_and_missing_file(tmp_path: Path) -> None:
    assert "train.csv: dataset 'crowdflower_example' has no rows" in error_of(
        crowdflower(tmp_path, [])
    )
    cfg = crowdflower(tmp_path, [GOOD_ROWS[0], GOOD_ROWS[1], GOOD_ROWS[0]])
    assert "train.csv:4: duplicate pair" in error_of(cfg)
    (Path(cfg.path) / "train.csv").write_text("", encoding="utf-8")
    assert "the file is empty" in error_of(cfg)
    (Path(cfg.path) / "train.csv").unlink()
    assert "the table is not here; check dataset.path and dataset.items" in error_of(cfg)


def test_table_ragged_row(tmp_path: Path) -> None:
    cfg = crowdflower(tmp_path, GOOD_ROWS)
    with (Path(cfg.path) / "train.csv").open("a", encoding="utf-8") as handle:
        handle.write("3,lamp,Desk lamp, with a shade,,2,0\n")
    assert "train.csv:4: has 7 values but the header has 6 columns" in error_of(cfg)


def test_table_encoding_error_names_line_encoding_and_fix(tmp_path: Path) -> None:
    cfg = crowdflower(tmp_path, GOOD_ROWS)
    path = Path(cfg.path) / "train.csv"
    with path.open("ab") as handle:
        handle.write("3,café table,Table,Pine café table,2,0\n".encode("latin-1"))
    message = error_of(cfg)
    assert "train.csv:4: cannot be decoded as utf-8 (byte 0xe9" in message
    assert "dataset.encoding=latin-1" in message and "re-save the file as UTF-8" in message
    cfg.encoding = "latin-1"
    assert list(load_dataset(cfg))[-1].query == "café table"


def test_table_reads_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    cfg = crowdflower(tmp_path, GOOD_ROWS)
    path = Path(cfg.path) / "train.csv"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert len(list(load_dataset(cfg))) == 2


def test_table_tsv_and_jsonl_with_images(tmp_path: Path) -> None:
    root = tmp_path / "t"
    (root / "img").mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(root / "img" / "p1.png")
    columns = {
        "query": "q",
        "query_id": "qid",
        "result_id": "pid",
        "text_fields": ["title"],
        "image": "picture",
        "annotators": {"alice": "g_alice", "bob": "g_bob"},
    }
    rows = [
        {
            "qid": 1,
            "q": "red cup",
            "pid": "p1",
            "title": "Red cup",
            "picture": "img/p1.png",
            "g_alice": 2,
            "g_bob": None,
        },
        {
            "qid": 1,
            "q": "red cup",
            "pid": "p2",
            "title": None,
            "picture": "https://x.test/p2.jpg",
            "g_alice": "0",
            "g_bob": 1,
        },
    ]
    (root / "pairs.jsonl").write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    cfg = dataset(root, loader="table", items="pairs.jsonl", columns=columns)
    first, second = load_dataset(cfg)
    assert (first.query_id, first.result_id, first.labels) == ("1", "p1", {"alice": 2})
    assert first.image_names == ("img/p1.png",) and Path(first.images[0]).is_file()
    assert second.images == ("https://x.test/p2.jpg",)
    assert second.fields == (("title", ""),)
    assert second.labels == {"alice": 0, "bob": 1}

    header = ["qid", "q", "pid", "title", "picture", "g_alice", "g_bob"]
    write_csv(root / "pairs.tsv", header, [[r[k] for k in header] for r in rows], "\t")
    cfg.items = "pairs.tsv"
    assert [e.labels for e in load_dataset(cfg)] == [{"alice": 2}, {"alice": 0, "bob": 1}]

    (root / "pairs.jsonl").write_text(json.dumps({"q": "cup", "pid": "p1"}), encoding="utf-8")
    cfg.items = "pairs.jsonl"
    message = error_of(cfg)
    assert "pairs.jsonl:1: missing key(s) qid" in message and "the line has keys: q, pid" in message


def test_table_truncates_long_text(tmp_path: Path) -> None:
    long_text = " ".join(f"word{i}" for i in range(1000))
    cfg = crowdflower(tmp_path, [[1, "q", "A short title", long_text, 2, 0]])
    (example,) = load_dataset(cfg)
    title, description = dict(example.fields).values()
    assert title == "A short title"
    assert description.startswith("word0 word1") and description.endswith("word226")
    assert approx_tokens(title + " " + description) <= 300


def test_table_streams_a_large_file(tmp_path: Path) -> None:
    def write(rows: int) -> DatasetConfig:
        root = tmp_path / f"rows{rows}"
        root.mkdir()
        with (root / "pairs.csv").open("w", encoding="utf-8") as handle:
            handle.write("query,result,grade\n")
            handle.writelines(f"query {i % 500},r{i},{i % 3}\n" for i in range(rows))
            handle.write("broken,line,with,too,many,values\n")
        columns = {"query": "query", "result_id": "result", "annotators": {"a": "grade"}}
        return dataset(root, loader="table", items="pairs.csv", columns=columns)

    # the malformed last line is an error once it is read...
    assert "pairs.csv:22: has 6 values" in error_of(write(20))
    # ...but taking the first items of a big file never reaches it
    cfg = write(200_000)
    assert inspect.isgenerator(table_loader.load(cfg))
    first = list(itertools.islice(load_dataset(cfg), 10))
    assert [e.result_id for e in first] == [f"r{i}" for i in range(10)]
    assert first[4].labels == {"a": 1}


# --- text budget -----------------------------------------------------------------------------


def test_truncate_fields() -> None:
    fields = (("title", "Red  cotton\nshirt"), ("body", "one two three four"), ("tail", "x"))
    assert truncate_fields(fields, None) == (fields, False, 0)
    assert truncate_fields(fields, 100) == (fields, False, 0)
    # 5 tokens -> 3 words: the title fits, the rest (5 words, 6.5 tokens) is cut
    cut, truncated, removed = truncate_fields(fields, 5)
    assert truncated and removed == 7
    assert cut == (("title", "Red  cotton\nshirt"), ("body", ""), ("tail", ""))
    cut, truncated, removed = truncate_fields(fields, 7)  # 5 words: two of the body
    assert cut == (("title", "Red  cotton\nshirt"), ("body", "one two"), ("tail", ""))
    assert truncated and removed == 4  # 3 words
    assert truncate_fields((("a", "  "),), 0) == ((("a", "  "),), False, 0)
    assert approx_tokens("ten words " * 5) == 13
    with pytest.raises(ConfigError, match="max_text_tokens"):
        truncate_fields(fields, -1)


def test_truncate_fields_agrees_with_counting_words_near_the_budget() -> None:
    """Short text skips the word count (a word is at least a character): the result is the
    one counting every word gives, at budgets around the text's length."""
    import random

    from mmjudge.data.validation import TOKENS_PER_WORD, _cut_after

    rng = random.Random(7)
    alphabet = "ab \n\t\u3042-"
    for _ in range(300):
        fields = tuple(
            (f"f{i}", "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9))))
            for i in range(rng.randint(1, 3))
        )
        for max_tokens in range(0, 40):
            words_left = math.floor(round(max_tokens / TOKENS_PER_WORD, 6))
            expected, removed = [], 0
            for name, value in fields:
                kept, used, cut = _cut_after(value, words_left)
                expected.append((name, kept))
                words_left = 0 if cut else words_left - used
                removed += cut
            got = truncate_fields(fields, max_tokens)
            assert got.fields == tuple(expected) and got.truncated == (removed > 0)


def test_a_loader_name_can_be_registered_once() -> None:
    from mmjudge.data.loader_registry import LOADERS, register

    with pytest.raises(ValueError, match="'jsonl' is already registered"):
        register("jsonl", LOADERS["table"])
    assert LOADERS["jsonl"] is not LOADERS["table"]


def test_a_row_without_a_grade_is_refused_unless_unlabelled_items_are_allowed(
    tmp_path: Path,
) -> None:
    """A row with no grade is usually a mistake: refused, naming the setting that admits it;
    with dataset.allow_unlabelled it is judged with no human labels."""
    rows = [*GOOD_ROWS, [3, "garden hose", "Hose reel", "", "", ""]]
    message = error_of(crowdflower(tmp_path, rows))
    assert "train.csv:4: no grade in column(s) median_relevance" in message
    assert "dataset.allow_unlabelled=true" in message
    examples = list(load_dataset(crowdflower(tmp_path, rows, "dataset.allow_unlabelled=true")))
    assert [e.labels for e in examples] == [{"crowd_median": 0}, {"crowd_median": 3}, {}]


def test_a_semicolon_separated_table_names_the_delimiter_setting(tmp_path: Path) -> None:
    cfg = crowdflower(tmp_path, GOOD_ROWS)
    (Path(cfg.path) / "train.csv").write_text(";".join(CROWDFLOWER_HEADER) + "\n")
    message = error_of(cfg)
    assert "missing column(s)" in message
    assert "dataset.columns.delimiter=';'" in message
    assert "\n" not in message
