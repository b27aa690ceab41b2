"""Grading a result against its query's test bank (``prompt.bank=nuggets|questions``).

The judge sees the query, the result (what the cell's modality shows) and the query's
entries labelled ``E1``, ``E2``…, and answers one line per entry: ``E1: 4`` (optionally
`` | `` and the supporting words). Each entry's grade (0-5) is kept on the row by entry id;
the row's label is derived by the declared rule (:mod:`mmjudge.testbank.derive`), so κ,
costs, intervals, panels and cascades treat the cell like any other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import jinja2

from mmjudge.config import DatasetConfig, ModalityConfig, PromptConfig, SweepConfig
from mmjudge.config.names import path_part
from mmjudge.errors import ConfigError
from mmjudge.locations import resolve_path
from mmjudge.testbank.bank import Bank, Entry, read_bank
from mmjudge.testbank.derive import cut_points, derive

ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mmjudge", "prompts"),
    autoescape=False,
    undefined=jinja2.StrictUndefined,
)

SYSTEM_PROMPT = "You check search results against a grading sheet. Answer in the format asked for."

_LINE = re.compile(
    r"^\W*E(?P<n>\d+)\W*?[:=\-–]\s*\**\s*(?P<grade>[0-5])(?:\s*/\s*5)?\**\b(?:\s*\|\s*(?P<span>.*))?"
)


def bank_path(dataset: DatasetConfig, kind: str) -> Path:
    """Where a dataset's bank of ``kind`` lives: ``dataset.testbanks.<kind>`` (relative to the
    dataset root), else ``testbanks/<dataset>/<kind>.jsonl`` under the working folder."""
    given = getattr(dataset.testbanks, kind, None)
    if given:
        path = Path(given).expanduser()
        if path.is_absolute():
            return path
        return resolve_path(dataset.path) / path
    return resolve_path(Path("testbanks") / path_part(dataset.name) / f"{kind}.jsonl")


def load_cell_bank(cfg: SweepConfig) -> Bank | None:
    """The bank a cell grades against (None for direct grading), read and checked before any
    call; its cut points are checked against the dataset's scale too."""
    kind = cfg.prompt.bank
    if kind is None:
        return None
    cut_points(cfg.prompt, list(cfg.dataset.scale.grades))
    if cfg.prompt.bank_calls == "entry" and cfg.runner.mode == "batch":
        raise ConfigError(
            "prompt.bank_calls=entry runs in runner.mode=sync; with runner.mode=batch use "
            "prompt.bank_calls=item (one request per result)"
        )
    if cfg.prompt.bank_calls == "entry" and cfg.runner.samples > 1:
        raise ConfigError(
            f"runner.samples={cfg.runner.samples} repeats whole requests; with a test bank use "
            "prompt.bank_calls=item (one request per result), or runner.samples=1"
        )
    path = bank_path(cfg.dataset, kind)
    if not path.is_file():
        raise ConfigError(
            f"prompt.bank={kind}: no test bank at {path}; write one with `mmjudge "
            f"testbank generate dataset={cfg.dataset.name} kind={kind} model=…`, import "
            f"one, or set dataset.testbanks.{kind}=<file>"
        )
    return read_bank(path, kind)


def labels(entries: Sequence[Entry], first: int = 1) -> list[str]:
    return [f"E{i}" for i in range(first, first + len(entries))]


class BankPrompt(NamedTuple):
    text: str
    entries: tuple[tuple[str, str], ...]
    """(label, text) of each entry shown."""


def render_bank_prompt(
    *,
    kind: str,
    query: str,
    entries: Sequence[Entry],
    fields: tuple[tuple[str, str], ...],
    modality: ModalityConfig,
    prompt: PromptConfig,
    dataset: DatasetConfig,
    n_images: int,
    first: int = 1,
) -> BankPrompt:
    """The grading prompt for one result and some of its query's entries (labelled from
    ``E<first>``: an entry keeps its place in the bank when shown alone)."""
    pairs = zip(labels(entries, first), entries, strict=True)
    shown = [(label, e.text, e.visual) for label, e in pairs]
    text = ENV.get_template("bank_grade.j2").render(
        kind=kind,
        description=dataset.description if prompt.role else "",
        query=query,
        fields=fields,
        shows_text=modality.include_text,
        shows_image=modality.include_image,
        n_images=n_images,
        entries=shown,
        spans=prompt.spans,
    )
    return BankPrompt(text.strip(), tuple((label, text) for label, text, _ in shown))


class EntryAnswer(NamedTuple):
    """What one answer says about the entries it was shown."""

    grades: dict[str, int]
    """Grade by entry id (entries the answer left out are missing)."""
    spans: dict[str, str]
    """Quoted support by entry id."""
    problem: str | None
    """Why nothing could be read, or None."""


def parse_entries(text: str, entries: Sequence[Entry]) -> EntryAnswer:
    """Read ``E<n>: <0-5> [| span]`` lines; the first line for an entry wins."""
    ids = {label: entry.id for label, entry in zip(labels(entries), entries, strict=True)}
    grades: dict[str, int] = {}
    spans: dict[str, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        entry_id = ids.get(f"E{int(match['n'])}")
        if entry_id is None or entry_id in grades:
            continue
        grades[entry_id] = int(match["grade"])
        span = (match["span"] or "").strip().strip("\"'`").strip()
        if span:
            spans[entry_id] = span
    if not grades:
        shown = text.strip().replace("\n", " ")
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return EntryAnswer({}, {}, f"no entry grade (E1: 0-5) in the answer: {shown!r}")
    return EntryAnswer(grades, spans, None)


class BankGrade(NamedTuple):
    label: int | None
    explanation: str | None
    parse_error: str | None
    entry_grades: dict[str, int] | None
    spans: dict[str, str] | None


def grade_answer(
    text: str, entries: Sequence[Entry], prompt: PromptConfig, grades: Sequence[int]
) -> BankGrade:
    """The row's fields for one answer about ``entries`` (the query's whole bank)."""
    answer = parse_entries(text, entries)
    if answer.problem is not None:
        return BankGrade(None, None, answer.problem, None, None)
    label = derive(prompt, grades, answer.grades, len(entries))
    missing = len(entries) - len(answer.grades)
    note = f"{len(answer.grades)} of {len(entries)} entries graded"
    note += f" ({missing} left out, counted as 0)" if missing else ""
    return BankGrade(label, note, None, answer.grades, answer.spans or None)


def skip_reason(provider: str, kind: str | None) -> str | None:
    """Why a judge cannot grade against a bank (the cell is skipped), or None."""
    if kind is not None and provider == "embedding":
        return (
            f"prompt.bank={kind}: the embedding judges give one similarity, not a grade per "
            "entry (use an LLM or the lexical judge)"
        )
    return None


def output_tokens(n_entries: int, spans: bool) -> int:
    """Answer tokens a forecast assumes for a bank prompt: a short line per entry, longer
    with a quoted span."""
    return 10 + n_entries * (20 if spans else 6)
