"""Train a small local judge on grades you already have.

    mmjudge distill SOURCE --out DIR [--judge NAME | --teacher humans | --labels FILE]
                    [--holdout 0.3] [--epochs 3] [--batch-size 16] [--learning-rate 1e-4]
                    [--seed 0] [--base DIR] [--image-model DIR] [--device cpu|cuda]

SOURCE is a run or sweep folder; its config names the dataset the texts come from. The grades
learnt are a judge's (``--judge NAME``, a cell of the sweep; the default when the folder holds
one judge), the people's (``--teacher humans``) or a label file's (``--labels FILE``). A share
of the queries is held out and never trained on; the judge's κ on them, against its teacher
and against people, is printed and stored in DIR. With ``--image-model DIR`` (a local CLIP
model) it also learns how much the result's image says, for cells of modality ``mm``. Then
``model=distilled model.options.path=DIR`` runs it in a sweep. Needs the ``local`` extra.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mmjudge.cli.exits import fail
from mmjudge.distill import HELD_OUT_SHARE, Distilled, TrainSettings, distill
from mmjudge.errors import MMJudgeError

PROG = "mmjudge distill"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG, description="Train a small local judge on grades you already have."
    )
    p.add_argument("source", metavar="SOURCE", help="a run or sweep folder")
    p.add_argument("--out", required=True, metavar="DIR", help="the judge's folder to write")
    p.add_argument(
        "--teacher",
        choices=("judge", "humans", "labels"),
        default=None,
        help="whose grades to learn (default: labels with --labels, else judge)",
    )
    p.add_argument("--judge", default=None, metavar="NAME", help="the cell whose grades to learn")
    p.add_argument("--labels", default=None, metavar="FILE", help="TREC qrels or JSON lines")
    p.add_argument(
        "--holdout",
        type=float,
        default=HELD_OUT_SHARE,
        metavar="SHARE",
        help=f"share of queries never trained on (default {HELD_OUT_SHARE})",
    )
    defaults = TrainSettings()
    p.add_argument("--epochs", type=int, default=defaults.epochs)
    p.add_argument("--batch-size", type=int, default=defaults.batch_size)
    p.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--base", default=None, metavar="DIR", help="a local checkpoint to start from")
    p.add_argument(
        "--image-model",
        default=None,
        metavar="DIR",
        help="a local CLIP model: also grade the result's image (modality mm)",
    )
    p.add_argument("--device", default=None, help="cpu, cuda… (default: a GPU when there is one)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; 2 for unusable input."""
    args = parser().parse_args(argv)
    teacher = args.teacher or ("labels" if args.labels else "judge")
    if args.labels and teacher != "labels":
        return fail(PROG, f"--labels goes with --teacher labels, not --teacher {teacher}")
    if args.judge and teacher != "judge":
        return fail(PROG, f"--judge goes with --teacher judge, not --teacher {teacher}")
    if args.epochs < 1 or args.batch_size < 1:
        return fail(PROG, "--epochs and --batch-size must be at least 1")
    settings = TrainSettings(
        base=args.base,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
        device=args.device,
    )
    quiet_loading()
    try:
        result = distill(
            args.source,
            args.out,
            teacher=teacher,
            judge=args.judge,
            labels=args.labels,
            image_model=args.image_model,
            held_out_share=args.holdout,
            settings=settings,
            progress=_progress,
        )
    except MMJudgeError as error:
        print(file=sys.stderr)
        return fail(PROG, error)
    print(file=sys.stderr)
    print(summary(result))
    return 0


def quiet_loading() -> None:
    """Leave the terminal to this command's progress line: transformers' own bars and load
    reports (a new head "newly initialized" is what training starts from) are not shown."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every checkpoint here is a local folder
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _progress(epoch: int, epochs: int, done: int, total: int, loss: float) -> None:
    print(
        f"\repoch {epoch}/{epochs}: {done}/{total} pairs, loss {loss:.4f}",
        end="",
        file=sys.stderr,
        flush=True,
    )


def summary(result: Distilled) -> str:
    """What the command prints when it is done."""
    m = result.manifest
    held = m.held_out
    stopped = (
        f" (stopped: kept epoch {m.epochs_done} of {m.epochs})" if result.trained.stopped else ""
    )
    lines = [
        f"{result.folder}: trained on {len(m.trained_items)} pairs of {m.dataset} graded by "
        f"{m.teacher_name}, {m.epochs_done} epochs in {m.train_seconds:.1f} s{stopped}",
        f"held out: {held.n_items} items of {held.n_queries} queries, never trained on",
        f"  κ trained judge vs {m.teacher_name}: {held.student_vs_source.text()}",
    ]
    if held.student_vs_people is not None and m.teacher != "humans":
        lines.append(f"  κ trained judge vs people: {held.student_vs_people.text()}")
    if held.source_vs_people is not None:
        lines.append(f"  κ {m.teacher_name} vs people: {held.source_vs_people.text()}")
    run = f"run it: mmjudge sweep model=distilled model.options.path={result.folder}"
    if m.image is not None:
        lines.insert(
            1,
            f"images: {m.image.n_trained} training items with an image through "
            f"{m.image.image_model} (held-out κ measured with them)",
        )
        run += f" model.options.image_model={m.image.image_model} modality=mm"
    lines.append(run)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
