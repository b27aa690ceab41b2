"""Where the items come from and what their labels mean: the ``dataset`` group."""

from __future__ import annotations

import codecs
import itertools
from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from mmjudge.config.values import check_name, check_whole, is_finite, require
from mmjudge.errors import ConfigError

#: How raw grades are placed on the scale (see :mod:`mmjudge.data.grades`).
GRADE_RULES = ("exact", "round", "floor", "ceil", "bins")

#: ``dataset.max_text_tokens`` unless a dataset says otherwise: enough for a long product page
#: or a passage, and a bound on what one runaway field can cost.
DEFAULT_MAX_TEXT_TOKENS = 2000
#: What ``dataset.sample_items`` draws among: the items a person graded, or every item.
SAMPLE_ITEMS_FROM = ("graded", "all")


#: The scale whose grades have definitions built in, used where its config gives none.
BUILT_IN_SCALE = (0, 1, 2)
#: Those definitions: written for that scale alone and never lent to another (a 2 on 0–3 is
#: not what a 2 on 0–2 is).
BUILT_IN_MEANINGS = {
    0: "not relevant: the result does not match what the query asks for",
    1: "partly relevant: the result matches some of the query but misses part of it",
    2: "relevant: the result matches everything the query asks for",
}


@dataclass
class ScaleConfig:
    """A label scale and what each grade means."""

    grades: list[int] = field(default_factory=lambda: [0, 1, 2])
    """The grades, in increasing relevance."""
    meanings: dict[int, str] = field(default_factory=dict)
    """A definition per grade, shown to the judge and in the report: every grade needs one,
    except on the scale 0, 1, 2, whose grades have definitions built in."""
    relevant_from: int = 1
    """Binarisation: grades at or above this count as relevant."""

    def validate(self) -> None:
        grades = list(self.grades)
        require(
            len(grades) >= 2,
            "dataset.scale.grades",
            grades,
            "list at least two grades, in increasing relevance, e.g. [0, 1, 2]",
        )
        repeated = sorted({g for g in grades if grades.count(g) > 1})
        require(
            not repeated,
            "dataset.scale.grades",
            grades,
            f"grade {', '.join(map(str, repeated))} is listed more than once",
        )
        require(
            grades == sorted(grades),
            "dataset.scale.grades",
            grades,
            "list the grades in increasing relevance, e.g. [0, 1, 2]",
        )
        require(
            self.relevant_from in grades[1:],
            "dataset.scale.relevant_from",
            self.relevant_from,
            f"use one of the grades above the lowest: {', '.join(map(str, grades[1:]))}",
        )
        strangers = [str(k) for k in self.meanings if k not in grades]
        require(
            not strangers,
            "dataset.scale.meanings",
            dict(self.meanings),
            f"grade(s) {', '.join(strangers)} are not on the scale {grades}",
        )
        definitions = self.definitions()
        missing = [grade for grade in grades if grade not in definitions]
        if missing:
            raise ConfigError(self.undefined(missing))

    def definitions(self) -> dict[int, str]:
        """Each grade's definition: its own from ``meanings``; on the scale 0, 1, 2 the
        built-in one (:data:`BUILT_IN_MEANINGS`) for a grade without. A grade of another
        scale without a meaning has none."""
        own = {int(grade): str(text) for grade, text in self.meanings.items() if text}
        if tuple(self.grades) != BUILT_IN_SCALE:
            return own
        return {**BUILT_IN_MEANINGS, **own}

    def undefined(self, missing: list[int]) -> str:
        """The one-line refusal of a scale whose grades ``missing`` have no definition."""
        return (
            f"dataset.scale.meanings has no definition for grade {', '.join(map(str, missing))} "
            f"of the scale {list(self.grades)}: give each grade one in the dataset's config, "
            "under scale: meanings: (the built-in definitions are for the scale [0, 1, 2] "
            "only)"
        )


@dataclass
class TestBanksConfig:
    """A dataset's test bank file per kind, relative to the dataset root or absolute; null
    reads ``testbanks/<dataset>/<kind>.jsonl`` under the working folder."""

    nuggets: str | None = None
    """Nuggets: facts or attributes a relevant result has."""
    questions: str | None = None
    """Questions a relevant result answers."""


@dataclass
class DatasetConfig:
    """A dataset: where it lives, how to read it, and its label scale."""

    name: str = MISSING
    """Short name used in results and reports."""
    loader: str = "jsonl"
    """Loader: ``jsonl`` (mmjudge's canonical format), ``hm``, ``flickr8k_expert``, ``trec``
    or ``table`` (any CSV / JSONL with a column mapping)."""
    path: str = MISSING
    """Dataset root: relative to the working folder, absolute, or ``pkg://<package>/<path>``."""
    items: str = "items.jsonl"
    """The items file, relative to the dataset root (the table for ``table``, the articles
    CSV for ``hm``, the documents JSONL for ``trec``)."""
    labels_file: str | None = None
    """Label file (H&M: query, article id, grades; TREC: qrels), relative to the dataset root
    or absolute."""
    queries_file: str | None = None
    """TREC queries file (``query_id<TAB>text``)."""
    runs: list[str] = field(default_factory=list)
    """TREC run files for system-ranking agreement."""
    text_fields: list[str] = field(default_factory=list)
    """Result fields shown to the judge, in order (loaders have their own defaults)."""
    columns: dict[str, Any] = field(default_factory=dict)
    """Loader options. ``table``: which column holds ``query``, ``query_id``, ``result_id``,
    ``text_fields``, ``image``, ``annotators`` (annotator name -> grade column), ``grade_map``,
    ``delimiter``. ``flickr8k_expert``: ``skip_missing_images``, ``image_dir``. ``trec``:
    ``doc_id`` (the documents' id key)."""
    encoding: str = "utf-8"
    """Text encoding of the dataset's files (a UTF-8 byte-order mark is accepted)."""
    max_text_tokens: int | None = DEFAULT_MAX_TEXT_TOKENS
    """Cut a result's text to about this many tokens (the row is flagged ``truncated``);
    null for no cap."""
    html_to_text: bool = False
    """Convert HTML in every text field to plain text before it is cut and shown."""
    html_fields: list[str] = field(default_factory=list)
    """Convert HTML to plain text in these text fields only."""
    grade_rule: str = "exact"
    """How raw grades are placed on the scale: ``exact`` (whole numbers only), ``round``
    (halves up), ``floor``, ``ceil`` or ``bins`` (see ``grade_bins``); for labels that are
    the mean of several raters."""
    grade_bins: list[float] = field(default_factory=list)
    """With ``grade_rule: bins``: one more edge than the scale has grades; a value in
    ``[edge_i, edge_i+1)`` gets the i-th grade, the last bin includes its upper edge."""
    description: str = ""
    """One sentence on what the results are, shown to the judge when the prompt asks for it."""
    guidelines: str = ""
    """Optional grading guidelines specific to this domain."""
    scale: ScaleConfig = field(default_factory=ScaleConfig)
    """The label scale."""
    annotators: list[str] = field(default_factory=list)
    """Expected annotator names; an empty list accepts any."""
    max_images: int = 1
    """Images shown per result."""
    allow_unlabelled: bool = False
    """Judge items no person graded (a jsonl line without ``labels``, a table row with no
    grade; for ``trec``, the documents the runs rank in a judged query's top ten that the
    qrels lack): they are left out of κ and every agreement figure, and the prediction-powered
    mean grade and ``mmjudge plan --next`` use them. Off, such an item is an error, as it is
    usually a mistake in the file."""
    limit: int | None = None
    """Use only the first N items (for quick trials)."""
    sample_queries: int | None = None
    """Use every item of N queries drawn at random (seeded by ``seed``)."""
    sample_items: int | None = None
    """Use N items drawn at random among those a person graded (seeded by ``seed``; a larger N
    keeps every item of a smaller one): the slices a race (``mmjudge race``) judges in."""
    sample_items_from: str = "graded"
    """Which items ``sample_items`` draws among: ``graded``, those a person graded; or
    ``all``, every item (a race that asks for people's grades as it goes,
    ``race.labels=ask``, sets it)."""
    testbanks: TestBanksConfig = field(default_factory=lambda: TestBanksConfig())
    """Test bank files (see :class:`TestBanksConfig`)."""
    slices: dict[str, str] = field(default_factory=dict)
    """Slice name → the item field that holds it (``{category: product_type}``), for the
    report's ``report.slices``; ``query_length`` and ``has_image`` need no entry. A slice's
    field is read as an item attribute and not shown to the judge (unless ``text_fields``
    names it)."""
    language: str | None = None
    """The language of every item (a code such as ``en``, ``pt``, ``tet``): the report's
    ``language`` slice; never shown to the judge."""
    language_field: str | None = None
    """Or the item field that holds each item's language code (read as an attribute, never
    shown to the judge)."""
    translations: dict[str, str] = field(default_factory=dict)
    """Language code → a translation of the prompt's wording (a ``_wording0.j2``-shaped file
    of the same macros), relative to the dataset root, absolute or ``pkg://``; used for that
    language's items with ``prompt.language=data``."""

    def validate(self) -> None:
        check_name("dataset.name", self.name)
        self.scale.validate()
        check_whole("dataset.limit", self.limit, 1, "for every item")
        check_whole("dataset.sample_queries", self.sample_queries, 1, "for every query")
        check_whole("dataset.sample_items", self.sample_items, 1, "for every item")
        require(
            self.sample_items_from in SAMPLE_ITEMS_FROM,
            "dataset.sample_items_from",
            self.sample_items_from,
            f"use one of {', '.join(SAMPLE_ITEMS_FROM)}",
        )
        check_whole("dataset.max_images", self.max_images, 0)
        check_whole("dataset.max_text_tokens", self.max_text_tokens, 1, "for no cap")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            require(False, "dataset.encoding", self.encoding, "use e.g. utf-8, latin-1, cp1252")
        require(
            not (self.html_to_text and self.html_fields),
            "dataset.html_fields",
            list(self.html_fields),
            "dataset.html_to_text=true already converts every field; give one or the other",
        )
        self.check_grade_rule()
        require(
            not (self.language and self.language_field),
            "dataset.language_field",
            self.language_field,
            "dataset.language already gives every item's language; give one or the other",
        )
        for code in [self.language, *self.translations]:
            require(
                code is None or (bool(str(code).strip()) and str(code) == str(code).strip()),
                "dataset.language",
                code,
                "give a language code without spaces, e.g. en, pt, tet",
            )

    def check_grade_rule(self) -> None:
        """``grade_rule`` and ``grade_bins`` (also checked by the loaders' grade reader)."""
        require(
            self.grade_rule in GRADE_RULES,
            "dataset.grade_rule",
            self.grade_rule,
            f"use one of {', '.join(GRADE_RULES)}",
        )
        edges = list(self.grade_bins)
        if self.grade_rule != "bins":
            require(not edges, "dataset.grade_bins", edges, "it needs dataset.grade_rule=bins")
            return
        n = len(self.scale.grades) + 1
        require(
            len(edges) == n and all(map(is_finite, edges)),
            "dataset.grade_bins",
            edges,
            f"give {n} edges, one more than the scale's {n - 1} grades (for grades 1-3 of "
            "averaged ratings, e.g. [1, 1.5, 2.5, 3])",
        )
        require(
            all(a < b for a, b in itertools.pairwise(edges)),
            "dataset.grade_bins",
            edges,
            "the edges must increase from one to the next",
        )
