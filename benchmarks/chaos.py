"""Chaos run: the real command line against the loopback server, with kills and faults.

Every figure comes from running ``python -m mmjudge.sweep`` (OpenAI SDK, ``model=gpt4o``) in
subprocesses against the loopback server of ``tests/fixtures/loopback_server.py``, which runs
in this process and records every request it receives. It prints:

- **kills**: SIGKILLs at random moments while a cell runs, each followed by a resume in the
  same run folder, then one run to the end, at 4 and at 32 calls in flight: rows lost, rows
  duplicated, and requests sent twice as the server saw them against those mmjudge counted as
  resent (the request had left) and as maybe resent (killed between marking the send and
  recording that it had left: the server may or may not have seen it);
- **timeouts**: 8 items against a server that answers in 3 s, with ``runner.timeout_s=2`` and
  ``runner.max_retries=1``: requests the server received against the calls mmjudge paid for
  and those it counts as possibly billed (sent, then given up);
- **faults**: a cell under random 429s, 500s, hanging calls, dropped connections and
  malformed bodies: how many of each were injected and how the cell ended;
- **fail fast**: seconds until the command gives up on an endpoint that cannot work
  (nothing listening, only 500s, no answer at all), start-up included;
- **two processes on one cell**: duplicate calls when two runs of one cell share the cache;
- **secrets**: files written by all these runs that hold the API key they were given.

    python benchmarks/chaos.py                      # 20 kills on a 240-item cell
    python benchmarks/chaos.py --kills 30 --seed 2 --keep /tmp/chaos
    python benchmarks/chaos.py --kills 6 --items 2000 --in-flight 32
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.loopback_server import (  # noqa: E402
    DEFAULT_TEXT,
    OPENAI_PATH,
    Behaviour,
    FaultInjector,
    LoopbackServer,
    RecordedRequest,
)

#: The key every run is given; no file any run writes may hold it.
KEY = "sk-chaos-" + secrets.token_hex(20)
FAULT_RATES = {
    "rate_limit": 0.08,
    "server_error": 0.08,
    "hang": 0.03,
    "drop": 0.05,
    "malformed": 0.05,
}


#: Items in the shipped dataset the runs judge; a larger ``--items`` writes a synthetic one.
SHIPPED_ITEMS = 240


def write_dataset(folder: Path, n: int) -> list[str]:
    """``n`` text items in mmjudge's JSONL format, each with its own prompt; the settings
    that point a run at them."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "items.jsonl").open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "query_id": f"q{i // 8}",
                "query": f"item {i // 8} in red",
                "result_id": f"r{i}",
                "fields": {"name": f"Item {i}", "description": f"A red garment, number {i}."},
                "labels": {"a": i % 3, "b": (i // 3) % 3},
            }
            out.write(json.dumps(row) + "\n")
    return [f"dataset.path={folder}", "dataset.annotators=[a,b]"]


class Harness:
    """Builds and runs sweep commands in a scratch folder against one loopback server."""

    def __init__(self, work: Path, server: LoopbackServer, items: int) -> None:
        self.work = work
        self.server = server
        self.items = items
        self.dataset = write_dataset(work / "data", items) if items > SHIPPED_ITEMS else []
        self.env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        self.env["OPENAI_API_KEY"] = KEY

    def command(
        self,
        name: str,
        *args: str,
        base_url: str | None = None,
        items: int | None = None,
        cache: str | None = None,
    ) -> list[str]:
        return [
            sys.executable,
            "-m",
            "mmjudge.sweep",
            "model=gpt4o",
            f"model.base_url={base_url or self.server.openai_base_url}",
            f"dataset.limit={items or self.items}",
            f"paths.results={self.work / 'results'}",
            f"paths.reports={self.work / 'reports'}",
            f"paths.response_cache={self.work / 'cache' / (cache or name)}.sqlite",
            f"paths.image_cache={self.work / 'images'}",
            f"hydra.run.dir={self.run_dir(name)}",
            "runner.progress=false",
            *self.dataset,
            *args,
        ]

    def run_dir(self, name: str) -> Path:
        return self.work / "results" / "runs" / name

    def start(self, name: str, *args: str, **options: Any) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(name, *args, **options),
            cwd=self.work,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, name: str, *args: str, **options: Any) -> tuple[int, float, str]:
        """Exit code, wall seconds and stderr of one command."""
        started = time.monotonic()
        process = self.start(name, *args, **options)
        _, stderr = process.communicate(timeout=900)
        return process.returncode, time.monotonic() - started, stderr


def rows(run_dir: Path) -> list[dict[str, Any]]:
    out = []
    for line in (run_dir / "judgments.jsonl").read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "summary.json").read_text(encoding="utf-8")))


def sent_twice(server: LoopbackServer) -> int:
    """Requests the server received more than once (by their exact messages)."""
    seen = Counter(json.dumps(r.body["messages"]) for r in server.requests_to(OPENAI_PATH))
    return sum(n - 1 for n in seen.values())


def slow_answers(rng: random.Random, low: float, high: float) -> Any:
    def respond(_request: RecordedRequest) -> Behaviour:
        return Behaviour.reply(DEFAULT_TEXT, latency_s=rng.uniform(low, high))

    return respond


def wait_for(server: LoopbackServer, n: int, process: subprocess.Popen[str]) -> bool:
    """Wait until the server has seen ``n`` requests; False if the process ended first."""
    while server.request_count < n:
        if process.poll() is not None:
            return False
        time.sleep(0.01)
    return True


def kills(h: Harness, n: int, rng: random.Random, in_flight: int = 4) -> dict[str, Any]:
    """SIGKILL a cell ``n`` times at random moments, resuming in place, then finish it, with
    ``in_flight`` calls at a time."""
    h.server.reset()
    h.server.responder = slow_answers(rng, 0.05, 0.6)
    name = f"kills{in_flight}"
    concurrency = f"runner.concurrency={in_flight}"
    killed = 0
    for _ in range(n):
        process = h.start(name, concurrency)
        if not wait_for(h.server, h.server.request_count + 1, process):
            break  # the cell finished before this kill
        time.sleep(rng.uniform(0.0, 1.2))
        if process.poll() is not None:
            break
        process.send_signal(signal.SIGKILL)
        process.wait()
        killed += 1
    code, _, stderr = h.run(name, concurrency)
    found = rows(h.run_dir(name))
    keys = [(r["query_id"], r["result_id"]) for r in found]
    final = summary(h.run_dir(name))
    return {
        "in_flight": in_flight,
        "kills": killed,
        "final_exit": code,
        "status": final["status"],
        "rows_lost": h.items - len(set(keys)),
        "rows_duplicated": len(keys) - len(set(keys)),
        "requests_sent_twice_seen": sent_twice(h.server),
        "requests_resent_counted": final["cost"]["resent_requests"],
        "resent_usd": final["cost"]["resent_usd"],
        "requests_maybe_resent_counted": final["cost"].get("possibly_billed_requests", 0),
        "maybe_resent_usd": final["cost"].get("possibly_billed_usd", 0.0),
        "requests": h.server.request_count,
        "error": stderr.strip().splitlines()[-1] if code else "",
    }


def timeouts(h: Harness) -> dict[str, Any]:
    """8 items whose every answer comes after the runner's limit: each attempt is given up
    after it reached the server, which providers bill."""
    h.server.reset()
    h.server.set_default(Behaviour.reply(DEFAULT_TEXT, latency_s=3.0))
    code, seconds, stderr = h.run(
        "timeouts", "runner.timeout_s=2", "runner.max_retries=1", "report.build=false", items=8
    )
    seen = len(h.server.requests_to(OPENAI_PATH))
    h.server.reset()
    final = summary(h.run_dir("timeouts"))
    calls = final.get("calls") or {}
    cost = final["cost"]
    return {
        "exit": code,
        "status": final["status"],
        "requests_seen": seen,
        "paid_calls": calls.get("api_calls", 0),
        "possibly_billed": cost.get("possibly_billed_requests", 0),
        "possibly_billed_usd": cost.get("possibly_billed_usd", 0.0),
        "spent_usd": cost["spent_usd"],
        "seconds": seconds,
        "error": stderr.strip().splitlines()[-1] if code else "",
    }


def faults(h: Harness, seed: int) -> dict[str, Any]:
    """A cell under random faults, with retries enough to get through them."""
    h.server.reset()
    injector = FaultInjector(FAULT_RATES, seed=seed, hang_s=30)
    h.server.responder = injector
    code, seconds, stderr = h.run(
        "faults",
        "runner.concurrency=8",
        "runner.timeout_s=2",
        "runner.max_retries=8",
        "runner.backoff_base_s=0.05",
        "runner.backoff_max_s=0.5",
    )
    final = summary(h.run_dir("faults"))
    return {
        "exit": code,
        "status": final["status"],
        "rows": final["n_judgments"],
        "errors": final["n_errors"],
        "injected": dict(injector.counts),
        "requests": h.server.request_count,
        "seconds": seconds,
        "error": stderr.strip().splitlines()[-1] if code else "",
    }


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fail_fast(h: Harness) -> dict[str, dict[str, Any]]:
    """Seconds until a cell that cannot work stops, for three ways of not working."""
    out = {}
    h.server.reset()
    h.server.responder = lambda _request: DEFAULT_TEXT
    code, baseline, _ = h.run("baseline", "report.build=false", items=1)
    out["one call that works (start-up and exit)"] = {"exit": code, "seconds": baseline}
    url = f"http://127.0.0.1:{closed_port()}/v1"
    code, seconds, stderr = h.run("refused", base_url=url)
    out["nothing listening"] = {"exit": code, "seconds": seconds, "line": _breaker(stderr)}
    h.server.reset()
    h.server.set_default(Behaviour.server_error(500))
    code, seconds, stderr = h.run("only500")
    out["only 500s"] = {"exit": code, "seconds": seconds, "line": _breaker(stderr)}
    h.server.reset()
    h.server.set_default(Behaviour.hang(60))
    code, seconds, stderr = h.run("silent", "runner.timeout_s=5")
    out["no answer, runner.timeout_s=5"] = {
        "exit": code,
        "seconds": seconds,
        "line": _breaker(stderr),
    }
    h.server.reset()
    return out


def _breaker(stderr: str) -> str:
    return next((line for line in stderr.splitlines() if "calls in a row" in line), "")


def two_processes(h: Harness, rng: random.Random) -> dict[str, Any]:
    """Two runs of one cell at once, sharing one response cache."""
    h.server.reset()
    h.server.responder = slow_answers(rng, 0.02, 0.2)
    processes = [
        h.start(name, "runner.concurrency=8", cache="shared") for name in ("twin_a", "twin_b")
    ]
    codes = []
    for process in processes:
        process.communicate(timeout=900)
        codes.append(process.returncode)
    return {
        "exits": codes,
        "requests": h.server.request_count,
        "duplicate_calls": sent_twice(h.server),
        "rows": [len(rows(h.run_dir(name))) for name in ("twin_a", "twin_b")],
    }


def files_holding(root: Path, secret: str) -> tuple[int, int]:
    """How many files below ``root`` hold ``secret`` (as bytes anywhere in them), of all."""
    needle = secret.encode("utf-8")
    holding = total = 0
    for path in _files(root):
        total += 1
        if needle in path.read_bytes():
            holding += 1
    return holding, total


def _files(root: Path) -> Iterator[Path]:
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            yield path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kills", type=int, default=20, help="SIGKILLs to send (default 20)")
    parser.add_argument("--items", type=int, default=240, help="items in the cell")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--in-flight",
        type=int,
        nargs="+",
        default=[4, 32],
        help="calls in flight for the kills (default: 4 and 32, one kill series each)",
    )
    parser.add_argument("--keep", type=Path, help="keep the scratch folder here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = args.keep or Path(tempfile.mkdtemp(prefix="mmjudge-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    with LoopbackServer() as server:
        h = Harness(work, server, args.items)
        report = {
            "kills": [kills(h, args.kills, rng, n) for n in args.in_flight],
            "timeouts": timeouts(h),
            "faults": faults(h, args.seed),
            "fail_fast": fail_fast(h),
            "two_processes": two_processes(h, rng),
        }
    holding, total = files_holding(work, KEY)
    report["secrets"] = {"files_holding_the_key": holding, "files_written": total}
    print_report(report, args)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def print_report(report: dict[str, Any], args: argparse.Namespace) -> None:
    f, t, o = report["faults"], report["two_processes"], report["timeouts"]
    print(f"chaos run: {args.items}-item cell, seed {args.seed}")
    for k in report["kills"]:
        print(
            f"kills survived at {k['in_flight']} in flight: {k['kills']} SIGKILLs, then a run to "
            f"the end (exit {k['final_exit']}, {k['status']}): rows lost {k['rows_lost']}, "
            f"rows duplicated {k['rows_duplicated']}, requests sent twice "
            f"{k['requests_sent_twice_seen']} (seen by the server) / "
            f"{k['requests_resent_counted']} resent (counted by mmjudge, "
            f"${k['resent_usd']:.4f}) + {k['requests_maybe_resent_counted']} maybe resent "
            f"(possibly billed, ${k['maybe_resent_usd']:.4f})"
        )
    print(
        f"timeouts: 8 items, answers in 3 s, runner.timeout_s=2, max_retries=1 -> exit "
        f"{o['exit']}, {o['status']}: the server received {o['requests_seen']} requests; "
        f"mmjudge counts {o['paid_calls']} paid calls (${o['spent_usd']:.4f}) and "
        f"{o['possibly_billed']} possibly billed (+${o['possibly_billed_usd']:.4f})"
    )
    injected = ", ".join(f"{n} {name}" for name, n in f["injected"].items())
    print(
        f"faults survived: {injected} injected over {f['requests']} requests -> exit "
        f"{f['exit']}, {f['status']}, {f['rows']} rows, {f['errors']} errors "
        f"({f['seconds']:.1f} s)"
    )
    for name, found in report["fail_fast"].items():
        print(f"time to stop, {name}: {found['seconds']:.1f} s (exit {found['exit']})")
    print(
        f"two processes on one cell: {t['duplicate_calls']} duplicate calls, "
        f"{t['requests']} requests for {args.items} items, rows {t['rows']}, exits {t['exits']}"
    )
    s = report["secrets"]
    print(
        f"secrets: {s['files_holding_the_key']} of {s['files_written']} files written hold the "
        "API key the runs were given"
    )
    errors = [k["error"] for k in report["kills"]] + [f["error"]]
    if any(errors):
        print(f"last error lines: {' | '.join(e or '-' for e in errors)}")


if __name__ == "__main__":
    main()
