"""Images are prepared in worker threads ahead of their calls, once per source image, never
on the event loop's thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from pathlib import Path

import pytest
from PIL import Image

import mmjudge.images
from mmjudge.data.loading import load_dataset
from mmjudge.engine.cell import run_cell, typed_config
from mmjudge.engine.images_pool import ImagePool, prepared_async
from mmjudge.images import ImageCache, ImageSettings
from mmjudge.judges.openai import OpenAIJudge
from mmjudge.store import RunSummary
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import compose_config


def image_dataset(root: Path, items: int, images: int) -> Path:
    """``items`` items showing ``images`` distinct pictures in turn; item 3 shows a broken one."""
    (root / "images").mkdir(parents=True)
    for i in range(images):
        Image.new("RGB", (64 + i, 48), (i * 40 % 255, 90, 30)).save(root / "images" / f"{i}.png")
    (root / "images" / "broken.png").write_bytes(b"not a picture")
    lines = []
    for n in range(items):
        picture = "broken.png" if n == 3 else f"{n % images}.png"
        row = {
            "query_id": f"q{n // 4}",
            "query": "green shirt",
            "result_id": f"r{n}",
            "fields": {"name": f"Shirt {n}"},
            "images": [f"images/{picture}"],
            "labels": {"annotator_a": n % 3, "annotator_b": 1},
        }
        lines.append(json.dumps(row))
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_preprocessing_never_runs_on_the_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    encoded_on: list[int] = []
    loop_threads: set[int] = set()
    encode = mmjudge.images.encode_image_bytes
    generate = OpenAIJudge.generate

    def recording_encode(*args: object, **kwargs: object) -> object:
        encoded_on.append(threading.get_ident())
        return encode(*args, **kwargs)  # type: ignore[arg-type]

    async def recording_generate(self: OpenAIJudge, request: object) -> object:
        loop_threads.add(threading.get_ident())
        return await generate(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(mmjudge.images, "encode_image_bytes", recording_encode)
    monkeypatch.setattr(OpenAIJudge, "generate", recording_generate)
    data = image_dataset(tmp_path / "data", items=24, images=6)
    with LoopbackServer() as server:
        cfg = compose_config(
            [
                "model=gpt4o_mini",
                "modality=mm",
                f"model.base_url={server.openai_base_url}",
                f"dataset.path={data}",
                "dataset.name=tiny",
                "runner.progress=false",
                f"paths.response_cache={tmp_path / 'cache.sqlite'}",
                f"paths.image_cache={tmp_path / 'images'}",
            ]
        )
        summary = run_cell(cfg, tmp_path / "run")
        sent = server.request_count
    assert len(loop_threads) == 1
    assert encoded_on and loop_threads.isdisjoint(encoded_on)
    # Once per source image: six pictures and the broken one (which fails, on its row).
    assert len(encoded_on) == 7
    assert isinstance(summary, RunSummary) and summary.n_judgments == 24 and sent == 23
    rows = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").open()]
    broken = next(row for row in rows if row["result_id"] == "r3")
    assert "broken.png" in broken["error"]


def test_items_come_in_order_with_their_images(tmp_path: Path) -> None:
    data = image_dataset(tmp_path / "data", items=10, images=3)
    cfg = typed_config(compose_config([f"dataset.path={data}", "dataset.name=tiny"]))

    pool = ImagePool(ImageSettings(), ImageCache(tmp_path / "cache"), workers=2)

    async def collect() -> list[tuple[str, int, str | None]]:
        out = []
        async for example, ready in prepared_async(pool, load_dataset(cfg.dataset), ahead=4):
            out.append((example.result_id, len(ready.images), ready.error))
        return out

    try:
        seen = asyncio.run(collect())
    finally:
        pool.close()
    assert [result for result, _n, _e in seen] == [f"r{n}" for n in range(10)]
    assert all(n == 1 and error is None for result, n, error in seen if result != "r3")
    assert seen[3][1] == 0 and "broken.png" in (seen[3][2] or "")


def test_items_whose_images_are_ready_come_without_a_turn_of_the_loop(tmp_path: Path) -> None:
    """The claims' writes staged in one turn of the loop are committed together; an item whose
    images are prepared already must not cost a turn (waiting on each finished job cost one,
    and an image cell committed nearly every write alone)."""
    data = image_dataset(tmp_path / "data", items=12, images=3)
    cfg = typed_config(compose_config([f"dataset.path={data}", "dataset.name=tiny"]))
    examples = list(load_dataset(cfg.dataset))
    pool = ImagePool(ImageSettings(), ImageCache(tmp_path / "cache"), workers=2)
    ready = [
        pool.submit(str(path), name)
        for example in examples
        for path, name in zip(example.images, example.image_names, strict=True)
    ]
    concurrent.futures.wait(ready)

    async def turns_while_consuming() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        turns = 0
        ticking = True

        def tick() -> None:
            nonlocal turns
            turns += 1
            if ticking:
                loop.call_soon(tick)

        tick()
        await asyncio.sleep(0)
        before = turns
        seen = [example async for example, _ in prepared_async(pool, examples, ahead=4)]
        ticking = False
        return len(seen), turns - before

    try:
        seen, turns = asyncio.run(turns_while_consuming())
    finally:
        pool.close()
    assert seen == 12
    assert turns == 0
