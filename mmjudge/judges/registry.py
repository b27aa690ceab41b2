"""Judge classes found by the providers they describe, and the facts every other module reads
about a provider (:class:`~mmjudge.judges.descriptor.JudgeDescriptor`).

The judges that ship with mmjudge are the :class:`~mmjudge.judges.base.JudgeAPI` subclasses
declared in the modules of :mod:`mmjudge.judges` with descriptors of their own: a new module
there is found with no list to edit. A judge kept elsewhere (a plugin, a test's) is added with
:func:`register`. Judge modules import no provider SDK when imported (each SDK loads at its
judge's first call), so finding them costs little, and a missing optional module is reported
when a cell asks for its judge, with the extra that installs it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil

from mmjudge.config import ModelConfig
from mmjudge.config.values import check_whole
from mmjudge.errors import ConfigError
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.descriptor import JudgeDescriptor, TokenCounting
from mmjudge.judges.endpoint import endpoint_for

#: Judge classes added with :func:`register`, by provider name.
_REGISTERED: dict[str, type[JudgeAPI]] = {}


@functools.cache
def _shipped() -> dict[str, type[JudgeAPI]]:
    """The judge classes of :mod:`mmjudge.judges`, by each provider name they describe."""
    package = importlib.import_module("mmjudge.judges")
    found: dict[str, type[JudgeAPI]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if _declares_descriptors(value) and value.__module__ == module.__name__:
                for descriptor in value.descriptors:
                    found[descriptor.provider] = value
    return found


def _declares_descriptors(value: object) -> bool:
    return (
        isinstance(value, type)
        and issubclass(value, JudgeAPI)
        and "descriptors" in vars(value)
        and bool(value.descriptors)
    )


def judge_classes() -> dict[str, type[JudgeAPI]]:
    """Every known provider name and the judge class that serves it."""
    return {**_shipped(), **_REGISTERED}


def provider_names() -> list[str]:
    return sorted(judge_classes())


def descriptors() -> list[JudgeDescriptor]:
    """Every known provider's facts, by provider name."""
    classes = judge_classes()
    return [classes[name].described(name) for name in sorted(classes)]


def describe(provider: str | None) -> JudgeDescriptor | None:
    """The facts of ``provider``, or None for a provider no judge class describes (a plugin
    not registered in this process, a run from elsewhere)."""
    cls = judge_classes().get(str(provider))
    return cls.described(str(provider)) if cls is not None else None


def facts(provider: str | None) -> JudgeDescriptor:
    """The facts of ``provider``; for one nobody describes, those of a judge that says nothing
    more than its name (its models' maker, its family and its tokens come from the model id)."""
    return describe(provider) or JudgeDescriptor(str(provider or "other"))


def register(judge: type[JudgeAPI]) -> None:
    """Add a judge class kept outside :mod:`mmjudge.judges` under each provider name its
    descriptors give (for plugins and tests)."""
    if not _declares_descriptors(judge):
        raise TypeError(f"{judge.__name__} declares no descriptors, so it serves no provider")
    for descriptor in judge.descriptors:
        _REGISTERED[descriptor.provider] = judge
    token_counting.cache_clear()


def unregister(judge: type[JudgeAPI]) -> None:
    """Remove what :func:`register` added for ``judge``."""
    for descriptor in judge.descriptors:
        if _REGISTERED.get(descriptor.provider) is judge:
            del _REGISTERED[descriptor.provider]
    token_counting.cache_clear()


def judge_class(model: ModelConfig) -> type[JudgeAPI]:
    """The judge class for a model config, once the modules it needs are known to import."""
    cls = judge_classes().get(model.provider)
    if cls is None:
        choices = ", ".join(provider_names())
        raise ConfigError(
            f"model.provider='{model.provider}' is unknown for model '{model.name}'; "
            f"choose one of: {choices}"
        )
    descriptor = cls.described(model.provider)
    missing = next(
        (m for m in descriptor.required_modules if importlib.util.find_spec(m) is None), None
    )
    if missing is not None:
        raise ConfigError(
            f"provider '{model.provider}' for model '{model.name}' needs a missing package "
            f"({missing}); install it with: {descriptor.install_hint}"
        )
    return cls


def check_model(model: ModelConfig) -> None:
    """The model settings whose bounds depend on the provider: a paid judge's requests carry
    ``model.max_tokens``, so it needs at least 1 (0 would send none at all); a free one writes
    no text and takes 0. A provider nobody describes is left to fail with its own error."""
    descriptor = describe(model.provider)
    if descriptor is not None and not descriptor.free:
        check_whole("model.max_tokens", model.max_tokens, 1)


def is_free(model: ModelConfig) -> bool:
    """Whether the model's judge runs at no charge (its descriptor's ``free``); False for a
    provider nobody described, whose cell fails with its own error."""
    descriptor = describe(model.provider)
    return descriptor is not None and descriptor.free


def usd_per_million_judgments(model: ModelConfig) -> float | None:
    """What the model's config charges per million judgments
    (:meth:`~mmjudge.judges.base.JudgeAPI.usd_per_million_judgments`); None for a provider
    nobody described or a judge priced by the sheet alone."""
    cls = judge_classes().get(str(model.provider))
    return cls.usd_per_million_judgments(model) if cls is not None else None


def endpoint_override(model: ModelConfig) -> str | None:
    """Where a model's calls go when not to its provider's public endpoint, else None
    (:func:`~mmjudge.judges.endpoint.endpoint_for` with the variable its provider's SDK reads).
    Judges, the response cache's key and the summary all read it here, so they agree on the
    endpoint."""
    descriptor = describe(model.provider)
    return endpoint_for(model, descriptor.base_url_env if descriptor is not None else None)


def family_of(provider: str | None, model_id: str | None) -> str:
    """The report's colour family of a model (``gpt-4o`` → ``OpenAI``): its provider's when
    the provider serves one maker's models, else the maker its id names, else the provider's
    name (``other`` without one)."""
    return facts(provider).family(model_id)


@functools.lru_cache(maxsize=256)
def token_counting(provider: str | None, model_id: str | None) -> TokenCounting:
    """How the text tokens of ``model_id`` served by ``provider`` are counted offline (its
    provider's when it serves one maker's models, else its maker's by the id, else an
    estimate); remembered, as every forecast asks."""
    return facts(provider).tokens(model_id)


def create_judge(model: ModelConfig) -> JudgeAPI:
    """Build the judge for a model config (reads its API key from the environment)."""
    return judge_class(model)(model)
