import json
from pathlib import Path

import pytest
from PIL import Image

from mmjudge.config import DatasetConfig, ScaleConfig
from mmjudge.data import load_dataset
from mmjudge.errors import DatasetError


def make_dataset(tmp_path: Path, rows: list[dict], **overrides) -> DatasetConfig:
    root = tmp_path / "ds"
    (root / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), "red").save(root / "images" / "a.png")
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = {
        "name": "t",
        "path": str(root),
        "scale": ScaleConfig(grades=[0, 1, 2]),
        "annotators": ["a", "b"],
    }
    settings.update(overrides)
    return DatasetConfig(**settings)


def row(**changes) -> dict:
    base = {
        "query_id": "q1",
        "query": "red shirt",
        "result_id": "r1",
        "fields": {"name": "Red shirt", "colour": ""},
        "images": ["images/a.png"],
        "labels": {"a": 2, "b": 1},
    }
    base.update(changes)
    return base


def test_valid_rows_load_in_order(tmp_path: Path) -> None:
    cfg = make_dataset(tmp_path, [row(), row(result_id="r2", images=[])])
    examples = list(load_dataset(cfg))
    assert [e.result_id for e in examples] == ["r1", "r2"]
    assert examples[0].fields == (("name", "Red shirt"), ("colour", ""))
    assert examples[0].images[0].endswith("images/a.png")
    assert examples[0].image_names == ("images/a.png",)
    assert examples[0].labels == {"a": 2, "b": 1}


@pytest.mark.parametrize(
    ("bad_row", "expected"),
    [
        (row(query=""), ":2: field 'query' is missing or empty"),
        ({k: v for k, v in row().items() if k != "result_id"}, ":2: field 'result_id'"),
        (row(labels={}), ":2: field 'labels' is missing or empty"),
        (row(labels={"a": 3, "b": 1}), ":2: field 'labels.a' is 3, outside the declared scale"),
        (row(labels={"a": "high"}), ":2: field 'labels.a' is the text 'high', not a number"),
        (row(labels={"a": 1.5}), ":2: field 'labels.a' is 1.5, outside"),
        (row(labels={"zed": 1}), ":2: field 'labels.zed' names an unknown annotator"),
        (row(images=["../outside.png"]), ":2: field 'images' path '../outside.png' escapes"),
        (row(images=["/etc/passwd"]), ":2: field 'images' has absolute path"),
        (row(fields=["not", "a", "mapping"]), ":2: field 'fields' must be an object"),
        ("{not json", ":2: not valid JSON"),
        ("[1, 2]", ":2: expected a JSON object"),
    ],
)
def test_each_validation_error_names_file_line_and_field(
    tmp_path: Path, bad_row: dict | str, expected: str
) -> None:
    cfg = make_dataset(tmp_path, [row(result_id="r0"), bad_row])
    with pytest.raises(DatasetError) as info:
        list(load_dataset(cfg))
    message = str(info.value)
    assert "items.jsonl" in message
    assert expected in message
    assert "\n" not in message


def test_duplicate_pair_names_both_lines(tmp_path: Path) -> None:
    cfg = make_dataset(tmp_path, [row(), row(result_id="r2"), row()])
    with pytest.raises(DatasetError, match=r"items.jsonl:3: duplicate pair .*first seen on line 1"):
        list(load_dataset(cfg))


def test_escape_through_a_subfolder_is_caught(tmp_path: Path) -> None:
    cfg = make_dataset(tmp_path, [row(images=["images/../../ds/items.jsonl"])])
    # resolves inside the root: allowed, but it is not an image; the image stage reports that
    assert list(load_dataset(cfg))
    cfg = make_dataset(tmp_path, [row(images=["images/../../elsewhere.png"])])
    with pytest.raises(DatasetError, match="escapes the dataset root"):
        list(load_dataset(cfg))


def test_wrong_encoding_is_named(tmp_path: Path) -> None:
    cfg = make_dataset(tmp_path, [row()])
    path = Path(cfg.path) / "items.jsonl"
    path.write_bytes(json.dumps(row(query="café")).encode("latin-1").replace(b"\\u00e9", b"\xe9"))
    with pytest.raises(DatasetError, match=r"items.jsonl:1: cannot be decoded as utf-8"):
        list(load_dataset(cfg))
    cfg.encoding = "latin-1"  # the setting is honoured, as by every other loader
    assert [example.query for example in load_dataset(cfg)] == ["café"]


def test_empty_dataset_and_missing_file(tmp_path: Path) -> None:
    cfg = make_dataset(tmp_path, [])
    (Path(cfg.path) / "items.jsonl").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="has no items"):
        list(load_dataset(cfg))
    cfg.items = "nope.jsonl"
    with pytest.raises(DatasetError, match="has no items file"):
        list(load_dataset(cfg))


def test_max_images_and_limit(tmp_path: Path) -> None:
    cfg = make_dataset(
        tmp_path,
        [row(images=["images/a.png", "images/a.png"]), row(result_id="r2")],
        max_images=1,
        limit=1,
    )
    examples = list(load_dataset(cfg))
    assert len(examples) == 1
    assert len(examples[0].images) == 1


def test_unlabelled_lines_load_only_when_allowed(tmp_path: Path) -> None:
    """A line without labels is refused, naming dataset.allow_unlabelled; with it, a line
    with no ``labels`` or empty ones loads with none, and an annotator with an empty grade
    is still an error."""
    rows = [row(), {k: v for k, v in row(result_id="r2").items() if k != "labels"}]
    with pytest.raises(DatasetError, match=r"set dataset\.allow_unlabelled=true"):
        list(load_dataset(make_dataset(tmp_path, rows)))
    rows.append(row(result_id="r3", labels={}))
    examples = list(load_dataset(make_dataset(tmp_path, rows, allow_unlabelled=True)))
    assert [e.labels for e in examples] == [{"a": 2, "b": 1}, {}, {}]
    bad = make_dataset(tmp_path, [row(labels={"a": None})], allow_unlabelled=True)
    with pytest.raises(DatasetError, match=r"field 'labels\.a' is empty"):
        list(load_dataset(bad))


def test_an_image_that_is_not_there_is_recorded_not_refused(tmp_path: Path) -> None:
    from mmjudge.config import ModalityConfig
    from mmjudge.data.survey import check_images, survey

    cfg = make_dataset(tmp_path, [row(), row(result_id="r2", images=["images/missing.png"])])
    first, second = load_dataset(cfg)
    root = tmp_path / "ds"
    assert first.missing_images == ()
    assert (second.images, second.image_names) == ((), ())
    (missing,) = second.missing_images
    assert missing.path == str((root / "images" / "missing.png").resolve())
    assert missing.problem == (
        f"{root / 'items.jsonl'}:2: field 'images' names 'images/missing.png', which does not "
        f"exist under {root}"
    )
    counts = survey([first, second])
    assert (counts.missing_images, counts.first_missing_image) == (1, missing.problem)
    check_images(counts, ModalityConfig(name="text", include_image=False))
    with pytest.raises(DatasetError, match=r"items.jsonl:2: field 'images' names .*; add the"):
        check_images(counts, ModalityConfig(name="mm", include_image=True))
