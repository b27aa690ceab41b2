"""Several results of one query per call with their pictures (``modality=mm``/``image`` and
``prompt.passages_per_call`` above 1), end to end through the real OpenAI and Anthropic SDKs
against the loopback server: each call carries its results' pictures in one message, each
after its marker, in the order shown; each grade lands on its result's row; a call over the
provider's image limits is refused before any call; the forecast counts K pictures per call.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from mmjudge.config import ModelConfig
from mmjudge.engine.cell import forecast as forecast_cell
from mmjudge.engine.cell import run_cell, skip_reason, typed_config
from mmjudge.engine.passage_calls import image_limits, pictures_refusal, placed_pictures
from mmjudge.engine.policy import ItemCall, WorkItem
from mmjudge.images import ImageSettings, preprocess_image
from mmjudge.judges.registry import judge_class
from mmjudge.locations import package_path
from mmjudge.prompts import RenderedPrompt
from mmjudge.prompts.passages import marker_ends, render_passages
from mmjudge.records import EncodedImage, JudgeRequest, sha256_text
from mmjudge.store import RunSummary
from mmjudge.store.forecast_file import CellForecast
from tests.fixtures.loopback_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    LoopbackServer,
    RecordedRequest,
    answer_schema,
    passage_markers,
    user_text,
)
from tests.helpers import compose_config

ITEMS = 24
K = 3
DEMO = package_path("pkg://mmjudge/datasets/demo_fashion")
#: What gpt-4o-mini is billed for a low-detail picture (its sheet's base, OpenAI's rule).
LOW_DETAIL_MINI = 2833

PROVIDERS = {
    "gpt4o_mini": (OPENAI_PATH, "openai_base_url"),
    "claude_sonnet45": (ANTHROPIC_PATH, "anthropic_base_url"),
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000")


def parts(request: RecordedRequest) -> list[tuple[str, str]]:
    """The user message's parts in order: ``("text", text)`` or ``("image", bare base64)``,
    whichever provider's shape."""
    content = request.body["messages"][-1]["content"]
    if isinstance(content, str):
        return [("text", content)]
    out: list[tuple[str, str]] = []
    for part in content:
        if part["type"] == "text":
            out.append(("text", part["text"]))
        elif part["type"] == "image_url":
            out.append(("image", part["image_url"]["url"].partition(",")[2]))
        else:
            out.append(("image", part["source"]["data"]))
    return out


def grade_of(data: str) -> int:
    """The grade the server gives a picture: a hash of what was sent."""
    return int(hashlib.sha256(data.encode()).hexdigest(), 16) % 3


def pictures_after_markers(request: RecordedRequest) -> dict[str, list[str]]:
    """Per marker, the pictures that follow its marker line, up to the next text."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    for kind, value in parts(request):
        if kind == "text":
            last = value.rstrip("\n").rsplit("\n", 1)[-1]
            current = last if last in passage_markers(value) else None
        elif current is not None:
            found.setdefault(current, []).append(value)
    return found


def by_picture(request: RecordedRequest) -> str:
    """Each marker's grade from the picture after it, as a JSON object where the request asks
    for the structured answer (as the provider's constrained decoding would give it), else in
    lines; a single result's call gets 1."""
    pictures = pictures_after_markers(request)
    if not pictures:
        return "1\nAsked alone."
    grades = {name: grade_of(images[0]) for name, images in pictures.items()}
    if answer_schema(request.body) is not None:
        return json.dumps(grades)
    return "\n".join(f"{name}: {grade} - a reason." for name, grade in grades.items())


def sent_pictures() -> dict[str, str]:
    """Each demo picture's source hash → the base64 the preprocessor sends for it."""
    settings = ImageSettings()
    out = {}
    for path in sorted((DEMO / "images").iterdir()):
        encoded = preprocess_image(path, settings, None)
        out[encoded.sha256] = encoded.data.partition(",")[2]
    return out


def names() -> dict[str, str]:
    """Each demo result's name field."""
    rows = [json.loads(line) for line in (DEMO / "items.jsonl").read_text().splitlines()]
    return {row["result_id"]: row["fields"]["name"] for row in rows}


def queries() -> dict[str, str]:
    """Each demo query's text."""
    rows = [json.loads(line) for line in (DEMO / "items.jsonl").read_text().splitlines()]
    return {row["query_id"]: row["query"] for row in rows}


def config(tmp_path: Path, server: LoopbackServer, model: str, *extra: str) -> object:
    _path, base = PROVIDERS[model]
    return compose_config(
        [
            f"model={model}",
            "modality=mm",
            f"model.base_url={getattr(server, base)}",
            f"dataset.limit={ITEMS}",
            "runner.progress=false",
            f"prompt.passages_per_call={K}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.prepared_cache={tmp_path / 'prepared'}",
            f"paths.image_cache={tmp_path / 'images'}",
            *extra,
        ]
    )


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(PROVIDERS))
def test_a_call_carries_each_result_s_picture_after_its_marker_and_each_grade_lands_on_its_row(
    tmp_path: Path, model: str
) -> None:
    with LoopbackServer(responder=by_picture) as server:
        summary = run_cell(config(tmp_path, server, model), tmp_path / "run")  # type: ignore[arg-type]
        sent = server.requests_to(PROVIDERS[model][0])
    assert isinstance(summary, RunSummary) and summary.n_judgments == ITEMS
    written = rows(tmp_path / "run")
    assert len(written) == ITEMS and all(r["error"] is None for r in written)
    calls = [r for r in sent if len(passage_markers(user_text(r.body))) > 1]
    assert calls and len(sent) < ITEMS
    pictures = sent_pictures()
    name_of = names()
    query_of = queries()
    for request in calls:
        markers = passage_markers(user_text(request.body))
        assert len(markers) <= K
        after = pictures_after_markers(request)
        # One picture per result, each right after its own marker, in the order shown.
        assert list(after) == markers and all(len(images) == 1 for images in after.values())
        assert sum(kind == "image" for kind, _ in parts(request)) == len(markers)
    for row in written:
        (source,) = row["image_sha256s"]
        if row["call_id"] is None:  # a query's lone last result, asked on its own
            assert row["label"] == 1
            continue
        position = row["call_position"]
        sent_data = pictures[source]
        # The grade the server gave the picture after the row's marker is the row's grade,
        # so that picture was the row's own; the text after it names the row's result.
        assert row["label"] == grade_of(sent_data)
        assert json.loads(row["raw_output"])[f"R{position}"] == row["label"]  # structured
        query = f"Query: {query_of[row['query_id']]}\n"
        (request,) = [
            r
            for r in calls
            if query in user_text(r.body)
            and sent_data in pictures_after_markers(r).get(f"R{position}", [])
        ]
        shown = parts(request)
        at = shown.index(("image", sent_data))
        assert shown[at + 1][1].startswith(f"\nname: {name_of[row['result_id']]}\n")
    # Each call's rows share its usage: the rows add up to the summary's dollars.
    grouped = collections.Counter(r["call_id"] for r in written if r["call_id"])
    assert sorted(set(grouped.values())) <= list(range(2, K + 1))
    assert sum(r["cost_usd"] for r in written) == pytest.approx(summary.calls.spent_usd)  # type: ignore[union-attr]


@pytest.mark.slow
def test_anthropic_picture_calls_read_the_shared_part_from_the_cache(tmp_path: Path) -> None:
    """The shared part leads each call, with its breakpoint, and the pictures follow it: every
    call after the first reads the part from the cache."""
    minimum = 100
    with LoopbackServer(responder=by_picture) as server:
        server.prompt_cache.min_tokens = minimum
        cfg = config(
            tmp_path,
            server,
            "claude_sonnet45",
            "prompt=guidelines",
            f"model.prompt_cache_min_tokens={minimum}",
        )
        summary = run_cell(cfg, tmp_path / "run")  # type: ignore[arg-type]
        sent = server.requests_to(ANTHROPIC_PATH)
    assert isinstance(summary, RunSummary) and summary.prompt_cache is not None
    heads = set()
    for request in sent:
        content = request.body["messages"][0]["content"]
        assert content[0]["type"] == "text" and content[0]["cache_control"] == {"type": "ephemeral"}
        assert sum("cache_control" in block for block in content) == 1
        assert any(block["type"] == "image" for block in content[1:])
        heads.add(content[0]["text"])
    assert len(heads) == 1  # one shared part for every call, lone results' included
    assert summary.prompt_cache.read_tokens > 0
    assert all(r["error"] is None for r in rows(tmp_path / "run"))


@pytest.mark.slow
def test_an_image_cell_shows_only_the_pictures_after_the_markers(tmp_path: Path) -> None:
    with LoopbackServer(responder=by_picture) as server:
        run_cell(config(tmp_path, server, "gpt4o_mini", "modality=image"), tmp_path / "run")  # type: ignore[arg-type]
        sent = server.requests_to(OPENAI_PATH)
    calls = [r for r in sent if len(passage_markers(user_text(r.body))) > 1]
    assert calls
    text = user_text(calls[0].body)
    assert "each under its marker and shown only by its picture after the marker" in text
    assert "name: " not in text
    pictures = sent_pictures()
    for row in rows(tmp_path / "run"):
        if row["call_id"] is not None:
            assert row["label"] == grade_of(pictures[row["image_sha256s"][0]])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "extra", "reason"),
    [
        (
            "claude_sonnet45",
            ["prompt.passages_per_call=101"],
            "prompt.passages_per_call=101 with dataset.max_images=1 sends up to 101 pictures "
            "in one call, over the 100 of Anthropic's vision guide: 100 images and 32 MB per "
            "request; use prompt.passages_per_call=100 or less",
        ),
        (
            "gpt4o_mini",
            ["prompt.passages_per_call=251", "dataset.max_images=2"],
            "sends up to 502 pictures in one call, over the 500 of OpenAI's vision guide",
        ),
    ],
)
def test_a_k_over_the_provider_s_image_limit_is_refused_in_one_line_before_any_call(
    tmp_path: Path, model: str, extra: list[str], reason: str
) -> None:
    with LoopbackServer() as server:
        summary = run_cell(config(tmp_path, server, model, *extra), tmp_path / "run")  # type: ignore[arg-type]
        assert server.requests == []
    assert isinstance(summary, RunSummary) and summary.status.status == "skipped"
    said = summary.status.status_reason or ""
    assert reason in said and "\n" not in said


@pytest.mark.slow
def test_the_forecast_counts_k_pictures_per_call_at_the_sheet_s_rule(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        one = forecast_cell(
            config(tmp_path, server, "gpt4o_mini", "prompt.passages_per_call=1"), tmp_path / "1"
        )  # type: ignore[arg-type]
        many = forecast_cell(config(tmp_path, server, "gpt4o_mini"), tmp_path / "k")  # type: ignore[arg-type]
    assert isinstance(one, CellForecast) and isinstance(many, CellForecast)
    # Every result's picture is counted once either way: K to a call, one to a call.
    assert one.sync.calls == ITEMS and many.sync.calls < ITEMS
    assert one.sync.image_tokens == many.sync.image_tokens == ITEMS * LOW_DETAIL_MINI
    # A call of K results is forecast K pictures: what the calls leave to the lone results
    # (one picture each) and the K-calls (K each) add up to every result's.
    forecast = json.loads((tmp_path / "k" / "forecast.json").read_text())
    assert forecast["forecast"]["judgments"] == ITEMS


@pytest.mark.slow
def test_a_result_without_a_picture_is_an_error_row_as_alone_and_the_others_are_called(
    tmp_path: Path,
) -> None:
    items = [json.loads(line) for line in (DEMO / "items.jsonl").read_text().splitlines()]
    first = [row for row in items if row["query_id"] == "q01"][:4]
    folder = tmp_path / "data"
    (folder / "images").mkdir(parents=True)
    for row in first:
        for image in row["images"]:
            shutil.copyfile(DEMO / image, folder / image)
    first[1]["images"] = []
    (folder / "items.jsonl").write_text("".join(json.dumps(row) + "\n" for row in first))
    with LoopbackServer(responder=by_picture) as server:
        run_cell(
            config(tmp_path, server, "gpt4o_mini", f"dataset.path={folder}", "dataset.limit=null"),
            tmp_path / "run",
        )  # type: ignore[arg-type]
        sent = server.requests_to(OPENAI_PATH)
    written = {row["result_id"]: row for row in rows(tmp_path / "run")}
    missing = written[first[1]["result_id"]]
    assert missing["error"] == (f"result '{first[1]['result_id']}' has no image for modality 'mm'")
    assert missing["call_id"] is None
    assert [len(passage_markers(user_text(r.body))) for r in sent] == [K]
    assert {row["result_id"] for row in written.values() if row["call_id"]} == {
        first[n]["result_id"] for n in (0, 2, 3)
    }


def _encoded(name: str, size: int) -> EncodedImage:
    return EncodedImage(f"{name}.png", sha256_text(name), "image/png", 512, 512, "x" * size)


def _single(
    key: str, images: tuple[EncodedImage, ...], text: str
) -> tuple[WorkItem, RenderedPrompt]:
    request = JudgeRequest(item_key=key, prompt=text, images=images)
    rendered = RenderedPrompt(system="", text=text, fields=())
    return WorkItem(key=key, request=request, context=ItemCall(None, ())), rendered  # type: ignore[arg-type]


def test_a_call_whose_pictures_pass_the_request_size_is_not_sent() -> None:
    # Two results whose pictures take 20 MB each: 40 MB, over Anthropic's 32 MB per request
    # and within OpenAI's 50 MB of image bytes.
    head = "Head\n\nQuery: q\n\n"
    texts = [f"{head}The result:\nname: {n}\n\nReply." for n in ("one", "two")]
    members = []
    for key, text in zip(("a", "b"), texts, strict=True):
        item, rendered = _single(key, (_encoded(key, 20_000_000),), text)
        start = text.index("The result:")
        members.append((item, _marked(rendered, start, text.index("Reply."))))
    shown = [rendered for _, rendered in members]
    singles = tuple(item for item, _ in members)
    prompt = render_passages(shown, (0, 1, 2), False, shows_image=True)
    request = JudgeRequest(item_key="call:x", prompt=prompt)
    over = placed_pictures(request, singles, shown, _model("anthropic"))
    assert over.problem == (
        "the 2 results' pictures take 40.0 MB, over the 32 MB of Anthropic's vision guide: "
        "100 images and 32 MB per request; use a smaller prompt.passages_per_call, or smaller "
        "pictures (images.size, images.format=jpeg)"
    )
    within = placed_pictures(request, singles, shown, _model("openai"))
    assert within.problem is None
    assert [image.source for image in within.request.images] == ["a.png", "b.png"]
    ends = marker_ends(prompt, shown)
    assert within.request.image_places == ends
    assert [prompt[end - 2 : end] for end in ends] == ["R1", "R2"]
    assert prompt[ends[0] :].startswith("\nname: one\n")


def _model(provider: str, **changes: object) -> ModelConfig:
    return ModelConfig(name=provider, provider=provider, model_id="m", **changes)  # type: ignore[arg-type]


def _marked(rendered: RenderedPrompt, result: int, answer: int) -> RenderedPrompt:
    return dataclasses.replace(rendered, result_chars=result, answer_chars=answer)


def refusal(*overrides: str) -> str | None:
    return pictures_refusal(typed_config(compose_config(["modality=mm", *overrides])))


@pytest.mark.slow  # composes a dozen configs
def test_the_picture_limits_refuse_by_count_and_by_size_where_many_and_pass_within_them() -> None:
    claude = "model=claude_sonnet45"
    assert refusal(claude, "prompt.passages_per_call=100") is None
    assert refusal(claude, "prompt.passages_per_call=50", "dataset.max_images=2") is None
    over = refusal(claude, "prompt.passages_per_call=34", "dataset.max_images=3")
    assert over == (
        "prompt.passages_per_call=34 with dataset.max_images=3 sends up to 102 pictures in one "
        "call, over the 100 of Anthropic's vision guide: 100 images and 32 MB per request; use "
        "prompt.passages_per_call=33 or less"
    )
    # Above 20 pictures, Anthropic takes none over 2000 px a side: 21 of 2048 px are refused,
    # 20 of them, or 21 of 2000 px, or 21 URLs passed through (their size unknown) are not.
    big = refusal(claude, "prompt.passages_per_call=21", "images.size=2048")
    assert big == (
        "prompt.passages_per_call=21 with dataset.max_images=1 sends up to 21 pictures of "
        "2048 px a side in one call, and Anthropic's vision guide: 100 images and 32 MB per "
        "request takes more than 20 only up to 2000 px a side; use images.size=2000 or less, "
        "or prompt.passages_per_call=20 or less"
    )
    assert refusal(claude, "prompt.passages_per_call=20", "images.size=2048") is None
    assert refusal(claude, "prompt.passages_per_call=21", "images.size=2000") is None
    url = ("prompt.passages_per_call=21", "images.size=2048", "images.encoding=url")
    assert refusal(claude, *url) is None
    # OpenAI states 500 and no smaller size for many; a compatible server states none.
    assert refusal("model=gpt4o_mini", "prompt.passages_per_call=500") is None
    assert refusal("model=gpt4o_mini", "prompt.passages_per_call=60", "images.size=4096") is None
    assert "over the 500" in (refusal("model=gpt4o_mini", "prompt.passages_per_call=501") or "")
    assert refusal("model=vllm_local", "prompt.passages_per_call=1000") is None


@pytest.mark.slow  # composes several configs
def test_a_models_own_picture_count_replaces_its_providers_for_any_results_per_call() -> None:
    """``model.max_images_per_call``: a server that takes one picture per prompt (vLLM's
    ``--limit-mm-per-prompt``) refuses K=5, and with one result per call refuses three
    pictures a result; a model allowed more than its provider's general count gets it."""
    vllm = ("model=vllm_local", "model.max_images_per_call=1")
    assert refusal(*vllm, "prompt.passages_per_call=5") == (
        "prompt.passages_per_call=5 with dataset.max_images=1 sends up to 5 pictures in one "
        "call, over the 1 of model.max_images_per_call of 'vllm_local'; use "
        "prompt.passages_per_call=1 or less"
    )
    assert refusal(*vllm, "dataset.max_images=3") == (
        "dataset.max_images=3 sends up to 3 pictures in one call, over the 1 of "
        "model.max_images_per_call of 'vllm_local'; use dataset.max_images=1 or less"
    )
    assert refusal(*vllm) is None
    claude = ("model=claude_sonnet45", "prompt.passages_per_call=300")
    assert "over the 100 of Anthropic's vision guide" in (refusal(*claude) or "")
    assert refusal(*claude, "model.max_images_per_call=600") is None
    # The provider's byte limit still holds where the count is the model's own.
    limits = image_limits(_model("anthropic", max_images_per_call=600))
    assert limits is not None and (limits.max_images, limits.max_bytes) == (600, 32_000_000)
    assert image_limits(_model("openai_compatible")) is None
    own = image_limits(_model("openai_compatible", max_images_per_call=4))
    assert own is not None and (own.max_images, own.max_bytes) == (4, None)
    # The cell is skipped before any call, whatever the results per call.
    cfg = typed_config(compose_config(["modality=mm", *vllm, "dataset.max_images=3"]))
    assert skip_reason(cfg, judge_class(cfg.model)) == refusal(*vllm, "dataset.max_images=3")
