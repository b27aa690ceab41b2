"""The lexical judge: query-term overlap (BM25-weighted) cut into grades; runs on this machine,
needs no key, costs nothing and always gives the same answer."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mmjudge.config import ModelConfig
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.cut_points import (
    CutPoints,
    check_increasing,
    check_span,
    derived,
    given,
    grade_for,
)
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.options import JudgeOptions
from mmjudge.records import JudgeRequest, JudgeResponse

#: Scores below the first value get the lowest grade, from the second up the highest.
DEFAULT_SPAN = (0.3, 0.7)


@dataclass(frozen=True)
class LexicalOptions(JudgeOptions):
    """``model.options`` of the lexical judge."""

    family: ClassVar[str] = "lexical"
    k1: float = 1.2
    """BM25's term-frequency saturation."""
    b: float = 0.75
    """BM25's length normalisation."""
    avg_length: float = 20
    """The result length (in terms) taken as average."""
    score_span: Any = DEFAULT_SPAN
    """``[low, high]`` of the score the cut points are derived from."""


_TOKEN = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "for",
        "of",
        "in",
        "on",
        "with",
        "to",
        "by",
        "at",
        "from",
        "or",
        "is",
        "are",
        "this",
        "that",
        "it",
        "its",
        "my",
        "me",
        "i",
    ]
)


def tokenize(text: str) -> list[str]:
    """Lower-case alphanumeric terms without stopwords, with a plural ``s`` removed."""
    terms = []
    for term in _TOKEN.findall(text.lower()):
        if term in _STOPWORDS:
            continue
        if len(term) > 3 and term.endswith("s") and not term.endswith("ss"):
            term = term[:-1]
        terms.append(term)
    return terms


def bm25_overlap(query: str, document: str, k1: float, b: float, avg_length: float) -> float:
    """BM25's saturating term weight, averaged over the query's terms, scaled into [0, 1].

    There is no collection to take document frequencies from when one pair is graded at a
    time, so every query term weighs the same; a term's weight still saturates with repeats
    (``k1``) and is discounted in long documents (``b``), as in BM25.
    """
    query_terms = list(dict.fromkeys(tokenize(query)))
    if not query_terms:
        return 0.0
    doc_terms = Counter(tokenize(document))
    length = sum(doc_terms.values())
    norm = k1 * (1.0 - b + b * length / max(avg_length, 1e-9))
    total = 0.0
    for term in query_terms:
        tf = doc_terms.get(term, 0)
        total += tf * (k1 + 1.0) / (tf + norm) / (k1 + 1.0) if tf else 0.0
    return total / len(query_terms)


#: Words that make a test-bank entry a question without saying what it asks about.
_QUESTION_WORDS = frozenset(["does", "do", "what", "which", "how", "result", "have", "has"])


def entry_grades_text(entries: Sequence[tuple[str, str]], document: str) -> str:
    """A test-bank answer by term overlap: each entry's grade (0-5) is five times the share
    of its terms that occur in the result text (a grade of 5 when all of them do)."""
    present = set(tokenize(document))
    lines = []
    for label, text in entries:
        terms = [t for t in dict.fromkeys(tokenize(text)) if t not in _QUESTION_WORDS]
        share = sum(t in present for t in terms) / len(terms) if terms else 0.0
        lines.append(f"{label}: {round(5 * share)}")
    return "\n".join(lines)


class LexicalJudge(JudgeAPI):
    """Grades by BM25-style term overlap between the query and the result's text fields.

    The overlap (0 to 1) becomes a grade through cut points (see
    :mod:`mmjudge.judges.cut_points`): ``model.thresholds`` when given, otherwise spread
    over ``model.options.score_span`` (default ``[0.3, 0.7]``: below 0.3 few query terms occur
    in the result, from 0.7 up nearly all of them do, repeatedly or in a short text), so the
    judge grades on any scale a dataset declares.
    """

    descriptors = (JudgeDescriptor("lexical", free=True),)
    supports_images = False
    modalities = ("text",)
    cacheable = False
    Options = LexicalOptions
    options: LexicalOptions

    def __init__(self, model: ModelConfig) -> None:
        super().__init__(model)
        self.name = model.name
        self.thresholds = check_increasing(model.name, "model.thresholds", model.thresholds)
        self.score_span = check_span(
            model.name, "model.options.score_span", self.options.score_span
        )
        self.k1 = self.options.k1
        self.b = self.options.b
        self.avg_length = self.options.avg_length

    def describe(self) -> str:
        return f"local judge '{self.name}' (lexical, text only)"

    def cut_points(self, grades: Sequence[int]) -> CutPoints:
        """The cut points for a scale: the given thresholds (checked), else derived ones."""
        if self.thresholds:
            return given(self.name, "model.thresholds", self.thresholds, grades)
        return derived("model.options.score_span", self.score_span, grades)

    def check_scale(self, grades: list[int]) -> dict[str, CutPoints]:
        return {"text": self.cut_points(grades)}

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        document = "\n".join(value for _, value in request.fields)
        if request.task == "bank":
            text = entry_grades_text(request.entries, document)
        elif request.task.startswith("write_bank"):
            terms = [t for t in dict.fromkeys(tokenize(request.query)) if len(t) > 1]
            text = "\n".join(f"text: {term}" for term in terms)
        else:
            score = bm25_overlap(request.query, document, self.k1, self.b, self.avg_length)
            grade = grade_for(score, self.cut_points(request.grades).values, request.grades)
            text = f"{grade}\nQuery-term overlap with the result text is {score:.2f}."
        return JudgeResponse(
            text=text,
            latency_s=time.perf_counter() - started,
            model=self.name,
            stop_reason="stop",
        )
