"""Record types passed between stages: requests, responses, usage, forecasts, judgment rows.

Every stage reads only what an earlier stage wrote, so these types are the contract between them.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the basis of every content hash."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


#: A string as :func:`canonical_json` writes it (the json module's own encoder for strings).
json_string: Callable[[str], str] = json.encoder.encode_basestring


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class EncodedImage:
    """An image ready to send: preprocessed, encoded, identified by the hash of its source."""

    source: str
    """Path or URL the image came from (relative to the dataset root when local)."""
    sha256: str
    """sha256 of the source bytes (of the URL text when passed through as a URL)."""
    media_type: str
    """MIME type of ``data`` (``image/jpeg``, ``image/png``)."""
    width: int
    """Width in pixels of what is sent (0 when unknown, e.g. a passed-through URL)."""
    height: int
    """Height in pixels of what is sent."""
    data: str
    """A ``data:`` URL, bare base64, or the original URL, per the image settings."""
    encoding: str = "data_url"
    """One of ``data_url``, ``base64``, ``url``."""


@dataclass(frozen=True)
class GradesAnswer:
    """The answer a call about several results asks for where the provider constrains its
    shape (structured output): one grade per marker, on the scale."""

    markers: tuple[str, ...]
    """The results' markers (``R1``, ``R2``...), in the order shown; each is a required key."""
    grades: tuple[int, ...]
    """The grades each marker may take."""
    reasons: bool = False
    """Each marker's value is ``{"grade": N, "reason": "..."}`` instead of the grade alone."""


@dataclass(frozen=True)
class PromptCacheMark:
    """Where a request's cacheable leading part ends, for the provider's prompt cache."""

    prefix_chars: int
    """Leading characters of ``JudgeRequest.prompt`` that every item of the cell shares (the
    system message, sent before them, belongs to the cached part too)."""
    ttl: str = "5m"
    """How long the provider keeps the part: ``5m`` or ``1h`` (``runner.prompt_cache_ttl``)."""
    key: str = ""
    """A key the requests of one query share, so a provider that routes by it (OpenAI's
    ``prompt_cache_key``) sends them where their prefix is cached."""


@dataclass(frozen=True)
class JudgeRequest:
    """One call to a judge: the rendered prompt and the images, plus generation settings."""

    item_key: str
    """Stable id of the (dataset, query, result) item this request grades."""
    prompt: str
    """The rendered user prompt text."""
    system: str | None = None
    """An optional system message."""
    images: tuple[EncodedImage, ...] = ()
    """Images to show, in order: where :attr:`image_places` puts them, else where the
    provider shows a prompt's images (after its text, or before it)."""
    query: str = ""
    """The query text (local judges use it directly)."""
    fields: tuple[tuple[str, str], ...] = ()
    """The result's text fields shown to the judge, in order (empty for image-only)."""
    grades: tuple[int, ...] = (0, 1, 2)
    """The label scale the judge must answer on."""
    task: str = "grade"
    """``grade`` (a relevance grade), ``bank`` (grade each test-bank entry) or
    ``write_bank`` (write a test bank for the query); local judges answer by it."""
    entries: tuple[tuple[str, str], ...] = ()
    """For ``bank``: the (label, text) of each test-bank entry shown, in prompt order."""
    sample: int = 0
    """Which of ``runner.samples`` answers to the same request this is: 0 for the first
    (whose cache key is the request's own), 1, 2, ... for the repeats, each with its own key."""
    cache_mark: PromptCacheMark | None = None
    """Where the part a provider's prompt cache may keep ends (``runner.prompt_cache=auto``);
    None: the request carries no mark. It changes what the call is billed, never what the
    model reads, so it is no part of the prompt hash."""
    answer: GradesAnswer | None = None
    """The shape the answer must take, sent as the provider's structured output (OpenAI's
    ``response_format``, Anthropic's forced tool); None: free text. The prompt says the same
    in words, so the prompt hash (and the response cache's key) tells the two apart."""
    image_places: tuple[int, ...] = ()
    """Where each image goes in the prompt text: per image, in order, the number of the
    prompt's characters shown before it (a call about several results shows each result's
    pictures under its marker); empty: the provider's own place for all of them."""

    def prompt_hash(self) -> str:
        """Hash of everything the model reads, images by their content hash: the sha256 of
        ``canonical_json({"system": ..., "prompt": ..., "images": [sha256, ...]})``, written
        out part by part (the same text, without encoding a dict per row)."""
        images = canonical_json([image.sha256 for image in self.images]) if self.images else "[]"
        system = "null" if self.system is None else json_string(self.system)
        # Where the images stand is read too; a request that leaves it to the provider keeps
        # the hash it had before requests could say.
        places = f'"image_places":{canonical_json(list(self.image_places))},' * bool(
            self.image_places
        )
        return sha256_text(
            f'{{{places}"images":{images},"prompt":{self.prompt_json},"system":{system}}}'
        )

    @functools.cached_property
    def prompt_json(self) -> str:
        """The prompt as :func:`canonical_json` writes it: encoded once, for the prompt hash
        and the response cache's key alike."""
        return json_string(self.prompt)


@dataclass
class Usage:
    """Token counts for one or more calls, split into the buckets providers bill separately."""

    input_tokens: int = 0
    """All input tokens, including cached ones and image tokens."""
    output_tokens: int = 0
    """All output tokens, including reasoning tokens."""
    cached_input_tokens: int = 0
    """Input tokens read from the provider's prompt cache (part of ``input_tokens``)."""
    cache_write_tokens: int = 0
    """Input tokens written to the provider's prompt cache (part of ``input_tokens``)."""
    cache_write_1h_tokens: int = 0
    """The part of ``cache_write_tokens`` written for an hour (Anthropic's ``1h`` TTL), billed
    at the sheet's ``cache_write_1h`` price."""
    reasoning_tokens: int = 0
    """Output tokens spent on hidden reasoning (part of ``output_tokens``)."""
    image_tokens: int = 0
    """Estimated input tokens due to images (part of ``input_tokens``)."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{
                f.name: getattr(self, f.name) + getattr(other, f.name)
                for f in dataclasses.fields(self)
            }
        )

    def to_dict(self) -> dict[str, int]:
        # Plain ints: no deep copy (``asdict``), which every row would pay for. One-hour cache
        # writes are left out where there are none, so files without them keep their keys.
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if not self.cache_write_1h_tokens:
            del data["cache_write_1h_tokens"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        if not data:
            return cls()
        names = _USAGE_FIELDS if cls is Usage else {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: int(v or 0) for k, v in data.items() if k in names})


#: The names of :class:`Usage`'s buckets (read once, not per answer read from the cache).
_USAGE_FIELDS = frozenset(f.name for f in dataclasses.fields(Usage))


@dataclass
class JudgeResponse:
    """What a provider returned for one request."""

    text: str
    """The model's answer text."""
    usage: Usage = field(default_factory=Usage)
    """Usage normalised into mmjudge's buckets."""
    raw_usage: dict[str, Any] = field(default_factory=dict)
    """The provider-reported usage block, verbatim."""
    latency_s: float = 0.0
    """Wall-clock seconds of the successful attempt."""
    model: str = ""
    """The model name the provider says answered."""
    stop_reason: str | None = None
    """Why generation stopped (``stop``, ``length``, ``end_turn``, refusal...)."""
    batch: bool = False
    """True when the call went through a provider batch API (billed at the batch discount)."""
    system_fingerprint: str | None = None
    """The provider's identifier of the backend configuration that answered (OpenAI's
    ``system_fingerprint``), when it sends one."""


@dataclass
class Forecast:
    """Expected totals for a set of calls."""

    calls: int = 0
    """Calls expected."""
    input_tokens: int = 0
    """All input tokens, image tokens included."""
    image_tokens: int = 0
    """Input tokens due to images."""
    output_tokens: float = 0
    """Expected output tokens (a per-call mean times the calls, so not always whole)."""
    usd: float = 0.0
    """Dollars."""
    image_usd: float = 0.0
    """The image share of ``usd``."""
    exact_text_tokens: bool = True
    """False when text tokens were estimated (no offline tokenizer for the model)."""
    output_basis: str = ""
    """Where the output tokens per call come from (cached answers, the answer format, or
    ``runner.forecast_output_tokens``)."""
    cached_input_tokens: int = 0
    """Input tokens expected to be read from the provider's prompt cache (part of
    ``input_tokens``)."""
    cache_saved_usd: float = 0.0
    """Dollars below list price that reading them from the cache saves (``usd`` is after
    the saving)."""
    prompt_cache: str = ""
    """Why the calls' shared part is not offered to the provider's prompt cache (the first
    reason met); empty when it is, or when no call has a shared part."""
    judgments: int = 0
    """Judgments the calls make (several per call with ``prompt.passages_per_call``); 0:
    one per call."""

    @property
    def judged(self) -> int:
        """Judgments the calls make: :attr:`judgments`, or one per call."""
        return self.judgments or self.calls

    def add(self, other: Forecast) -> None:
        if self.judgments or other.judgments:
            self.judgments = self.judged + other.judged
        self.calls += other.calls
        self.input_tokens += other.input_tokens
        self.image_tokens += other.image_tokens
        self.output_tokens += other.output_tokens
        self.usd += other.usd
        self.image_usd += other.image_usd
        self.exact_text_tokens = self.exact_text_tokens and other.exact_text_tokens
        self.cached_input_tokens += other.cached_input_tokens
        self.cache_saved_usd += other.cache_saved_usd
        self.prompt_cache = self.prompt_cache or other.prompt_cache

    @property
    def usd_per_million(self) -> float:
        """Dollars per million judgments (not calls: a call may judge several results)."""
        return self.usd / self.judged * 1e6 if self.calls else 0.0

    def to_dict(self) -> dict[str, float | int | bool | str]:
        data: dict[str, float | int | bool | str] = dataclasses.asdict(self)
        if self.judgments in (0, self.calls):
            del data["judgments"]  # one judgment per call: the file keeps the keys it had
        if not (self.cached_input_tokens or self.prompt_cache):
            # Nothing the prompt cache does: the file keeps the keys it had before caching.
            for name in ("cached_input_tokens", "cache_saved_usd", "prompt_cache"):
                del data[name]
        data["output_tokens"] = round(self.output_tokens)
        data["usd_per_million"] = self.usd_per_million
        return data


@dataclass
class JudgmentRecord:
    """One row of ``judgments.jsonl``: one judge's grade for one (query, result) pair."""

    run_id: str
    """Identifier of the run that produced the row."""
    dataset: str
    """Dataset name."""
    query_id: str
    """Query identifier within the dataset."""
    result_id: str
    """Result (document, product, image) identifier within the dataset."""
    modality: str
    """``text``, ``mm`` (image + text) or ``image``."""
    provider: str
    """Provider name (``openai``, ``anthropic``, ``openai_compatible``, ``local``)."""
    model: str
    """Model name as configured (pinned snapshot)."""
    prompt_id: str
    """Identifier of the prompt variant."""
    prompt_hash: str | None
    """sha256 of the rendered prompt (system, text and image hashes)."""
    image_sha256s: list[str]
    """Content hashes of the images shown."""
    raw_output: str | None
    """The model's answer text, verbatim."""
    label: int | None
    """Parsed grade, or null when the answer could not be parsed or the call failed."""
    explanation: str | None
    """The judge's stated reason, when it gave one."""
    parse_error: str | None
    """Why the answer could not be parsed, or null."""
    human_labels: dict[str, int]
    """Human grades keyed by annotator."""
    input_tokens: int
    """Provider-reported input tokens (0 for local judges)."""
    output_tokens: int
    """Provider-reported output tokens."""
    cost_usd: float
    """Cost of this judgment in USD, including failed attempts charged to it."""
    latency_s: float
    """Seconds spent on the call."""
    cached: bool
    """True when the answer came from the response cache (no new call was paid for)."""
    error: str | None
    """Item-level error (image unreadable, provider failure after retries), or null."""
    timestamp: str
    """UTC time the row was written, ISO 8601."""
    usage: dict[str, int] = field(default_factory=dict)
    """All usage buckets (see :class:`Usage`)."""
    image_cost_usd: float = 0.0
    """Estimated part of ``cost_usd`` due to images."""
    truncated: bool = False
    """True when the result text was cut to the dataset's token budget."""
    batch: bool = False
    """True when the answer came through a provider batch API (billed at the batch price)."""
    resent: int = 0
    """How many earlier sends of this request were lost (a process stopped while it was on
    the wire, and it was sent again): the provider billed each, estimated at this row's
    ``cost_usd``."""
    possibly_billed: int = 0
    """Sends of this request that may have reached the provider and got no answer (an attempt
    that timed out or was cut off after it left; a lost send a killed process may have made):
    providers bill what reaches them, answered or not. Not in ``cost_usd``."""
    possibly_billed_usd: float = 0.0
    """Their estimated cost, each at the call's forecast."""
    bank_version: str | None = None
    """Test-bank grading: the content hash of the bank the item was graded against."""
    entry_grades: dict[str, int] | None = None
    """Test-bank grading: each entry's grade (0-5) by entry id; an entry the answer left
    out is missing."""
    spans: dict[str, str] | None = None
    """Test-bank grading: the supporting text or answer quoted for an entry, by entry id."""
    response_model: str | None = None
    """The model the provider says answered (its own identifier, e.g. a dated snapshot
    behind the configured name); null without an answer."""
    system_fingerprint: str | None = None
    """The provider's fingerprint of the backend that answered (OpenAI's
    ``system_fingerprint``), when it sends one."""
    instructions: str | None = None
    """With ``prompt.language=data``: the language of the instructions the judge read (the
    item's language where its dataset gives a translation, else ``en``); null otherwise."""
    call_id: str | None = None
    """With ``prompt.passages_per_call`` above 1: the id of the call that showed this result
    with others of its query (the rows of one call share it); null for a call about one
    result."""
    call_position: int | None = None
    """Where the result stood in that call (1 for the first marker, ``R1``); null for a call
    about one result."""
    call_size: int | None = None
    """How many results that call showed; null for a call about one result."""
    reasked: bool = False
    """True when the call's answer gave this result no grade and it was asked again on its
    own: the row's grade is that answer's, its usage and cost its share of the call plus the
    second call."""
    schema_version: int = SCHEMA_VERSION
    """Version of this row's layout."""

    def to_json(self) -> str:
        # The fields are plain values, dicts and lists, so no deep copy (``asdict``) is needed;
        # their names are looked up once per process, not per row.
        return json.dumps({name: getattr(self, name) for name in _row_names()}, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JudgmentRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@functools.cache
def _row_names() -> tuple[str, ...]:
    """The columns of a ``judgments.jsonl`` row, in order."""
    return tuple(f.name for f in dataclasses.fields(JudgmentRecord))
