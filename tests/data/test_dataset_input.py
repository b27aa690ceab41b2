"""What reaches the judge, and bad input: grade rules, HTML, query samples, the text cap,
encodings and inputs that used to raise tracebacks. Every error is one line naming file,
line and field."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from PIL import Image

from mmjudge.config import DEFAULT_MAX_TEXT_TOKENS, DatasetConfig, ScaleConfig, SweepConfig
from mmjudge.data import load_dataset
from mmjudge.data.loading import sampled_queries
from mmjudge.data.sample import draw_rank, sample_query_ids
from mmjudge.data.schema import Example
from mmjudge.data.survey import check_html_fields, survey
from mmjudge.data.validation import approx_tokens, query_id_from_text
from mmjudge.errors import ConfigError, DatasetError
from tests.helpers import compose_config


def error_of(cfg: DatasetConfig, kind: type[Exception] = DatasetError) -> str:
    with pytest.raises(kind) as info:
        list(load_dataset(cfg))
    message = str(info.value)
    assert "\n" not in message and len(message) < 600, message
    return message


def table(
    tmp_path: Path, header: list[str], rows: list[list[Any]], **settings: Any
) -> DatasetConfig:
    """A ``table`` dataset over a CSV written here: columns q, id, the header's others."""
    root = tmp_path / "table"
    root.mkdir(parents=True, exist_ok=True)
    with (root / "pairs.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    columns = {"query": "q", "result_id": "id", "annotators": {"mean": "grade"}}
    columns.update(settings.pop("columns", {}))
    meanings = {1: "off the mark", 2: "near", 3: "what was asked for"}
    settings.setdefault("scale", ScaleConfig(grades=[1, 2, 3], meanings=meanings, relevant_from=2))
    return DatasetConfig(
        name="t", loader="table", path=str(root), items="pairs.csv", columns=columns, **settings
    )


def jsonl(tmp_path: Path, lines: list[str | dict[str, Any]], **settings: Any) -> DatasetConfig:
    root = tmp_path / "ds"
    (root / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), "red").save(root / "images" / "a.png")
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    (root / "items.jsonl").write_text(text + "\n", encoding="utf-8")
    settings.setdefault("scale", ScaleConfig(grades=[0, 1, 2]))
    return DatasetConfig(name="t", path=str(root), **settings)


def item(query_id: str = "q1", result_id: str = "r1", **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "query_id": query_id,
        "query": f"query {query_id}",
        "result_id": result_id,
        "fields": {"name": "Red shirt"},
        "labels": {"a": 1},
    }
    row.update(changes)
    return row


# --- mean-of-raters grades: dataset.grade_rule / grade_bins ------------------------------------

MEANS = ["1", "1.33", "1.67", "2.5", "3"]


def means_table(tmp_path: Path, **settings: Any) -> DatasetConfig:
    rows = [[f"query {i}", f"r{i}", grade] for i, grade in enumerate(MEANS)]
    return table(tmp_path, ["q", "id", "grade"], rows, **settings)


def grades_of(cfg: DatasetConfig) -> list[int]:
    return [example.labels["mean"] for example in load_dataset(cfg)]


def test_fractional_grades_need_a_rule_and_the_error_says_so(tmp_path: Path) -> None:
    message = error_of(means_table(tmp_path))
    assert "pairs.csv:3: field 'grade' is '1.33', outside the declared scale [1, 2, 3]" in message
    assert "dataset.grade_rule" in message


@pytest.mark.parametrize(
    ("rule", "expected"),
    [("round", [1, 1, 2, 3, 3]), ("floor", [1, 1, 1, 2, 3]), ("ceil", [1, 2, 2, 3, 3])],
)
def test_rounding_rules_place_means_of_raters(
    tmp_path: Path, rule: str, expected: list[int]
) -> None:
    assert grades_of(means_table(tmp_path, grade_rule=rule)) == expected


def test_bins_place_means_of_raters_and_refuse_values_outside(tmp_path: Path) -> None:
    cfg = means_table(tmp_path, grade_rule="bins", grade_bins=[1, 1.5, 2.5, 3])
    cfg.validate()
    # [1, 1.5) -> 1, [1.5, 2.5) -> 2, [2.5, 3] -> 3 (the last bin holds its upper edge)
    assert grades_of(cfg) == [1, 1, 2, 3, 3]
    rows = [["query", "r1", "3.2"]]
    outside = table(tmp_path / "b", ["q", "id", "grade"], rows, grade_rule="bins")
    outside.grade_bins = [1, 1.5, 2.5, 3]
    assert "pairs.csv:2: field 'grade' is '3.2', outside dataset.grade_bins [1, 3]" in error_of(
        outside
    )


def test_a_rule_then_the_grade_map(tmp_path: Path) -> None:
    cfg = means_table(
        tmp_path,
        grade_rule="round",
        columns={"grade_map": {1: 0, 2: 1, 3: 2}},
        scale=ScaleConfig(grades=[0, 1, 2]),
    )
    assert grades_of(cfg) == [0, 0, 1, 2, 2]
    with pytest.raises(ConfigError, match="grade_rule=bins places values on the scale directly"):
        bins = {"grade_rule": "bins", "grade_bins": [0, 1, 2, 3]}
        list(load_dataset(DatasetConfig(**{**vars(cfg), **bins})))


def test_a_rounded_grade_off_the_scale_is_named(tmp_path: Path) -> None:
    cfg = table(tmp_path, ["q", "id", "grade"], [["q", "r1", "3.6"]], grade_rule="round")
    message = error_of(cfg)
    assert "field 'grade' is '3.6' (read as 4), outside the declared scale [1, 2, 3]" in message


def test_every_loader_reads_grades_through_the_rule(tmp_path: Path) -> None:
    cfg = jsonl(tmp_path, [item(labels={"a": 1.6})], grade_rule="round")
    assert [e.labels for e in load_dataset(cfg)] == [{"a": 2}]
    root = tmp_path / "trec"
    root.mkdir()
    (root / "qrels.txt").write_text("q1 0 d1 2.33\nq1 0 d2 0.5\n", encoding="utf-8")
    (root / "queries.tsv").write_text("q1\tlamps\n", encoding="utf-8")
    docs = [{"doc_id": "d1", "text": "a lamp"}, {"doc_id": "d2", "text": "a chair"}]
    (root / "docs.jsonl").write_text("\n".join(map(json.dumps, docs)), encoding="utf-8")
    trec = DatasetConfig(
        name="trec",
        loader="trec",
        path=str(root),
        items="docs.jsonl",
        labels_file="qrels.txt",
        queries_file="queries.tsv",
        scale=ScaleConfig(grades=[0, 1, 2, 3], relevant_from=2),
        grade_rule="floor",
    )
    assert [e.labels["assessor"] for e in load_dataset(trec)] == [2, 0]


# --- HTML in text fields -----------------------------------------------------------------------

PAGE = (
    "<style>.desc{color:red} p{margin:0}</style>"
    "<p>Soft&nbsp;cotton tee &amp; socks</p><script>track('<p>no</p>')</script>"
    "<ul><li>Machine wash</li><li>Made in Portugal</li></ul><!-- sku 991 -->"
)


def html_table(tmp_path: Path, **settings: Any) -> DatasetConfig:
    rows = [["tee", "r1", "<b>Tee</b>", PAGE, 2]]
    columns = {"text_fields": ["title", "description"]}
    return table(
        tmp_path, ["q", "id", "title", "description", "grade"], rows, columns=columns, **settings
    )


def test_html_fields_are_converted_to_text(tmp_path: Path) -> None:
    (example,) = load_dataset(html_table(tmp_path, html_fields=["description"]))
    fields = dict(example.fields)
    assert fields["title"] == "<b>Tee</b>"  # not named: left as it is
    text = fields["description"]
    assert text.splitlines()[0] == "Soft cotton tee & socks"  # entities decoded
    assert "Machine wash" in text and "Made in Portugal" in text
    for leftover in ("<", "color:red", "track(", "sku 991", "&amp;"):
        assert leftover not in text


def test_html_to_text_converts_every_field(tmp_path: Path) -> None:
    (example,) = load_dataset(html_table(tmp_path, html_to_text=True))
    assert dict(example.fields)["title"] == "Tee"
    raw = html_table(tmp_path / "raw")
    (untouched,) = load_dataset(raw)
    assert dict(untouched.fields)["description"] == PAGE  # off by default


def test_html_is_converted_before_the_text_is_cut(tmp_path: Path) -> None:
    # Title and page show 11 words, under a cap of 15 tokens (11 words); with its markup, CSS
    # and script the raw page is far longer and would be cut.
    (example,) = load_dataset(html_table(tmp_path, html_to_text=True, max_text_tokens=15))
    assert not example.truncated
    (raw,) = load_dataset(html_table(tmp_path / "raw", max_text_tokens=15))
    assert raw.truncated and raw.tokens_removed > 0


def test_html_settings_are_checked(tmp_path: Path) -> None:
    cfg = html_table(tmp_path, html_fields=["descripton"])
    with pytest.raises(ConfigError) as info:
        check_html_fields(survey(load_dataset(cfg)), cfg)
    assert "dataset.html_fields names 'descripton', which no item" in str(info.value)
    assert "its text fields are: description, title" in str(info.value)
    both = html_table(tmp_path, html_to_text=True, html_fields=["title"])
    with pytest.raises(ConfigError, match="give one or the other"):
        both.validate()


# --- a seeded sample of whole queries ----------------------------------------------------------


def many_queries(tmp_path: Path, n_queries: int = 20, per_query: int = 3, **settings: Any):
    lines = [item(f"q{q:02d}", f"r{r}") for q in range(n_queries) for r in range(per_query)]
    return jsonl(tmp_path, lines, **settings)


def test_sample_queries_keeps_whole_queries(tmp_path: Path) -> None:
    cfg = many_queries(tmp_path, sample_queries=5)
    examples = list(load_dataset(cfg, seed=7))
    queries = {e.query_id for e in examples}
    assert len(queries) == 5 and len(examples) == 15  # every result of each sampled query
    assert [e.query_id for e in examples] == sorted(e.query_id for e in examples)  # file order
    assert {e.query_id for e in load_dataset(cfg, seed=7)} == queries  # seeded
    assert any({e.query_id for e in load_dataset(cfg, seed=s)} != queries for s in range(8, 12))
    # a larger sample with the same seed contains the smaller one
    cfg.sample_queries = 9
    assert queries < {e.query_id for e in load_dataset(cfg, seed=7)}
    cfg.sample_queries = 50  # more than there are: all of them
    assert len(list(load_dataset(cfg, seed=7))) == 60


def test_limit_applies_after_the_sample(tmp_path: Path) -> None:
    cfg = many_queries(tmp_path, sample_queries=4, limit=5)
    examples = list(load_dataset(cfg, seed=1))
    sample = sampled_queries(cfg, 1)
    assert sample is not None and len(examples) == 5
    assert {e.query_id for e in examples} <= sample


def test_sample_keeps_only_n_query_ids_and_matches_a_full_sort() -> None:
    def stream() -> Any:
        for number in range(5000):
            yield Example(f"q{number % 1000}", "query", f"r{number}", ())

    sample = sample_query_ids(stream(), 25, seed=3)
    every = sorted({f"q{n}" for n in range(1000)}, key=lambda qid: draw_rank(3, qid))
    assert sample == frozenset(every[:25])


# --- the text cap ------------------------------------------------------------------------------


@pytest.mark.slow  # over half a second
def test_a_default_cap_cuts_a_runaway_field_and_flags_it(tmp_path: Path) -> None:
    assert DatasetConfig(name="t", path=".").max_text_tokens == DEFAULT_MAX_TEXT_TOKENS == 2000
    huge = "word " * 1_000_000
    cfg = jsonl(tmp_path, [item(fields={"name": "Tee", "description": huge})])
    (example,) = load_dataset(cfg)
    text = " ".join(value for _, value in example.fields)
    assert approx_tokens(text) <= 2000 < approx_tokens(huge)
    assert example.truncated and example.tokens_removed == approx_tokens(huge) - 1998
    cfg.max_text_tokens = None  # null turns the cap off
    (whole,) = load_dataset(cfg)
    assert not whole.truncated and dict(whole.fields)["description"] == huge


@pytest.mark.parametrize("text", ["x" * 1_000_000, "中文" * 500_000], ids=["blob", "cjk"])
def test_the_cap_holds_for_text_without_spaces(tmp_path: Path, text: str) -> None:
    cfg = jsonl(tmp_path, [item(fields={"name": text})])
    (example,) = load_dataset(cfg)
    assert example.truncated
    assert 0 < len(example.fields[0][1]) <= 2000 * 12


# --- encodings, byte-order marks, long CSV fields ---------------------------------------------


def test_jsonl_accepts_a_utf8_byte_order_mark(tmp_path: Path) -> None:
    cfg = jsonl(tmp_path, [item(), item(result_id="r2")])
    path = Path(cfg.path) / "items.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [e.result_id for e in load_dataset(cfg)] == ["r1", "r2"]


def test_a_csv_field_over_131072_characters_is_cut_not_fatal(tmp_path: Path) -> None:
    long_text = "lorem ipsum " * 20_000  # 240,000 characters
    rows = [["q", "r1", long_text, 2], ["q", "r2", "short", 1]]
    cfg = table(
        tmp_path,
        ["q", "id", "body", "grade"],
        rows,
        columns={"text_fields": ["body"]},
        max_text_tokens=300,
    )
    first, second = load_dataset(cfg)
    assert first.truncated and approx_tokens(first.fields[0][1]) <= 300
    assert not second.truncated
    cfg.max_text_tokens = None
    assert dict(next(iter(load_dataset(cfg))).fields)["body"] == long_text


# --- inputs that used to end in a traceback ----------------------------------------------------


def test_a_grade_with_401_digits(tmp_path: Path) -> None:
    huge = "1" + "0" * 400
    cfg = jsonl(
        tmp_path,
        [
            item(),
            f'{{"query_id": "q2", "query": "q", "result_id": "r", "labels": {{"a": {huge}}}}}',
        ],
    )
    message = error_of(cfg)
    assert "items.jsonl:2: field 'labels.a' is an integer of about 401 digits, outside" in message
    rows = [["q", "r1", huge]]
    assert "pairs.csv:2: field 'grade'" in error_of(table(tmp_path, ["q", "id", "grade"], rows))
    rounded = table(tmp_path / "r", ["q", "id", "grade"], [["q", "r1", "9" * 401 + ".5"]])
    rounded.grade_rule = "round"
    assert "pairs.csv:2: field 'grade' must be a number" in error_of(rounded)


def test_an_integer_over_4300_digits(tmp_path: Path) -> None:
    line = json.dumps(item()).replace('"a": 1', '"a": ' + "7" * 5000)
    message = error_of(jsonl(tmp_path, [line]))
    assert "items.jsonl:1: not valid JSON (a number has more digits than can be read)" in message
    rows = [["q", "r1", "7" * 5000]]
    assert "pairs.csv:2: field 'grade' must be a number" in error_of(
        table(tmp_path, ["q", "id", "grade"], rows)
    )


def test_json_nested_100000_deep(tmp_path: Path) -> None:
    deep = '{"query_id": "q", "fields": ' + "[" * 100_000 + "]" * 100_000 + "}"
    message = error_of(jsonl(tmp_path, [item(), deep]))
    assert "items.jsonl:2: JSON nested too deeply to read" in message


def test_a_nul_byte_or_an_overlong_name_in_an_image_path(tmp_path: Path) -> None:
    cfg = jsonl(tmp_path, [item(images=["images/a\u0000.png"])])
    assert "items.jsonl:1: field 'images' holds 'images/a\\x00.png', which contains a NUL" in (
        error_of(cfg)
    )
    cfg = jsonl(tmp_path, [item(images=["images/" + "a" * 5000 + ".png"])])
    assert "items.jsonl:1: field 'images' path 'images/aaaa" in error_of(cfg)
    rows = [["q", "r1", "pic\x00.png", 1]]
    cfg = table(tmp_path, ["q", "id", "pic", "grade"], rows, columns={"image": "pic"})
    assert "pairs.csv:2: field 'images' holds 'pic\\x00.png'" in error_of(cfg)


# --- the shipped example configs ---------------------------------------------------------------


def test_the_homedepot_example_rounds_means_of_raters(tmp_path: Path) -> None:
    root = tmp_path / "homedepot"
    root.mkdir()
    text = (
        "id,product_uid,product_title,search_term,relevance\n"
        "2,100001,Simpson Strong-Tie 12-Gauge Angle,angle bracket,3\n"
        "3,100001,Simpson Strong-Tie 12-Gauge Angle,l bracket,2.5\n"
        "9,100002,BEHR Deck Stain for 90\xb0 Corners,deck over,1.33\n"
        "16,100005,Delta Vero Shower Faucet Trim Kit,rain shower head,1.67\n"
    )
    (root / "train.csv").write_bytes(text.encode("latin-1"))
    typed = OmegaConf.to_object(
        compose_config(["dataset=homedepot_example", f"dataset.path={root}"])
    )
    assert isinstance(typed, SweepConfig)
    examples = list(load_dataset(typed.dataset))
    assert [e.labels["raters_mean"] for e in examples] == [3, 3, 1, 2]
    assert examples[2].fields == (("product_title", "BEHR Deck Stain for 90° Corners"),)
    assert examples[1].query_id == query_id_from_text("l bracket")


def test_the_crowdflower_example_cleans_its_descriptions(tmp_path: Path) -> None:
    root = tmp_path / "crowdflower"
    root.mkdir()
    with (root / "train.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["id", "query", "product_title", "product_description", "median_relevance", "x"]
        )
        writer.writerow([1, "lamp", "<b>Lamp</b>", PAGE, 4, 0])
    typed = OmegaConf.to_object(
        compose_config(["dataset=crowdflower_example", f"dataset.path={root}"])
    )
    assert isinstance(typed, SweepConfig)
    (example,) = load_dataset(typed.dataset)
    title, description = dict(example.fields).values()
    assert title == "<b>Lamp</b>"  # only the description is declared HTML
    assert description.startswith("Soft cotton tee & socks") and "<" not in description
