"""Throughput of the judging pipeline against a loopback provider with a fixed latency.

Pushes N judgments through ``mmjudge.engine.cell.run_cell`` (dataset streaming, prompt rendering,
the runner, the response cache, record writing and the summary) with the real OpenAI SDK
client, against the loopback server running in its own process, and prints:

- achieved judgments per second against the ideal (concurrency ÷ latency), both end to end
  (start-up, the dataset check and the summary included) and in the steady state (between the
  10th and the 90th percentile of completions);
- harness CPU milliseconds per judgment (this process only; the server is another process);
- peak RSS of the process.

Each measurement runs in a fresh subprocess so peak RSS belongs to that run alone.

    python benchmarks/throughput.py                       # the standard grid, 3 runs each
    python benchmarks/throughput.py --n 10000 --concurrency 64 --latency 0.2 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRID = [(10_000, 64, 0.2), (10_000, 256, 1.0), (2_000, 64, 0.2), (20_000, 64, 0.2)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fixtures.loopback_server",
            "--port",
            str(port),
            "--latency",
            str(latency),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    server.stdout.readline()  # "serving on ..."
    return server, port


def write_dataset(root: Path, n: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    colours = ["red", "navy", "black", "white", "green"]
    kinds = ["t-shirt", "dress", "jacket", "trousers", "skirt"]
    with (root / "items.jsonl").open("w", encoding="utf-8") as out:
        for i in range(n):
            colour, kind = colours[i % 5], kinds[(i // 5) % 5]
            row = {
                "query_id": f"q{i // 8}",
                "query": f"{colour} {kind}",
                "result_id": f"r{i}",
                "fields": {
                    "name": f"Item {i} {kind}",
                    "colour": colours[(i * 7) % 5],
                    "description": f"A {colours[(i * 3) % 5]} {kind} in soft cotton, item {i}.",
                },
                "labels": {"a": i % 3, "b": (i // 3) % 3},
            }
            out.write(json.dumps(row) + "\n")


def measure(n: int, concurrency: int, latency: float) -> dict[str, float]:
    """One run in this process (called in a fresh subprocess by ``main``)."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    import mmjudge.sweep  # noqa: F401  (registers the schema and resolvers)
    from mmjudge.engine import progress as runner
    from mmjudge.engine.cell import run_cell

    finished: list[float] = []
    original_update = runner.Progress.update

    def timed_update(self: runner.Progress, usd: float) -> None:
        finished.append(time.perf_counter())
        original_update(self, usd)

    runner.Progress.update = timed_update  # type: ignore[method-assign]

    server, port = start_server(latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data"
            write_dataset(data, n)
            os.environ["OPENAI_API_KEY"] = "benchmark-key"
            overrides = [
                "model=gpt4o_mini",
                f"model.base_url=http://127.0.0.1:{port}/v1",
                f"model.max_concurrency={concurrency}",
                f"runner.concurrency={concurrency}",
                "runner.progress=false",
                f"paths.response_cache={tmp}/cache.sqlite",
                f"paths.image_cache={tmp}/images",
                f"dataset.path={data}",
                "dataset.annotators=[a,b]",
                "modality=text",
            ]
            with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
                cfg = compose(config_name="config", overrides=overrides)
            OmegaConf.set_readonly(cfg, False)
            cpu0, wall0 = time.process_time(), time.perf_counter()
            summary = run_cell(cfg, Path(tmp) / "run")
            wall = time.perf_counter() - wall0
            cpu = time.process_time() - cpu0
    finally:
        server.terminate()
        server.wait(10)
    assert summary["n_judgments"] == n, summary["n_judgments"]
    low, high = finished[n // 10], finished[(9 * n) // 10]
    steady = ((9 * n) // 10 - n // 10) / (high - low)
    assert summary["n_errors"] == 0, summary["calls"]
    return {
        "rate": n / wall,
        "steady": steady,
        "ideal": concurrency / latency,
        "cpu_ms": cpu / n * 1000,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "wall": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int)
    parser.add_argument("--concurrency", type=int)
    parser.add_argument("--latency", type=float)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.n, args.concurrency, args.latency)))
        return
    grid = [(args.n, args.concurrency, args.latency)] if args.n else GRID
    print(f"command: python benchmarks/throughput.py {' '.join(sys.argv[1:])}".rstrip())
    print(
        f"{'judgments':>9} {'conc':>5} {'latency':>7} {'ideal/s':>8} {'end-to-end/s':>13} "
        f"{'%':>6} {'steady/s':>9} {'%':>6} {'CPU ms/j':>9} {'peak RSS MB':>11}"
    )
    for n, concurrency, latency in grid:
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    "--n",
                    str(n),
                    "--concurrency",
                    str(concurrency),
                    "--latency",
                    str(latency),
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        rate = statistics.median(r["rate"] for r in runs)
        steady = statistics.median(r["steady"] for r in runs)
        ideal = runs[0]["ideal"]
        print(
            f"{n:>9} {concurrency:>5} {latency:>7.2f} {ideal:>8.1f} {rate:>13.1f} "
            f"{rate / ideal:>6.1%} {steady:>9.1f} {steady / ideal:>6.1%} "
            f"{statistics.median(r['cpu_ms'] for r in runs):>9.2f} "
            f"{statistics.median(r['rss_mb'] for r in runs):>11.0f}"
        )


if __name__ == "__main__":
    main()
