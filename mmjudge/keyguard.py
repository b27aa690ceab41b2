"""Keep API keys out of configs, overrides and everything mmjudge writes.

Keys live only in environment variables named by ``model.api_key_env``. Hydra writes the
command line and the composed config into the run directory, so a key typed as an override
or pasted into a config file would end up on disk; both are refused before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: Shapes of provider API keys (OpenAI, Anthropic, Google).
KEY_PATTERN = re.compile(r"(sk-[A-Za-z0-9_\-]{16,}|AIza[0-9A-Za-z_\-]{30,})")
#: Setting names that would hold a secret.
SECRET_NAMES = re.compile(r"(^|\.)(api_key|apikey|key|token|secret|password)=", re.IGNORECASE)

FIX = (
    "put the key in an environment variable and name it with model.api_key_env=VAR_NAME "
    "(configs and overrides are written to disk)"
)


def secret_in_overrides(argv: list[str]) -> str | None:
    """A one-line error when a command-line argument holds what looks like a secret."""
    for arg in argv:
        bare = arg.lstrip("+~")
        name = bare.split("=", 1)[0]
        if KEY_PATTERN.search(arg) or SECRET_NAMES.search(bare):
            return f"refusing the override '{name}=…': it looks like an API key; {FIX}"
    return None


def secret_in_config(config: Any) -> str | None:
    """A one-line error naming the first config setting whose value looks like a key."""
    for path, value in _strings(config, ""):
        if KEY_PATTERN.search(value):
            return f"config setting '{path}' holds what looks like an API key; {FIX}"
    return None


def _strings(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from _strings(value, f"{path}[{index}]")
    elif isinstance(node, str):
        yield path, node
