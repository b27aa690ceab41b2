"""Redaction, the second line of defence: whatever secret a text, a tree of settings, a recorded
override or a log record still holds is replaced by :data:`REDACTED`."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Mapping
from typing import Any

from mmjudge.keyguard.recognise import (
    BEARER,
    KEY_PATTERN,
    REDACTED,
    URL_PASSWORD,
    URL_QUERY_CREDENTIAL,
    destination_problem,
    join_path,
    override_leaves,
    parse_override,
    secret_values,
)


def redact_text(text: str, secrets: Mapping[str, str] | None = None) -> str:
    """``text`` with every recognisable secret replaced by ``<redacted>``."""
    found = secret_values() if secrets is None else secrets
    for value in sorted(found, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    text = KEY_PATTERN.sub(REDACTED, text)
    text = BEARER.sub(rf"\1 {REDACTED}", text)
    text = URL_PASSWORD.sub(rf"\1{REDACTED}@", text)
    return URL_QUERY_CREDENTIAL.sub(rf"\1{REDACTED}", text)


def redact_override(argument: str, secrets: Mapping[str, str] | None = None) -> str:
    """One override as it may be written: a credential destination loses its whole value."""
    found = secret_values() if secrets is None else secrets
    override = parse_override(argument)
    if override is not None and not override.is_delete():
        key = str(override.key_or_group)
        for path, _leaf in override_leaves(override.value(), key):
            if destination_problem(path, ()) is not None:
                return f"{override.get_key_element()}={REDACTED}"
    return redact_text(argument, found)


def redact(
    tree: Any,
    secrets: Mapping[str, str] | None = None,
    key_envs: Collection[str] = (),
    path: str = "",
) -> Any:
    """A copy of plain containers with every secret redacted, by path and by value.

    A value at a credential destination (see :func:`destination_problem`) is replaced whole;
    recorded overrides lose the value of a credential destination; any other text loses
    what :func:`redact_text` recognises.
    """
    found = secret_values(key_envs) if secrets is None else secrets
    if isinstance(tree, Mapping):
        out = {}
        for key, value in tree.items():
            child = join_path(path, str(key))
            empty = value is None or value == "" or value == {} or value == []
            hidden = not empty and destination_problem(child, key_envs) is not None
            out[key] = REDACTED if hidden else redact(value, found, key_envs, child)
        return out
    if isinstance(tree, list | tuple):
        items = [redact(v, found, key_envs, f"{path}[{i}]") for i, v in enumerate(tree)]
        return type(tree)(items) if isinstance(tree, tuple) else items
    if isinstance(tree, str):
        if re.search(r"(^|\.)overrides\.(task|hydra)$", path.rsplit("[", 1)[0]):
            return redact_override(tree, found)
        return redact_text(tree, found)
    return tree


class RedactingFilter(logging.Filter):
    """Rewrites log records that hold a recognisable secret (attached to log handlers)."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        super().__init__()
        self.secrets = dict(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record: logging reports it when the handler formats it
        clean = redact_text(message, self.secrets)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_text(
                logging.Formatter().formatException(record.exc_info), self.secrets
            )
        return True


def redact_logs(secrets: Mapping[str, str] | None = None) -> None:
    """Attach a :class:`RedactingFilter` to every handler of the root logger (once each)."""
    found = secret_values() if secrets is None else secrets
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter(found))
