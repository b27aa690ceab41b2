"""End-to-end speed through the command a user types: ``python -m mmjudge.sweep``.

Each measurement starts the real CLI as a subprocess, pointed at the loopback server running in
a process of its own (keep-alive connections, an accept backlog of 4,096), and prints one table
row per cell with:

- end to end: judgments per second from the command's start to its exit (interpreter start-up,
  imports, the dataset check, the summary), against the ideal (concurrency ÷ latency);
- steady: the rate between the 10th and 90th percentile of finished judgments (read from the
  run's ``judgments.jsonl`` as it grows);
- harness CPU per judgment: user + system CPU of the sweep process and of the children it
  forks and reaps (the dataset check's, the SDK's), divided by the judgments; the server runs
  in a process of its own and is not counted;
- peak RSS of the sweep process;
- first call: seconds from the command's start to its first answer minus the server's latency
  (when the first call left).

Before the cells, the server's own capacity is measured at each concurrency and latency with a
lightweight raw-socket client, so a reader can see the server is not what limits the figures.
Image cells preprocess their images during the run (an empty image cache, ``cold``) and then
again with the cache the first run filled (``warm``). The last row reruns the finished text cell
in a new run folder, entirely from the response cache.

The ``real`` cells are shaped like a scraped product catalogue: a CSV read by the ``table``
loader (the ``crowdflower_example`` mapping) whose descriptions are HTML pages of 1–20 KB
(nested tags, entities, scripts and styles, long attribute values), converted to text and cut
to 300 tokens, with one item in 50 repeating an earlier item's prompt. They run as a user's
default sweep does, the report included: first with nothing cached, then as a later cell of the
same sweep would (no answers cached, the items prepared by the first run and found in
``paths.prepared_cache``), then rerun from the response cache in a new run folder.

    python benchmarks/e2e.py                          # every cell, 3 runs each (medians)
    python benchmarks/e2e.py --cells text:64:0.2 --repeat 5
    python benchmarks/e2e.py --n-text 10000 --n-image 2000
    python benchmarks/e2e.py --cells real:64:0.2 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CELLS = (
    "text:64:0.2",
    "text:256:1",
    "text:1024:1",
    "image:64:0.2",
    "image:256:1",
    "image:1024:1",
    "real:64:0.2",
)
#: Items that share one source image in image cells (a product shown for several queries).
QUERIES_PER_IMAGE = 4


@dataclass
class Cell:
    modality: str
    concurrency: int
    latency: float

    @classmethod
    def parse(cls, text: str) -> Cell:
        modality, concurrency, latency = text.split(":")
        return cls(modality, int(concurrency), float(latency))

    @property
    def ideal(self) -> float:
        return self.concurrency / self.latency


# --- the server ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """The loopback server in its own process."""

    def __init__(self, latency: float, *, announce_first: bool = False) -> None:
        self.port = free_port()
        self.latency = latency
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "tests.fixtures.loopback_server"),
                *("--port", str(self.port), "--latency", str(latency)),
                *(("--announce-first",) if announce_first else ()),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.process.stdout.readline()  # "serving on ..."

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def first_request_at(self) -> float | None:
        """The Unix time the first request reached a server started with
        ``announce_first``; None while none has (does not wait)."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 0)
        if not ready:
            return None
        line = self.process.stdout.readline()
        return float(line.rsplit(" ", 1)[1]) if line.startswith("first request at") else None

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


_PROBE_BODY = json.dumps(
    {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "red dress? " * 20}]}
).encode()


async def _probe(port: int, concurrency: int, seconds: float) -> float:
    """Answers per second the server gives ``concurrency`` keep-alive clients."""
    done = 0
    deadline = time.perf_counter() + seconds
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nAuthorization: Bearer probe\r\n"
        + f"Content-Length: {len(_PROBE_BODY)}\r\n\r\n".encode()
        + _PROBE_BODY
    )

    async def client() -> None:
        nonlocal done
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while time.perf_counter() < deadline:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            done += 1
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return done / (time.perf_counter() - started)


def server_capacity(cell: Cell) -> float:
    """The server's answers per second at the cell's concurrency and latency."""
    server = Server(cell.latency)
    try:
        return asyncio.run(_probe(server.port, cell.concurrency, max(3.0, 4 * cell.latency)))
    finally:
        server.close()


# --- data ---------------------------------------------------------------------------------------


COLOURS = ["red", "navy", "black", "white", "green"]
KINDS = ["t-shirt", "dress", "jacket", "trousers", "skirt"]


def write_dataset(root: Path, n: int, images: bool) -> None:
    """``n`` items in mmjudge's JSONL format; image cells get one 640×480 JPEG per
    :data:`QUERIES_PER_IMAGE` items, each image different."""
    root.mkdir(parents=True, exist_ok=True)
    if images:
        _write_images(root / "images", (n + QUERIES_PER_IMAGE - 1) // QUERIES_PER_IMAGE)
    with (root / "items.jsonl").open("w", encoding="utf-8") as out:
        for i in range(n):
            colour, kind = COLOURS[i % 5], KINDS[(i // 5) % 5]
            row: dict[str, object] = {
                "query_id": f"q{i % (n // 8 + 1)}",
                "query": f"{colour} {kind}",
                "result_id": f"r{i}",
                "fields": {
                    "name": f"Item {i} {kind}",
                    "colour": COLOURS[(i * 7) % 5],
                    "description": f"A {COLOURS[(i * 3) % 5]} {kind} in soft cotton, item {i}.",
                },
                "labels": {"a": i % 3, "b": (i // 3) % 3},
            }
            if images:
                row["images"] = [f"images/{i // QUERIES_PER_IMAGE}.jpg"]
            out.write(json.dumps(row) + "\n")


#: One item in this many repeats an earlier item's query, title and description (a product
#: listed twice under two ids): the same prompt, judged once and answered from the cache.
DUPLICATE_EVERY = 50
_WORDS = [
    "cotton",
    "linen",
    "wool",
    "stainless",
    "steel",
    "cordless",
    "drill",
    "lamp",
    "shade",
    "bracket",
    "hinge",
    "outdoor",
    "indoor",
    "waterproof",
    "adjustable",
    "compact",
    "premium",
    "set",
    "pack",
    "of",
    "handle",
    "finish",
    "matte",
    "gloss",
    "brushed",
    "nickel",
    "oak",
    "walnut",
    "white",
    "black",
    "grey",
    "blue",
    "red",
    "green",
    "large",
    "small",
    "medium",
    "standard",
    "heavy",
    "duty",
    "lightweight",
    "durable",
    "easy",
    "install",
    "warranty",
    "included",
    "dimensions",
    "weight",
    "capacity",
    "watts",
    "volts",
]
_ENTITIES = (
    "&amp;",
    "&quot;",
    "&#39;",
    "&nbsp;",
    "&reg;",
    "&trade;",
    "&deg;",
    "&frac12;",
    "&#8217;",
)


def _sentence(rng: random.Random, words: int) -> str:
    out = []
    for _ in range(words):
        out.append(rng.choice(_WORDS))
        if rng.random() < 0.06:
            out.append(rng.choice(_ENTITIES))
    return " ".join(out).capitalize() + "."


def product_html(rng: random.Random, size: int) -> str:
    """A scraped product page fragment of about ``size`` bytes: nested blocks, lists, a table,
    entities, inline styles and scripts, comments and long attribute values."""
    parts = [
        '<div class="product-description" data-tracking="'
        + "x" * rng.randint(50, 400)
        + '"><style type="text/css">.pd{margin:0 auto;font:13px/1.4 Arial}'
        + ".pd li{list-style:disc}" * rng.randint(1, 8)
        + "</style>"
    ]
    size_now = sum(map(len, parts))
    while size_now < size:
        kind = rng.randrange(6)
        if kind == 0:
            block = f"<p>{_sentence(rng, rng.randint(8, 40))} <b>{_sentence(rng, 4)}</b></p>"
        elif kind == 1:
            items = "".join(
                f"<li><span>{_sentence(rng, rng.randint(3, 12))}</span></li>"
                for _ in range(rng.randint(2, 8))
            )
            block = f'<ul class="features">{items}</ul>'
        elif kind == 2:
            rows = "".join(
                f"<tr><td>{rng.choice(_WORDS)}</td><td>{rng.randint(1, 999)} &times; "
                f"{rng.randint(1, 99)}&quot;</td></tr>"
                for _ in range(rng.randint(2, 6))
            )
            block = f"<table><tbody>{rows}</tbody></table>"
        elif kind == 3:
            block = (
                '<script type="text/javascript">var s={sku:'
                + str(rng.randint(1, 10**9))
                + "};window.dataLayer=window.dataLayer||[];dataLayer.push(s);"
                + "/* tracking */" * rng.randint(1, 20)
                + "</script>"
            )
        elif kind == 4:
            block = f"<!-- {_sentence(rng, rng.randint(3, 30))} -->"
        else:
            block = (
                f"<div><div><h3>{_sentence(rng, 3)}</h3><div><i>{_sentence(rng, 10)}</i>"
                f"<br/>{_sentence(rng, rng.randint(5, 25))}</div></div></div>"
            )
        parts.append(block)
        size_now += len(block)
    parts.append("</div>")
    return "".join(parts)


def write_real_dataset(root: Path, n: int, per_query: int = 1) -> None:
    """``n`` rows of a product-search CSV with the ``crowdflower_example`` columns, the same
    every time: HTML descriptions of 1–20 KB, one row in :data:`DUPLICATE_EVERY` a copy of an
    earlier row's query, title and description under a new id. ``per_query`` above 1: rows
    come in runs of that many that share their query (each run's query drawn from its own
    seed), as a search log's results of one query do; 1 keeps the rows as they always were."""
    import csv

    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(30)
    rows: list[tuple[str, str, str]] = []
    with (root / "train.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "query", "product_title", "product_description", "median_relevance"])
        for i in range(n):
            if rows and i % DUPLICATE_EVERY == DUPLICATE_EVERY - 1:
                query, title, description = rows[rng.randrange(len(rows))]
                if per_query > 1:  # a copy of a listing, shown for this run's query
                    query = _shared_query(i // per_query)
            else:
                if per_query > 1:
                    query = _shared_query(i // per_query)
                else:
                    query = f"{COLOURS[i % 5]} {rng.choice(_WORDS)} {KINDS[(i // 5) % 5]}"
                title = f"{_sentence(rng, rng.randint(4, 12))} #{i}"
                description = product_html(rng, rng.randint(1_000, 20_000))
                rows.append((query, title, description))
            writer.writerow([i, query, title, description, 1 + i % 4])


def _shared_query(number: int) -> str:
    """The query of the ``number``-th run of rows that share one (:func:`write_real_dataset`)."""
    word = random.Random(f"query {number}").choice(_WORDS)
    return f"{COLOURS[number % 5]} {word} {KINDS[(number // 5) % 5]}"


def _write_images(folder: Path, count: int) -> None:
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        image = Image.new("RGB", (640, 480), (40 * (i % 6), 90, 200 - 30 * (i % 5)))
        draw = ImageDraw.Draw(image)
        for j in range(12):
            x = (i * 37 + j * 53) % 600
            draw.ellipse((x, j * 35, x + 60, j * 35 + 40), fill=(j * 20, 255 - j * 20, i % 255))
        image.save(folder / f"{i}.jpg", quality=90)


# --- one run ------------------------------------------------------------------------------------


def sweep_command(
    cell: Cell, data: Path, work: Path, base_url: str, cache: Path, model: str = "gpt4o_mini"
) -> list[str]:
    """The measured command; ``model`` is one of conf/model's (an OpenAI or Anthropic one:
    the loopback server speaks both, and an Anthropic judge drops the base URL's ``/v1``)."""
    modality = "image" if cell.modality == "image" else "text"
    if cell.modality == "real":
        dataset = ["dataset=crowdflower_example", f"dataset.path={data}"]
    else:
        dataset = ["dataset=demo_fashion", f"dataset.path={data}", "dataset.annotators=[a,b]"]
    return [
        sys.executable,
        "-m",
        "mmjudge.sweep",
        f"model={model}",
        f"model.base_url={base_url}",
        f"runner.concurrency={cell.concurrency}",
        f"modality={modality}",
        *dataset,
        "runner.progress=false",
        # A real-shaped cell runs as a user's sweep does: its report built at the end.
        f"report.build={'true' if cell.modality == 'real' else 'false'}",
        f"paths.response_cache={cache}",
        f"paths.image_cache={work / 'images'}",
        f"paths.prepared_cache={cache.parent / 'prepared'}",
        f"paths.results={work / 'results'}",
        f"paths.reports={work / 'reports'}",
    ]


class RowWatcher:
    """Samples how many lines the run's ``judgments.jsonl`` has, every few milliseconds."""

    def __init__(self, results: Path) -> None:
        self.results = results
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        path: Path | None = None
        lines, offset = 0, 0
        while not self._stop.is_set():
            if path is None:
                found = list(self.results.glob("runs/*/judgments.jsonl"))
                path = found[0] if found else None
            if path is not None:
                with path.open("rb") as handle:
                    handle.seek(offset)
                    chunk = handle.read()
                complete = chunk.rfind(b"\n") + 1
                offset += complete
                added = chunk[:complete].count(b"\n")
                if added:
                    lines += added
                    self.samples.append((time.perf_counter(), lines))
            time.sleep(0.005)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def steady_rate(self, n: int) -> float:
        """Rows per second between the 10th and the 90th percentile of rows: the slope of the
        least-squares line through the samples taken in that window.

        With many calls in flight and a fixed latency, rows come in waves (a round of calls
        returns together); a rate from the window's two ends alone moves by up to half a
        wave with where those ends fall, the fitted slope much less.
        """
        return steady_slope(self.samples, n)


def steady_slope(samples: list[tuple[float, int]], n: int) -> float:
    """The least-squares slope of rows over time for the samples from the first with at
    least ``n // 10`` rows to the first with at least ``9 * n // 10``."""
    low = next(i for i, (_t, lines) in enumerate(samples) if lines >= n // 10)
    high = next(i for i, (_t, lines) in enumerate(samples) if lines >= (9 * n) // 10)
    window = samples[low : high + 1]
    if len(window) < 2:
        return float("nan")
    times = [t for t, _lines in window]
    rows = [lines for _t, lines in window]
    return statistics.linear_regression(times, rows).slope


def sweep_env() -> dict[str, str]:
    """The environment of the measured command: the caller's, with the benchmark's key, and
    Python's bytecode cache on as on a user's machine. (``PYTHONDONTWRITEBYTECODE=1`` in the
    caller's environment would have every start compile mmjudge's own modules again, about
    0.1 s that no user pays after their first run.)"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["OPENAI_API_KEY"] = env["ANTHROPIC_API_KEY"] = "benchmark-key"
    return env


def timed_sweep(command: list[str]) -> tuple[int, str, Any]:
    """Run the sweep command to its end (the benchmark's key in its environment): its exit
    code, its stderr and its resource usage (``os.wait4``'s: the command's, with the children
    it reaped)."""
    process = subprocess.Popen(
        command, cwd=ROOT, env=sweep_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    stderr = process.stderr.read().decode(errors="replace")
    _pid, status, usage = os.wait4(process.pid, 0)
    return os.waitstatus_to_exitcode(status), stderr, usage


def run_once(
    cell: Cell, data: Path, work: Path, server: Server, cache: Path, n: int, model: str
) -> dict:
    """One sweep through the CLI; its figures."""
    command = sweep_command(cell, data, work, server.base_url, cache, model)
    watcher = RowWatcher(work / "results")
    started = time.perf_counter()
    returncode, stderr, usage = timed_sweep(command)
    wall = time.perf_counter() - started
    watcher.stop()
    if returncode != 0:
        raise SystemExit(f"sweep failed ({returncode}):\n{stderr}")
    summary = json.loads(next((work / "results").glob("runs/*/summary.json")).read_text())
    if summary["n_judgments"] != n or summary["n_errors"]:
        raise SystemExit(f"expected {n} judgments without errors, got {summary}")
    first_row = watcher.samples[0][0] - started if watcher.samples else float("nan")
    calls = int(summary["calls"]["api_calls"])
    return {
        "wall": wall,
        "rate": n / wall,
        "steady": watcher.steady_rate(n) if calls else float("nan"),
        "cpu_ms": (usage.ru_utime + usage.ru_stime) / n * 1000,
        "rss_mb": usage.ru_maxrss / 1024,
        "first_call": first_row - server.latency,
        "calls": calls,
        "first_line": stderr.splitlines()[0] if stderr else "",
    }


# --- the table ----------------------------------------------------------------------------------


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}; load average {load}"
    )


def median(runs: list[dict], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def measure_cell(
    cell: Cell, n: int, repeat: int, rerun: bool, model: str
) -> list[tuple[str, list[dict]]]:
    """Medians for one cell: text cells once per repeat, image cells cold then warm."""
    rows: dict[str, list[dict]] = {}
    server = Server(cell.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="mmjudge-e2e-") as tmp:
            data = Path(tmp) / "data"
            if cell.modality == "real":
                write_real_dataset(data, n)
            else:
                write_dataset(data, n, cell.modality == "image")
            for attempt in range(repeat):
                work = Path(tmp) / f"run{attempt}"
                cache = work / "responses.sqlite"
                name = "image, cold" if cell.modality == "image" else cell.modality
                figures = run_once(cell, data, work, server, cache, n, model)
                rows.setdefault(name, []).append(figures)
                if cell.modality == "image":
                    warm = Path(tmp) / f"warm{attempt}"
                    (warm / "images").parent.mkdir(parents=True)
                    os.rename(work / "images", warm / "images")
                    fresh_cache = warm / "responses.sqlite"
                    figures = run_once(cell, data, warm, server, fresh_cache, n, model)
                    rows.setdefault("image, warm", []).append(figures)
                if cell.modality == "real":
                    # Another cell of the same sweep: no answers cached yet, the items
                    # prepared by the first.
                    later = Path(tmp) / f"later{attempt}"
                    later.mkdir()
                    shutil.copytree(work / "prepared", later / "prepared")
                    figures = run_once(
                        cell, data, later, server, later / "responses.sqlite", n, model
                    )
                    rows.setdefault("real, items prepared", []).append(figures)
                if rerun and cell.modality != "image":
                    again = Path(tmp) / f"again{attempt}"
                    figures = run_once(cell, data, again, server, cache, n, model)
                    rows.setdefault(f"{cell.modality}, rerun from cache", []).append(figures)
    finally:
        server.close()
    return list(rows.items())


def print_row(name: str, cell: Cell, n: int, runs: list[dict]) -> None:
    rate, steady = median(runs, "rate"), median(runs, "steady")
    calls = median(runs, "calls")
    # A rerun from the cache makes no calls: no steady state, no first call.
    steady_text = f"{steady:.1f} ({steady / cell.ideal:.1%})" if calls else "–"
    first = f"{median(runs, 'first_call'):.2f} s" if calls else "–"
    # ... nor a share of the calls' ideal rate.
    rate_text = f"{rate:.1f} ({rate / cell.ideal:.1%})" if calls else f"{rate:.1f}"
    print(
        f"| {name} | {n:,} | {cell.concurrency} × {cell.latency:g} s | {cell.ideal:.0f} | "
        f"{rate_text} | {steady_text} | "
        f"{median(runs, 'cpu_ms'):.2f} ms | {median(runs, 'rss_mb'):.0f} MB | "
        f"{first} | {median(runs, 'wall'):.1f} s | {calls:.0f} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", nargs="+", default=list(CELLS), help="modality:conc:latency")
    parser.add_argument("--n-text", type=int, default=10_000, help="items in text cells")
    parser.add_argument("--n-image", type=int, default=2_000, help="items in image cells")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (medians shown)")
    parser.add_argument("--no-rerun", action="store_true", help="skip the rerun from cache")
    parser.add_argument(
        "--no-server-check",
        action="store_true",
        help="skip measuring the loopback server alone (benchmarks/ablate.py runs it once)",
    )
    parser.add_argument(
        "--model", default="gpt4o_mini", help="the judge (conf/model: an OpenAI or Anthropic one)"
    )
    args = parser.parse_args()
    cells = [Cell.parse(text) for text in args.cells]
    print(f"command: python benchmarks/e2e.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"machine: {machine()}")
    checked = {} if args.no_server_check else {(c.concurrency, c.latency): c for c in cells}
    for cell in checked.values():
        capacity = server_capacity(cell)
        print(
            f"loopback server alone: {capacity:.0f} answers/s at {cell.concurrency} × "
            f"{cell.latency:g} s ({capacity / cell.ideal:.1%} of the ideal {cell.ideal:.0f}/s)",
            flush=True,
        )
    print(
        "| cell | judgments | in flight × latency | ideal/s | end to end/s | steady/s | "
        "harness CPU/judgment | peak RSS | first call | wall | calls |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for cell in cells:
        n = args.n_image if cell.modality == "image" else args.n_text
        for name, runs in measure_cell(cell, n, args.repeat, not args.no_rerun, args.model):
            print_row(name, cell, n, runs)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
