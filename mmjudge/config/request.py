"""What a judge is sent: the prompt design (``prompt`` group) and what is done to each result
(``perturb``). How images are prepared (``images``) is
:class:`mmjudge.images.ImageSettings`, the preprocessor's own type."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mmjudge.config.values import check_name
from mmjudge.errors import ConfigError

#: Wordings shipped with the prompt templates (``mmjudge/prompts/_wording<N>.j2``).
N_WORDINGS = len(list((Path(__file__).parents[1] / "prompts").glob("_wording*.j2")))


#: ``prompt.answer_format``: how a call about several results is answered. ``auto``: as the
#: provider's structured output where it has one, else as lines; ``structured``: as structured
#: output (refused for a provider without it); ``lines``: one ``R<n>: N`` line per result.
ANSWER_FORMATS = ("auto", "structured", "lines")

#: ``prompt.language``: English instructions, or the data's language.
PROMPT_LANGUAGES = ("en", "data")


def language_suffix(language: object) -> str:
    """What a cell's prompt id (and folder name) ends with for ``prompt.language``: nothing
    for English, so those cells keep their ids, else ``-data``."""
    return "" if language in (None, "en") else f"-{language}"


def passages_suffix(passages: object, answer: object = "auto", reasons: object = False) -> str:
    """What a cell's prompt id (and folder name) ends with for ``prompt.passages_per_call``:
    nothing for one result per call, so those cells keep their ids, else ``-k<K>``, then
    ``-<format>`` for a ``prompt.answer_format`` other than ``auto`` and ``-reasons`` for
    ``prompt.passage_reasons`` (each a cell of its own: a sweep over them keeps them apart)."""
    if passages in (None, 1, "1"):
        return ""
    suffix = f"-k{passages}"
    if answer not in (None, "auto"):
        suffix += f"-{answer}"
    if reasons in (True, "true", "True"):
        suffix += "-reasons"
    return suffix


@dataclass
class PromptConfig:
    """Which prompt design to render."""

    id: str = "default"
    """Identifier of the prompt variant, kept on every record."""
    template: str = "judge"
    """Template family under ``mmjudge/prompts/``."""
    role: bool = True
    """Open with a statement of the judge's role."""
    strictness_note: bool = True
    """Tell the judge the middle grade is for partial matches and to use it sparingly."""
    explanation: bool = True
    """Ask for a one- or two-sentence explanation after the grade."""
    guidelines: bool = False
    """Insert the dataset's grading guidelines."""
    aspects: bool = False
    """Ask for aspect grades (match to the intent, trustworthiness of the listing) before an
    ``overall:`` grade; only the overall grade is read as the label."""
    raters: int = 1
    """Above 1: the judge imagines this many independent raters, writes a grade for each,
    then a ``final:`` grade; only the final grade is read as the label."""
    confidence: bool = False
    """Ask for a stated confidence (``confidence: 1``–``5``) after the grade; cascades can
    escalate on it."""
    language: str = "en"
    """The instructions' language: ``en`` (English for every item) or ``data`` (each item in
    its own language, with the translation its dataset gives in ``dataset.translations``;
    English for a language without one)."""
    paraphrase: int = 0
    """Which wording of the same design to use (0 is the standard wording); measures how
    much agreement moves with wording alone."""
    bank: str | None = None
    """``nuggets`` or ``questions``: grade each result against the dataset's test bank of
    that kind instead of asking for a grade directly (see :mod:`mmjudge.testbank`)."""
    bank_calls: str = "item"
    """``item``: one call per result with the whole bank of its query; ``entry``: one call
    per (result, entry)."""
    spans: bool = False
    """Test-bank grading: ask the judge to quote the supporting text (or the answer)."""
    rule: str = "coverage"
    """How entry grades (0-5) become the dataset's grade: ``coverage`` (the share of
    entries graded at least ``covered_from``) or ``best`` (the best entry grade)."""
    covered_from: int = 4
    """The entry grade from which an entry counts as covered (0-5)."""
    cuts: list[float] = field(default_factory=list)
    """Cut points for ``rule``, one per grade above the lowest: shares covered (0-1) for
    ``coverage``, entry grades (0-5) for ``best``; empty spreads them evenly."""
    passages_per_call: int = 1
    """Results of one query shown in one call, each under its marker (``R1``, ``R2``...), in
    an order drawn with the run's seed; the answer gives one ``R<n>: grade`` line per
    marker, and each result still gets a row of its own (see :mod:`mmjudge.engine.passages`).
    1: one result per call."""
    answer_format: str = "auto"
    """With ``passages_per_call`` above 1, how the answer gives one grade per result:
    ``auto`` (the provider's structured output where it has one: OpenAI's and compatible
    servers' ``response_format`` JSON schema, Anthropic's forced tool; else lines),
    ``structured`` (refused for a judge without it) or ``lines`` (one ``R<n>: N`` line per
    result, for a server that takes no JSON schema)."""
    passage_reasons: bool = False
    """With ``passages_per_call`` above 1: ask for a one-sentence reason with each result's
    grade. Off by default: the answer is the grades alone, since a reason is paid per result
    and no number of results per call shares it (``explanation`` is the one-result answer's)."""

    def validate(self) -> None:
        """Fail with a one-line fix when the prompt asks for something not shipped (the
        test-bank settings are checked by :func:`mmjudge.testbank.derive.check_bank_prompt`,
        which :func:`mmjudge.engine.cell.typed_config` calls)."""
        check_name("prompt.id", self.id)
        if not 0 <= self.paraphrase < N_WORDINGS:
            raise ConfigError(
                f"prompt.paraphrase={self.paraphrase} is not a shipped wording; "
                f"use 0 to {N_WORDINGS - 1}"
            )
        if self.raters < 1:
            raise ConfigError(f"prompt.raters={self.raters}: use 1 (one grade) or more")
        self._check_passages()
        if self.language not in PROMPT_LANGUAGES:
            raise ConfigError(
                f"prompt.language={self.language!r}: use en (English instructions) or data "
                "(each item's language, from dataset.translations)"
            )

    def _check_passages(self) -> None:
        """``prompt.passages_per_call``: a whole number from 1, and above 1 only with a design
        whose answer is one grade per result."""
        value = self.passages_per_call
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(
                f"prompt.passages_per_call={value!r}: use a whole number, 1 (one result per "
                "call) or more"
            )
        if self.answer_format not in ANSWER_FORMATS:
            raise ConfigError(
                f"prompt.answer_format={self.answer_format!r}: use one of "
                f"{', '.join(ANSWER_FORMATS)}"
            )
        if value == 1:
            return
        for name, asked in (
            ("aspects", self.aspects),
            ("raters", self.raters > 1),
            ("confidence", self.confidence),
            ("bank", self.bank is not None),
        ):
            if asked:
                raise ConfigError(
                    f"prompt.passages_per_call={value} asks for one grade line per result, "
                    f"which prompt.{name} changes; use prompt.passages_per_call=1 with it"
                )


#: The perturbations :mod:`mmjudge.perturb` knows (``perturb.kind``).
PERTURB_KINDS = ("none", "inject_text", "stuff_query", "inject_image")


@dataclass
class PerturbConfig:
    """What is done to each result before it is judged (``perturb`` group): nothing, or an
    attack written by whoever wrote the result, to see whether the judge falls for it."""

    name: str = "none"
    """The perturbation's name, kept on the cell's summary and its run folder."""
    kind: str = "none"
    """``none``, ``inject_text`` (an instruction appended to a text field), ``stuff_query``
    (the query's terms appended to a text field) or ``inject_image`` (an instruction drawn
    into each picture)."""
    texts: list[str] = field(default_factory=list)
    """The instructions to inject; each item gets one, drawn with the seed. ``{top}`` stands
    for the highest grade of the dataset's scale."""
    field: str | None = None
    """The text field to append to (``inject_text``, ``stuff_query``); null: the last one."""
    repeat: int = 3
    """``stuff_query``: how many times the query's terms are appended, shuffled each time."""
    font_size: int = 28
    """``inject_image``: text height in pixels on the prepared picture."""

    def validate(self) -> None:
        check_name("perturb.name", self.name)
        if self.kind not in PERTURB_KINDS:
            raise ConfigError(
                f"perturb.kind={self.kind!r} is not known; use one of {', '.join(PERTURB_KINDS)}"
            )
        if self.kind in ("inject_text", "inject_image") and not self.texts:
            raise ConfigError(
                f"perturb.kind={self.kind} needs at least one instruction in perturb.texts"
            )
        if self.repeat < 1:
            raise ConfigError(f"perturb.repeat={self.repeat}: use 1 or more")
        if self.font_size < 6:
            raise ConfigError(f"perturb.font_size={self.font_size}: use 6 pixels or more")
