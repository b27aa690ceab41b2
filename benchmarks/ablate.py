"""What each piece of the harness's speed machinery saves: the end-to-end benchmark with all of
it, and with each piece switched off in turn, through the command a user types.

Each variant is a copy of the package with one small edit that switches a piece off (listed in
:data:`PIECES`; the edit is checked to apply, so a piece renamed in the code fails here rather
than being measured as "on"). The copies run ``benchmarks/e2e.py`` in rounds, every variant
once per round, so a change in the machine's load reaches all of them alike; the table shows
the median over the rounds of each figure, and each piece's difference from all-on:

- end to end and steady, as shares of the ideal rate (``e2e.py``'s figures);
- the first call: seconds from the command's start to its first answer, less the latency;
- the rerun from the response cache in a new run folder (wall seconds);
- harness CPU per judgment.

A piece earns its place when, switched off, the end-to-end rate falls by 2% of the ideal or
more, or the first call or the rerun takes 0.3 s or more longer.

    python benchmarks/ablate.py                       # text:64:0.2, 3 rounds
    python benchmarks/ablate.py --rounds 5 --cell real:64:0.2 --pieces dataset-check-child
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Piece -> (what it does, [(file, text, replacement)]) that switch it off. ``all`` is the
#: switch that turns every piece off at once (``MMJUDGE_FAST_PATH=0``, see mmjudge/speed).
PIECES: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "all": ("all of it: MMJUDGE_FAST_PATH=0, every call through the SDK's own path", []),
    "fast-request-path": (
        "calls sent through one aiohttp session from the SDK's request template",
        [
            (
                "mmjudge/judges/http.py",
                "and self._speed.on and WireSender.usable(client):",
                "and False and WireSender.usable(client):",
            ),
        ],
    ),
    "uvloop": (
        "uvloop's event loop instead of the standard one",
        [
            (
                "mmjudge/speed/event_loop.py",
                "    try:\n        import uvloop\n    except ImportError:",
                "    try:\n        raise ImportError\n    except ImportError:",
            )
        ],
    ),
    "sdk-warmup": (
        "the judge's SDK imported while the dataset is checked, not at the first call",
        [
            (
                "mmjudge/speed/sdk_warmup.py",
                "            import_module(sdk)",
                "            pass",
            )
        ],
    ),
    "dataset-check-child": (
        "a catalogue checked and prepared in a forked child while the SDK loads",
        [
            (
                "mmjudge/speed/survey_child.py",
                "    if warm is None or feed is None or not _can_fork(items_path, speed):",
                "    if True:",
            )
        ],
    ),
    "loop-pacer": (
        "the loop turns every 2 ms while the runner takes items without waiting",
        [
            (
                "mmjudge/speed/event_loop.py",
                "        if time.monotonic() - self._since >= self.every_s:",
                "        if False:",
            )
        ],
    ),
    "report-child": (
        "a single run's report imported and built by a child forked as the run starts",
        [
            (
                "mmjudge/cli/sweep.py",
                "    ahead = ReportChild.start(_report_builder, speed) if report else None",
                "    ahead = None",
            )
        ],
    ),
    "first-forecast-aside": (
        "the first forecast (the tokenizer's load) on a worker thread",
        [
            (
                "mmjudge/engine/policy.py",
                "            if speed.on:\n                asyncio.get_running_loop()",
                "            if False:\n                asyncio.get_running_loop()",
            )
        ],
    ),
    "quiet-collector": (
        "the garbage collector frozen and its young threshold raised during the calls",
        [
            (
                "mmjudge/speed/collector.py",
                "    if _depth == 1 and speed.on:",
                "    if False:",
            )
        ],
    ),
}


def variant(base: Path, name: str | None) -> Path:
    """A copy of the package and the benchmarks under ``base/name`` with ``name``'s piece off."""
    root = base / (name or "all-on")
    unbuilt = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "mmjudge", root / "mmjudge", ignore=unbuilt)
    shutil.copytree(ROOT / "benchmarks", root / "benchmarks")
    # the loopback server the benchmark runs
    shutil.copytree(ROOT / "tests" / "fixtures", root / "tests" / "fixtures", ignore=unbuilt)
    shutil.copy(ROOT / "tests" / "__init__.py", root / "tests" / "__init__.py")
    if name is None:
        return root
    for file, text, replacement in PIECES[name][1]:
        path = root / file
        source = path.read_text(encoding="utf-8")
        if source.count(text) != 1:
            raise SystemExit(f"{name}: {file} does not hold the text that switches it off")
        edited = source.replace(text, replacement)
        compile(edited, str(path), "exec")  # an edit that breaks the code fails here, at once
        path.write_text(edited, encoding="utf-8")
    return root


ROW = re.compile(r"^\| (?P<name>[^|]+?) \| [\d,]+ \| .*$")


def measure(root: Path, cell: str, n: int) -> dict[str, float]:
    """One run of the copy's ``e2e.py`` on ``cell`` with ``n`` items: its figures."""
    command = [sys.executable, str(root / "benchmarks" / "e2e.py"), "--cells", cell]
    command += ["--n-text", str(n), "--repeat", "1", "--no-server-check"]
    env = dict(os.environ, MMJUDGE_FAST_PATH="0" if root.name == "all" else "1")
    out = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{root.name}: e2e.py failed:\n{out.stdout}\n{out.stderr}")
    figures: dict[str, float] = {}
    for line in out.stdout.splitlines():
        if not ROW.match(line):
            continue
        cells = [part.strip() for part in line.strip("|").split("|")]
        name = cells[0]
        if "rerun" in name:
            figures["rerun_s"] = float(cells[9].removesuffix(" s"))
        elif "items prepared" not in name:
            figures["e2e"] = _share(cells[4])
            figures["steady"] = _share(cells[5])
            figures["cpu_ms"] = float(cells[6].removesuffix(" ms"))
            figures["first_s"] = float(cells[8].removesuffix(" s"))
    return figures


def _share(text: str) -> float:
    found = re.search(r"\(([\d.]+)%\)", text)
    return float(found.group(1)) if found else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", default="text:64:0.2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--n-text", type=int, default=10_000, help="items in the cell")
    parser.add_argument("--pieces", nargs="+", default=list(PIECES), choices=list(PIECES))
    args = parser.parse_args()
    print(f"command: python benchmarks/ablate.py {' '.join(sys.argv[1:])}".rstrip())
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    names: list[str | None] = [None, *args.pieces]
    runs: dict[str | None, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="mmjudge-ablate-") as tmp:
        roots = {name: variant(Path(tmp), name) for name in names}
        for round_number in range(args.rounds):
            for name in names:
                runs[name].append(measure(roots[name], args.cell, args.n_text))
            print(f"round {round_number + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    keys = ("e2e", "steady", "first_s", "rerun_s", "cpu_ms")
    medians = {
        name: {key: statistics.median(run[key] for run in runs[name]) for key in keys}
        for name in names
    }
    base = medians[None]
    print(
        f"| piece switched off ({args.cell}, median of {args.rounds}) | end to end | steady | "
        "first call | rerun from cache | CPU/judgment |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        row = medians[name]
        if name is None:
            print(
                f"| none (all on) | {row['e2e']:.1f}% | {row['steady']:.1f}% | "
                f"{row['first_s']:.2f} s | {row['rerun_s']:.2f} s | {row['cpu_ms']:.2f} ms |"
            )
            continue
        print(
            f"| {name}: {PIECES[name][0]} | {row['e2e']:.1f}% ({row['e2e'] - base['e2e']:+.1f}) | "
            f"{row['steady']:.1f}% ({row['steady'] - base['steady']:+.1f}) | "
            f"{row['first_s']:.2f} s ({row['first_s'] - base['first_s']:+.2f}) | "
            f"{row['rerun_s']:.2f} s ({row['rerun_s'] - base['rerun_s']:+.2f}) | "
            f"{row['cpu_ms']:.2f} ms ({row['cpu_ms'] - base['cpu_ms']:+.2f}) |"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
