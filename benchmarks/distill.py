"""A distilled judge against the free baselines and its teacher, on held-out queries.

Judges a dataset with the lexical and the zero-shot MiniLM judges and a replay of a judge's
grades, trains a distilled judge on a share of the queries (``--teacher humans``: the people's
consensus; ``--teacher judge``: the replay's grades), and prints κ against people on the
held-out queries for each, with 95 % bootstrap intervals over queries, on the same items; then
the training time and how many items a second the trained judge grades on this machine
(``--device`` to pick one).

    python benchmarks/distill.py                                   # demo_fashion, humans
    python benchmarks/distill.py --teacher judge --replay careful  # learn a replay's grades

Needs torch and the ``local`` extra. demo_fashion is synthetic (see its README): its figures
show the machinery works, not how a trained judge does on a real catalogue.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mmjudge.api.cells import run_cell
from mmjudge.distill import TrainSettings, distill
from mmjudge.distill.distil import kappa
from mmjudge.distill.pairs import gather
from mmjudge.judges.cut_points import grade_for
from mmjudge.judges.distilled import load_cross_encoder, pair_scores
from mmjudge.metrics import consensus
from mmjudge.store import load_run

REPLAYS = "pkg://mmjudge/datasets/demo_fashion/judges"


def cell(name: str, overrides: list[str], root: Path, dataset: str) -> Path:
    """Run one cell over the whole dataset into ``root/name``."""
    run_dir = root / name
    run_cell(
        [
            f"dataset={dataset}",
            "modality=text",
            *overrides,
            f"paths.results={root / 'results'}",
            f"paths.response_cache={root / 'cache.sqlite'}",
            f"paths.image_cache={root / 'images'}",
            "runner.progress=false",
            "report.build=false",
        ],
        run_dir,
    )
    return run_dir


def grades_of(run_dir: Path) -> dict[tuple[str, str], float]:
    """A run's grade for each item it graded."""
    rows = load_run(run_dir).rows
    return {
        (str(q), str(r)): float(row.label)
        for (q, r), row in rows.items()
        if row.label is not None and not row.error
    }


def people_of(run_dir: Path) -> dict[tuple[str, str], float]:
    """The people's consensus for each item of a run."""
    out = {}
    for (q, r), row in load_run(run_dir).rows.items():
        given = {n: [float(g)] for n, g in (row.human_labels or {}).items() if g is not None}
        if given:
            out[(str(q), str(r))] = float(consensus(given)[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--dataset", default="demo_fashion")
    parser.add_argument("--teacher", choices=("humans", "judge"), default="humans")
    parser.add_argument("--replay", default="careful", help="a demo_fashion replay judge")
    parser.add_argument("--holdout", type=float, default=0.5)
    parser.add_argument("--epochs", type=int, default=TrainSettings().epochs)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = time.perf_counter()
        lexical = cell("lexical", ["model=lexical"], root, args.dataset)
        minilm = cell("minilm", ["model=minilm", "model.options.device=cpu"], root, args.dataset)
        replay_file = f"{REPLAYS}/{args.replay}.jsonl"
        replay = cell(
            "replay", ["model=replay", f"model.options.qrels={replay_file}"], root, args.dataset
        )
        print(f"baselines judged in {time.perf_counter() - started:.1f} s")
        people = people_of(lexical)
        others = {
            "lexical (BM25 overlap)": grades_of(lexical),
            "MiniLM zero-shot (cosine)": grades_of(minilm),
            f"replay '{args.replay}' (the judge source)": grades_of(replay),
        }
        source = replay if args.teacher == "judge" else lexical
        pairs = gather(source, args.teacher).pairs
        texts = {(p.query_id, p.result_id): (p.query, p.text) for p in pairs}
        for seed in args.seeds:
            settings = TrainSettings(epochs=args.epochs, seed=seed, device=args.device)
            trained = distill(
                source,
                root / f"judge-{seed}",
                teacher=args.teacher,
                held_out_share=args.holdout,
                settings=settings,
            )
            m = trained.manifest
            held = set(m.held_out_queries)
            keys = sorted(k for k in texts if k[0] in held and k in people)
            model = load_cross_encoder(trained.folder, args.device)
            all_pairs = [texts[k] for k in sorted(texts)]
            pair_scores(model, all_pairs[:32])  # warm up
            rates = []
            for _ in range(3):
                tick = time.perf_counter()
                pair_scores(model, all_pairs, 32)
                rates.append(len(all_pairs) / (time.perf_counter() - tick))
            print(
                f"\nseed {seed}: trained on {len(m.trained_items)} pairs of {m.dataset} "
                f"({m.teacher_name}), {m.epochs_done} epochs in {m.train_seconds:.1f} s on "
                f"{args.device}; grades {statistics.median(rates):.0f} items/s "
                f"(median of 3 passes over {len(all_pairs)} items, batch 32)"
            )
            print(f"κ against people on {len(keys)} held-out items of {len(held)} queries:")
            student = pair_scores(model, [texts[k] for k in keys], 32)
            rows = {
                f"distilled ({m.teacher_name}, {m.epochs_done} epochs)": {
                    k: float(grade_for(s, m.cut_points, m.grades))
                    for k, s in zip(keys, student, strict=True)
                },
                **others,
            }
            for name, graded in rows.items():
                figure = kappa(
                    [k[0] for k in keys],
                    [people[k] for k in keys],
                    [graded.get(k, math.nan) for k in keys],
                    m.grades,
                )
                print(f"  {name:<45} {figure.text()}")


if __name__ == "__main__":
    main()
