"""Judges that run on this machine and need no key: free, deterministic baselines."""

from __future__ import annotations

import re
import time
from collections import Counter

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.providers.base import JudgeAPI
from mmjudge.records import JudgeRequest, JudgeResponse

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


class LexicalJudge(JudgeAPI):
    """Grades by BM25-style term overlap between the query and the result's text fields."""

    provider = "lexical"
    supports_images = False
    modalities = ("text",)
    cacheable = False

    def __init__(self, model: ModelConfig) -> None:
        self.name = model.name
        self.thresholds = [float(t) for t in model.thresholds] or [0.3, 0.7]
        if any(b <= a for a, b in zip(self.thresholds, self.thresholds[1:], strict=False)):
            raise ConfigError(
                f"model.thresholds={self.thresholds} for '{model.name}' must increase strictly"
            )
        self.k1 = float(model.options.get("k1", 1.2))
        self.b = float(model.options.get("b", 0.75))
        self.avg_length = float(model.options.get("avg_length", 20))

    def describe(self) -> str:
        return f"local judge '{self.name}' (lexical, text only)"

    def check_scale(self, grades: list[int]) -> None:
        if len(self.thresholds) != len(grades) - 1:
            raise ConfigError(
                f"model.thresholds for '{self.name}' has {len(self.thresholds)} values but the "
                f"dataset's scale {grades} needs {len(grades) - 1}; set model.thresholds"
            )

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        document = "\n".join(value for _, value in request.fields)
        score = bm25_overlap(request.query, document, self.k1, self.b, self.avg_length)
        grades = sorted(request.grades)
        position = sum(score >= t for t in self.thresholds)
        grade = grades[min(position, len(grades) - 1)]
        text = f"{grade}\nQuery-term overlap with the result text is {score:.2f}."
        return JudgeResponse(
            text=text,
            latency_s=time.perf_counter() - started,
            model=self.name,
            stop_reason="stop",
        )
