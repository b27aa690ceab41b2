"""What a run costs besides its calls, through the command a user types
(``python -m mmjudge.sweep``): the time to its first call, a rerun entirely from the response
cache, and the peak memory of a large cell.

- **first call**: seconds from the command's start until its first request reaches the
  loopback server (a server of its own, which prints when that happens), and the CPU the
  process used until then; the process is stopped there. The cell has ``--n-text`` items and
  an empty response cache, so the dataset check and everything before the call is included.
- **rerun from cache**: the same cell run to the end once (filling the response cache), then
  again in a new run folder: wall time, CPU time and calls (0 expected).
- **peak RSS**: a ``--n-peak``-item text cell run to the end (summary included) with the
  lexical judge (local, no server), or with ``--peak-judge openai`` against the loopback
  server; the process's peak resident memory.

Each figure is the median of ``--repeat`` runs. The machine and its load average are printed
beside the table: on a machine shared with other jobs wall times stretch, while CPU times move
less, so both are shown.

    python benchmarks/fixed_cost.py
    python benchmarks/fixed_cost.py --repeat 5 --n-text 10000 --n-peak 100000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e import (
    ROOT,
    Cell,
    Server,
    machine,
    sweep_command,
    sweep_env,
    timed_sweep,
    write_dataset,
)

#: Seconds the loopback server waits before each answer here: short, so the first row follows
#: the first call closely and the cache fills quickly.
LATENCY = 0.02
#: Calls in flight while the cache is filled.
CONCURRENCY = 64


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process, from ``/proc``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_call(data: Path, work: Path) -> dict[str, float]:
    """Start the sweep with an empty cache against a server of its own; stop it once that
    server has received its first request."""
    server = Server(LATENCY, announce_first=True)
    try:
        cell = Cell("text", CONCURRENCY, LATENCY)
        command = sweep_command(cell, data, work, server.base_url, work / "responses.sqlite")
        started = time.time()
        process = subprocess.Popen(
            command, cwd=ROOT, env=sweep_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        cpu, arrived = float("nan"), None
        while arrived is None and process.poll() is None:
            time.sleep(0.002)
            with contextlib.suppress(OSError, IndexError):
                cpu = _cpu_seconds(process.pid)
            arrived = server.first_request_at()
        process.send_signal(signal.SIGKILL)
        process.wait()
    finally:
        server.close()
    if arrived is None:
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        raise SystemExit(f"the sweep made no call:\n{stderr}")
    return {"wall": arrived - started, "cpu": cpu}


def full_run(command: list[str], results: Path) -> dict[str, float]:
    """Run the sweep to its end; wall, CPU, peak RSS and calls."""
    started = time.perf_counter()
    returncode, stderr, usage = timed_sweep(command)
    wall = time.perf_counter() - started
    if returncode != 0:
        raise SystemExit(f"sweep failed:\n{stderr}")
    summary = json.loads(next(results.glob("runs/*/summary.json")).read_text())
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "calls": float(summary["calls"]["api_calls"]),
        "judgments": float(summary["n_judgments"]),
    }


def lexical_command(data: Path, work: Path) -> list[str]:
    """The sweep of a text cell judged by the local lexical judge."""
    return [
        sys.executable,
        *("-m", "mmjudge.sweep", "model=lexical", "modality=text", "dataset=demo_fashion"),
        *(f"dataset.path={data}", "dataset.annotators=[a,b]", "runner.progress=false"),
        *("report.build=false", f"paths.response_cache={work / 'responses.sqlite'}"),
        f"paths.image_cache={work / 'images'}",
        f"paths.results={work / 'results'}",
        f"paths.reports={work / 'reports'}",
    ]


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def measure_text(tmp: Path, n: int, repeat: int) -> tuple[list[dict], list[dict]]:
    """First-call and rerun figures for an ``n``-item text cell."""
    data = tmp / "text"
    write_dataset(data, n, images=False)
    cell = Cell("text", CONCURRENCY, LATENCY)
    firsts, reruns = [], []
    server = Server(LATENCY)
    try:
        for attempt in range(repeat):
            firsts.append(first_call(data, tmp / f"first{attempt}"))
        cache = tmp / "filled" / "responses.sqlite"
        filled = tmp / "filled"
        full_run(sweep_command(cell, data, filled, server.base_url, cache), filled / "results")
        for attempt in range(repeat):
            work = tmp / f"rerun{attempt}"
            command = sweep_command(cell, data, work, server.base_url, cache)
            reruns.append(full_run(command, work / "results"))
    finally:
        server.close()
    return firsts, reruns


def measure_peak(tmp: Path, n: int, repeat: int, judge: str) -> list[dict]:
    """Peak RSS of an ``n``-item text cell run to its end."""
    data = tmp / "peak"
    write_dataset(data, n, images=False)
    runs = []
    server = Server(0.0) if judge == "openai" else None
    try:
        for attempt in range(repeat):
            work = tmp / f"peak{attempt}"
            if server is not None:
                cell = Cell("text", 256, 0.0)
                cache = work / "responses.sqlite"
                command = sweep_command(cell, data, work, server.base_url, cache)
            else:
                command = lexical_command(data, work)
            runs.append(full_run(command, work / "results"))
    finally:
        if server is not None:
            server.close()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-text", type=int, default=10_000, help="items of the text cell")
    parser.add_argument("--n-peak", type=int, default=100_000, help="items of the large cell")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (medians)")
    parser.add_argument("--peak-judge", choices=("lexical", "openai"), default="lexical")
    parser.add_argument("--skip-peak", action="store_true", help="leave out the large cell")
    args = parser.parse_args()
    print(f"command: python benchmarks/fixed_cost.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"machine: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mmjudge-fixed-") as name:
        tmp = Path(name)
        firsts, reruns = measure_text(tmp, args.n_text, args.repeat)
        peaks = []
        if not args.skip_peak:
            peaks = measure_peak(tmp, args.n_peak, args.repeat, args.peak_judge)
    print("| what | items | wall | CPU | peak RSS | calls |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(
        f"| first call leaves | {args.n_text:,} | {_median(firsts, 'wall'):.2f} s | "
        f"{_median(firsts, 'cpu'):.2f} s | – | – |"
    )
    print(
        f"| rerun from cache, new run folder | {args.n_text:,} | {_median(reruns, 'wall'):.2f} s | "
        f"{_median(reruns, 'cpu'):.2f} s | {_median(reruns, 'rss_mb'):.0f} MB | "
        f"{_median(reruns, 'calls'):.0f} |"
    )
    if peaks:
        print(
            f"| whole cell, {args.peak_judge} judge | {args.n_peak:,} | "
            f"{_median(peaks, 'wall'):.1f} s | {_median(peaks, 'cpu'):.1f} s | "
            f"{_median(peaks, 'rss_mb'):.0f} MB | {_median(peaks, 'calls'):.0f} |"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
