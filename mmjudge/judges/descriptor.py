"""What a judge class says about its provider, once, beside the class: a
:class:`JudgeDescriptor` per ``model.provider`` name it serves.

Everything that depends on the provider reads it here, never from a list of provider names of
its own: the registry finds a judge's class by it (and says which extra to install when a
module is missing), the config check asks whether the judge is paid, the forecast counts its
tokens by it, the report colours its models by it, and ``summary.json`` records the versions
of its packages. A new judge therefore touches its own module, its test and the docs.

Models served by judges that do not make them (an OpenAI-compatible server, a replay of a
model's grades) are known by their id's first word instead (:data:`MODEL_MAKERS`).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Tokens per o200k token for a model whose tokenizer is not published and whose maker is not
#: known: most tokenizers split English somewhat finer than o200k.
DEFAULT_TOKEN_FACTOR = 1.1


@dataclass(frozen=True)
class TokenCounting:
    """How a model's text tokens are counted offline, for a forecast."""

    exact: bool = False
    """Counted with tiktoken's encoding for the model id (OpenAI's models); False: estimated as
    the o200k count times :attr:`factor`, and forecasts say so."""
    factor: float = DEFAULT_TOKEN_FACTOR
    """Tokens per o200k token, when estimated."""


@dataclass(frozen=True)
class ModelMaker:
    """Who made a model: the report's colour family for its judges, and how its tokens count."""

    name: str
    """The family's name in the report's legend (``Anthropic``)."""
    prefixes: tuple[str, ...]
    """Lower-case first words of its model ids (``claude``), with or without a hub's
    ``owner/`` before them."""
    tokens: TokenCounting = TokenCounting()
    """How its models' tokens are counted offline."""

    def made(self, model_id: str) -> bool:
        """Whether ``model_id`` names one of this maker's models."""
        full = model_id.lower()
        own = full.rsplit("/", 1)[-1]
        return any(own.startswith(p) or full.startswith(p) for p in self.prefixes)


OPENAI = ModelMaker("OpenAI", ("gpt", "o1", "o3", "o4"), TokenCounting(exact=True))
#: Claude's tokenizer yields noticeably more tokens than o200k on English text.
ANTHROPIC = ModelMaker("Anthropic", ("claude",), TokenCounting(factor=1.2))
#: Gemini's tokenizer yields about as many tokens as o200k.
GEMINI = ModelMaker("Google", ("gemini",), TokenCounting(factor=1.0))

#: Makers known by their model ids' first word, for models a judge serves without making them.
MODEL_MAKERS: tuple[ModelMaker, ...] = (
    OPENAI,
    ANTHROPIC,
    GEMINI,
    ModelMaker("Google", ("gemma",)),
    ModelMaker("Meta", ("meta-llama", "llama")),
    ModelMaker("Qwen", ("qwen",)),
    ModelMaker("Mistral", ("mistral", "mixtral")),
)


def maker_by_id(model_id: str | None) -> ModelMaker | None:
    """The maker whose ids ``model_id`` starts with, or None."""
    if not model_id:
        return None
    return next((maker for maker in MODEL_MAKERS if maker.made(str(model_id))), None)


@dataclass(frozen=True)
class Crowd:
    """A provider's smaller picture size for requests with many pictures."""

    pictures: int
    """Above this many pictures in one request..."""
    max_side: int
    """...each may be at most this many pixels a side."""


@dataclass(frozen=True)
class ImageLimits:
    """The most a provider takes in one request's pictures, as its documentation states."""

    max_images: int
    """Images in one request."""
    max_bytes: int | None
    """Bytes of the request's images as sent (base64 text, or a passed-through URL's); None:
    none stated."""
    source: str
    """Where the provider states them, for the line that refuses a cell over them."""
    crowd: Crowd | None = None
    """A smaller picture size for requests with many pictures; None: none stated."""


@dataclass(frozen=True)
class JudgeDescriptor:
    """A provider's facts, declared by the judge class that serves it
    (:attr:`mmjudge.judges.base.JudgeAPI.descriptors`)."""

    provider: str
    """The name configs give as ``model.provider``."""
    free: bool = False
    """Runs on this machine at no charge: it needs no price sheet entry (a replay's judgments
    cost something only where its config prices them), nothing it sends is ever billed, and it
    writes no text (``model.max_tokens`` may be 0). False: a paid judge called over a
    provider's API, whose requests carry ``model.max_tokens`` (at least 1)."""
    maker: ModelMaker | None = None
    """The maker of every model it serves; None: found from the model id
    (:data:`MODEL_MAKERS`), else the provider's own name is the family."""
    sdk: str | None = None
    """The module of the provider's SDK, imported at the first call (ahead of it where a call
    is certain: :mod:`mmjudge.speed.sdk_warmup`); None: no SDK."""
    needs: tuple[str, ...] = ()
    """Other modules it imports that an install may lack; a cell that uses it stops before
    anything runs when one is missing, naming :attr:`extra`."""
    extra: str | None = None
    """The mmjudge extra that installs :attr:`needs` (``local``); None: the core install."""
    packages: tuple[str, ...] = ()
    """Distributions whose versions ``summary.json`` records, beside mmjudge's own."""
    key_env: str | None = None
    """The environment variable its key is read from when ``model.api_key_env`` is unset;
    None: no key unless the config names one."""
    base_url_env: str | None = None
    """The environment variable its SDK reads a base URL from when ``model.base_url`` is
    unset; None: it calls no server."""
    default_base_url: str | None = None
    """Where calls go when neither sets one; None with :attr:`base_url_env` set: the config
    must say (an OpenAI-compatible server)."""
    batch_api: str | None = None
    """Its provider's batch API, by name (``runner.mode=batch``); None: calls one at a time."""
    prompt_cache: str | None = None
    """How its provider caches a prompt's leading part (``runner.prompt_cache``):
    ``marked``, where the request marks the end of the part to keep (Anthropic);
    ``automatic``, where long prefixes are kept without a mark (OpenAI); None: no cache
    mmjudge arranges."""
    image_limits: ImageLimits | None = None
    """The most one request may carry in pictures (a call about several results shows all
    their pictures: ``prompt.passages_per_call``); None: none known to mmjudge (a server's
    own limit, if any, refuses the call, which is an error row)."""

    structured_output: str | None = None
    """How its provider constrains an answer to a JSON schema (``prompt.answer_format``):
    ``json_schema`` (``response_format`` with a strict schema: OpenAI, and the compatible
    servers that take it, vLLM and Ollama among them) or ``tool`` (a tool whose
    ``input_schema`` is the schema, forced with ``tool_choice``: Anthropic); None: none."""
    structured_prompt_tokens: int = 0
    """Input tokens the provider adds to a call that uses :attr:`structured_output`, beyond
    the schema's own (Anthropic's tool-use system prompt: 313 tokens with a forced tool on its
    current models)."""

    def family(self, model_id: str | None) -> str:
        """The report's colour family for one of its models (``gpt-4o`` → ``OpenAI``)."""
        maker = self.maker or maker_by_id(model_id)
        return maker.name if maker is not None else self.provider

    def tokens(self, model_id: str | None) -> TokenCounting:
        """How the text tokens of ``model_id`` are counted offline."""
        maker = self.maker or maker_by_id(model_id)
        return maker.tokens if maker is not None else TokenCounting()

    @property
    def required_modules(self) -> tuple[str, ...]:
        """Every module a cell with this judge needs (its SDK first)."""
        return (self.sdk, *self.needs) if self.sdk else self.needs

    @property
    def install_hint(self) -> str:
        """The command that installs what :attr:`required_modules` names."""
        return f"pip install 'mmjudge[{self.extra}]'" if self.extra else "pip install -e ."
