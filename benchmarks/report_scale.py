"""Wall time and peak memory of building the report from a large sweep.

Two sweeps, both synthetic (``tests.fixtures.synthetic``, ``synthetic_grid``; no calls):

- ``--grid``: the size practitioners run, 10 models × 3 modalities × 3 prompts × 3 datasets
  (270 cells, those a model cannot serve written as skipped) plus the panels and cascades a
  multirun builds at its end; 400 items per dataset (``--queries`` × 10). Besides the build
  time it prints the page's size, each figure's size in bytes and pixels, and how many of
  the figures' texts overlap or leave the image. Targets: under 30 s and under 5 MB.
- the default: many rows.

For the default, it writes a synthetic sweep into a temporary directory: one dataset of
ROWS / JUDGES items in the canonical JSONL layout with a few shared images, and JUDGES cells
over it (free and paid text judges, and an image + text judge), each with a
``summary.json`` from the real summary code. Then runs the report exactly as a user does,

    mmjudge report SWEEP_DIR --out OUT

in a fresh process each time, and prints the median wall time over the runs and the peak
RSS of the largest run (``wait4`` rusage of that process alone), with each run's CPU time
and the load average, since wall time on a shared machine says little alone. Targets: 1,000,000 rows
in under 10 s and no more memory than before (382 MiB when that target was set).

    python benchmarks/report_scale.py                     # 1,000,000 rows, 4 judges, 3 runs
    python benchmarks/report_scale.py --rows 200000 --runs 1
    python benchmarks/report_scale.py --keep /tmp/scale   # a second call reuses that sweep
    python benchmarks/report_scale.py --grid              # 270 cells + ensembles, 3 runs
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep  # noqa: E402
from tests.fixtures.synthetic_grid import write_realistic_sweep  # noqa: E402

RESULTS_PER_QUERY = 20
JUDGES = [
    FakeJudge("lexical", accuracy=0.55),
    FakeJudge("mini", accuracy=0.7, usd_per_judgment=0.00015),
    FakeJudge("big", accuracy=0.8, usd_per_judgment=0.0025),
    FakeJudge("big", modality="mm", accuracy=0.85, usd_per_judgment=0.0032, image_share=0.25),
    FakeJudge("big", modality="image", accuracy=0.6, usd_per_judgment=0.0011, image_share=0.7),
    FakeJudge("mid", accuracy=0.75, usd_per_judgment=0.0006),
]


def synthesise(root: Path, rows: int, judges: int) -> Path:
    items = rows // judges
    dataset = FakeDataset(
        "scale",
        n_queries=max(1, items // RESULTS_PER_QUERY),
        results_per_query=RESULTS_PER_QUERY,
        annotators=("annotator_a", "annotator_b", "annotator_c"),
    )
    sweep = write_sweep(
        root / "sweeps" / "scale", [dataset], JUDGES[:judges], dataset_root=root / "datasets"
    )
    return sweep.root


def prepared_sweep(base: Path, rows: int, judges: int) -> tuple[Path, bool]:
    """The sweep to report on: the one a ``--keep`` folder already holds for the same
    ``--rows`` and ``--judges``, else a new one, written in a process of its own so that this
    process stays small (a child's peak RSS counts the parent's size at the fork)."""
    marker = base / "sweeps" / "scale.args"
    wanted = f"rows={rows} judges={judges}"
    if marker.is_file() and marker.read_text() == wanted:
        return base / "sweeps" / "scale", True
    context = multiprocessing.get_context("spawn")
    writer = context.Process(target=synthesise, args=(base, rows, judges))
    writer.start()
    writer.join()
    if writer.exitcode != 0:
        raise SystemExit(f"writing the synthetic sweep failed (exit status {writer.exitcode})")
    marker.write_text(wanted)
    return base / "sweeps" / "scale", False


def synthesise_grid(root: Path, queries: int) -> Path:
    sweep = write_realistic_sweep(
        root / "sweeps" / "grid", n_queries=queries, dataset_root=root / "datasets"
    )
    return sweep.root


def describe_report(sweep: Path, report: Path) -> None:
    """The page's size, each figure's bytes and pixels, and overlapping or clipped texts
    in the figures (drawn again here, as the report draws them)."""
    from PIL import Image

    from mmjudge.report import figures, forest
    from mmjudge.report.analysis import analyse
    from mmjudge.report.label_placement import collisions
    from mmjudge.report.load import cell_table

    page = report / "index.html"
    print(f"index.html: {page.stat().st_size / 2**20:.2f} MiB")
    for png in sorted(report.glob("*.png")):
        with Image.open(png) as image:
            width, height = image.size
        print(f"  {png.name}: {png.stat().st_size / 1024:,.0f} KiB, {width}×{height} px")
    beside = sum(p.stat().st_size for p in report.rglob("*") if p.is_file()) - page.stat().st_size
    print(f"  files beside the page (figures, CSV, thumbnails): {beside / 2**20:.2f} MiB")
    analysis = analyse(cell_table(sweep))
    problems = []
    for draw in (
        figures.cost_figure,
        figures.ensemble_figure,
        forest.by_dataset_figure,
        forest.image_figure,
    ):
        fig = draw(analysis)
        if fig is not None:
            problems += collisions(fig)
    print(f"overlapping or clipped texts in the figures: {len(problems)}")
    for problem in problems[:10]:
        print(f"  {problem}")


def run_once(sweep: Path, out: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MiB) of one report build in a fresh process."""
    command = [sys.executable, "-m", "mmjudge", "report", str(sweep), "--out", str(out)]
    start = time.perf_counter()
    # Python's bytecode cache on, as on a user's machine (see e2e.sweep_env)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"report build failed with exit status {process.returncode}")
    # ru_maxrss is in KiB on Linux (bytes on macOS)
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / scale


def load_average() -> str:
    """The machine's 1-minute load average and core count: the wall times mean little on a
    machine other work is using."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="judgment rows in all")
    parser.add_argument("--judges", type=int, default=4, choices=range(1, len(JUDGES) + 1))
    parser.add_argument("--runs", type=int, default=3, help="report builds to time")
    parser.add_argument("--keep", type=Path, help="write the sweep and report here and keep them")
    parser.add_argument(
        "--grid",
        action="store_true",
        help="the 270-cell sweep (10 models × 3 modalities × 3 prompts × 3 datasets) "
        "with its ensembles, instead of --rows",
    )
    parser.add_argument(
        "--queries", type=int, default=40, help="--grid: queries per dataset (10 items each)"
    )
    args = parser.parse_args()
    print(f"command: python benchmarks/report_scale.py {' '.join(sys.argv[1:])}".rstrip())
    with tempfile.TemporaryDirectory(prefix="mmjudge-report-scale-") as tmp:
        base = args.keep or Path(tmp)
        if args.grid:
            grid(base, args.queries, args.runs)
            return
        start = time.perf_counter()
        sweep, reused = prepared_sweep(base, args.rows, args.judges)
        size = sum(p.stat().st_size for p in sweep.rglob("judgments.jsonl"))
        n_rows = args.rows // args.judges // RESULTS_PER_QUERY * RESULTS_PER_QUERY * args.judges
        print(
            f"{'reused' if reused else 'synthesised'} {n_rows:,} rows in {args.judges} cells "
            f"({size / 2**20:,.0f} MiB of judgments.jsonl) in {time.perf_counter() - start:.1f} s"
        )
        walls, cpus, peaks = [], [], []
        for run in range(args.runs):
            wall, cpu, peak = run_once(sweep, base / "reports")
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(peak)
            print(
                f"run {run + 1}: {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {peak:,.0f} MiB "
                f"({load_average()})"
            )
        report = base / "reports" / sweep.name / "index.html"
        print(
            f"report build: median {statistics.median(walls):.1f} s "
            f"(CPU {statistics.median(cpus):.1f} s) over {args.runs} run(s), "
            f"peak RSS {max(peaks):,.0f} MiB; index.html {report.stat().st_size / 2**20:.1f} MiB"
        )


def grid(base: Path, queries: int, runs: int) -> None:
    start = time.perf_counter()
    sweep = synthesise_grid(base, queries)
    cells = sum(1 for _ in sweep.glob("*/summary.json"))
    ensembles = sum(1 for _ in (sweep / "ensembles").glob("*/summary.json"))
    print(
        f"synthesised {cells} cells and {ensembles} panels and cascades "
        f"({queries * 10} items per dataset) in {time.perf_counter() - start:.0f} s"
    )
    walls = []
    for run in range(runs):
        wall, cpu, peak = run_once(sweep, base / "reports")
        walls.append(wall)
        print(f"run {run + 1}: {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {peak:,.0f} MiB")
    print(f"report build: median {statistics.median(walls):.1f} s over {runs} run(s)")
    describe_report(sweep, base / "reports" / sweep.name)


if __name__ == "__main__":
    main()
