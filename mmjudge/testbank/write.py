"""What a model is asked to write a query's test bank, and the entries read out of its answer.

Running the calls (through the runner, priced and cached) is
:mod:`mmjudge.engine.bank_writer`'s job; this module only builds the requests and reads the
answers, so the bank's model stays below the runner.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from mmjudge.config import SweepConfig
from mmjudge.data.loading import load_dataset, sampled_queries
from mmjudge.errors import ConfigError
from mmjudge.records import JudgeRequest
from mmjudge.testbank.bank import Entry, entry_id
from mmjudge.testbank.grading import ENV

SYSTEM_PROMPT = "You write grading sheets for search relevance assessors."
_LINE = re.compile(r"^\W*(?:\d+[.)]\s*)?(?P<tag>visual|text)\s*:\s*(?P<text>.+)$", re.IGNORECASE)


class Queries(NamedTuple):
    texts: dict[str, str]
    """Query id → query text, in dataset order."""
    has_images: bool
    """Whether results come with images (so nuggets may be visual)."""


def dataset_queries(cfg: SweepConfig) -> Queries:
    """The dataset's queries (after its sample and limit) and whether it shows images."""
    texts: dict[str, str] = {}
    images = False
    chosen = sampled_queries(cfg.dataset, cfg.seed)
    # The queries and whether results have images: nothing that preparing the items changes.
    for example in load_dataset(cfg.dataset, seed=cfg.seed, queries=chosen, prepare=False):
        texts.setdefault(example.query_id, example.query)
        images = images or bool(example.images)
    return Queries(texts, images and cfg.dataset.max_images > 0)


def write_request(
    cfg: SweepConfig, kind: str, n: int, query_id: str, query: str, visual: bool
) -> JudgeRequest:
    """The request that asks for one query's bank."""
    text = ENV.get_template("bank_write.j2").render(
        kind=kind,
        n=n,
        description=cfg.dataset.description,
        query=query,
        visual=visual,
    )
    return JudgeRequest(
        item_key=f"write_bank\t{kind}\t{query_id}",
        prompt=text.strip(),
        system=SYSTEM_PROMPT,
        query=query,
        grades=(),
        task=f"write_bank:{kind}",
    )


def parse_bank_answer(text: str, query_id: str, kind: str, n: int) -> list[Entry]:
    """Entries from an answer's ``visual: …`` / ``text: …`` lines (at most ``n``; repeats
    dropped); other lines are ignored."""
    out: dict[str, Entry] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        body = " ".join(match["text"].strip().strip("`*\"'").split())
        if not body:
            continue
        entry = Entry(
            query_id, entry_id(query_id, body), kind, body, match["tag"].lower() == "visual"
        )
        out.setdefault(entry.id, entry)
    return list(out.values())[:n]


def check_writer(cfg: SweepConfig, kind: str) -> None:
    """Judges that cannot write a bank are refused before anything runs."""
    if cfg.model.provider == "embedding":
        raise ConfigError(
            f"model={cfg.model.name} cannot write text; write the bank with an LLM or the "
            "lexical judge, or import one"
        )
    if cfg.model.provider == "lexical" and kind != "nuggets":
        raise ConfigError(
            "model=lexical writes nugget banks only (the query's terms); use an LLM for "
            "kind=questions, or import a bank"
        )
