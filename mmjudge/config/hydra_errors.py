"""Hydra's and OmegaConf's errors about a config, said in one line.

Hydra reports a value of the wrong type (``dataset.limit=abc``), a setting a node does not
have (an ``api_key:`` in a model file of a ``--config-dir`` folder), an override it cannot
parse, a comma list without ``-m`` or a launcher whose plugin is not installed in several
lines, and exits 1. The sweep command lets Hydra raise them instead
(:func:`config_errors_raised`, through ``HYDRA_FULL_ERROR``, Hydra's documented switch) and
words each in one line that names the setting, where it came from and what to do
(:func:`config_error_line`); the command then exits 2, as for every other configuration error.

A config file of the user's own (a ``--config-dir`` folder's) that is not YAML (a bad
mapping, a tab) or not UTF-8 text reaches the command as the YAML reader's or the decoder's
error; it is said in one line naming the file, the line and the fix
(:func:`config_file_error_line`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import yaml
from hydra.errors import HydraException, OverrideParseException
from omegaconf.errors import OmegaConfBaseException

from mmjudge.config.keys import unknown_key
from mmjudge.keyguard import FIX, destination_problem, redact_text

#: The exceptions that mean the config cannot be composed or read as typed.
CONFIG_ERRORS = (HydraException, OmegaConfBaseException)
#: The exceptions that mean a config file cannot be read: not YAML, or not UTF-8 text.
CONFIG_FILE_ERRORS = (yaml.YAMLError, UnicodeDecodeError)

#: Hydra's switch that makes it raise errors rather than print them and exit 1.
_FULL_ERROR = "HYDRA_FULL_ERROR"

#: OmegaConf's names of the types it could not convert a value to -> what the setting takes.
_TAKES = {
    "Integer": "a whole number",
    "Float": "a number",
    "Boolean": "true or false",
    "String": "text",
}

_IN_FILE = re.compile(r"^In '(?P<file>[^']+)': (?P<kind>\w+) raised while composing config:$")
_MERGING = re.compile(r"^Error merging override (?P<override>.+)$")
_CONVERT = re.compile(r"could not be converted to (?P<type>\w+)")
_NOT_IN = re.compile(r"^Key '(?P<key>[^']+)' not in '(?P<node>[^']+)'$")
_AMBIGUOUS = re.compile(r"^Ambiguous value for argument '(?P<override>.+)'$")
_NO_LAUNCHER = re.compile(r"Could not find 'hydra/launcher/(?P<name>[^']+)'")
#: The launchers mmjudge's docs name, and what installs each.
LAUNCHER_INSTALLS = {
    "joblib": "pip install 'mmjudge[joblib]'",
    "ray": "pip install 'mmjudge[ray]'",
    "submitit_local": "pip install hydra-submitit-launcher",
    "submitit_slurm": "pip install hydra-submitit-launcher",
    "rq": "pip install hydra-rq-launcher",
}
#: Lines of OmegaConf's messages that name its own classes, not anything a user wrote.
_NOISE = re.compile(r"^(reference_type|object_type)=|^Set the environment variable")


#: The user's own ``HYDRA_FULL_ERROR`` while :func:`config_errors_raised` sets it (None outside).
_USERS: list[str | None] = []


def user_wants_full_errors() -> bool:
    """Whether the user set ``HYDRA_FULL_ERROR=1`` (then errors keep Hydra's traceback), also
    inside :func:`config_errors_raised`."""
    given = _USERS[-1] if _USERS else os.environ.get(_FULL_ERROR)
    return given == "1"


@contextlib.contextmanager
def config_errors_raised() -> Iterator[None]:
    """While the block runs, Hydra raises the errors it would print and exit 1 on."""
    before = os.environ.get(_FULL_ERROR)
    _USERS.append(before)
    os.environ[_FULL_ERROR] = "1"
    try:
        yield
    finally:
        _USERS.pop()
        if before is None:
            os.environ.pop(_FULL_ERROR, None)
        else:
            os.environ[_FULL_ERROR] = before


def config_error_line(error: BaseException) -> str:
    """One line for a Hydra or OmegaConf error: the setting, where it was given, the fix.

    Values that look like keys are redacted, as everywhere else.
    """
    return redact_text(" ".join(_with_fix(error, _line(error)).split()))


def _with_fix(error: BaseException, line: str) -> str:
    """``line``, or for the mistakes a new user makes most, what to do instead: a list of
    values without ``-m``, a launcher whose plugin is not installed."""
    first = _first_line(str(error))
    ambiguous = _AMBIGUOUS.match(first)
    if ambiguous:
        return _several_values(ambiguous["override"])
    launcher = _NO_LAUNCHER.search(first)
    if launcher:
        name = launcher["name"]
        install = LAUNCHER_INSTALLS.get(name)
        if install:
            return f"{line}; hydra/launcher={name} needs its Hydra plugin: {install}"
        return f"{line}; hydra/launcher={name} needs its Hydra launcher plugin installed here"
    return line


def _several_values(override: str) -> str:
    """A comma list given to a run of one cell: a sweep missing its ``-m``, most likely."""
    key, _, value = override.partition("=")
    text = (
        f"{override} gives several values, which only a sweep takes: add -m to run one cell "
        f"for each (mmjudge sweep -m {override} …)"
    )
    if "." in key:
        # a setting, not a config group: a list or one value holding a comma may be meant
        text += f"; for a list write {key}=[{value}], for one value quote it: {key}='{value}'"
    return text


def _line(error: BaseException) -> str:
    cause = error.__cause__ if isinstance(error.__cause__, OmegaConfBaseException) else None
    omega = error if isinstance(error, OmegaConfBaseException) else cause
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    where = ""
    message = ""
    full_key = ""
    if omega is not None:
        message = _first_line(str(omega.msg or omega))
        full_key = str(omega.full_key or "")
    if lines:
        merging = _MERGING.match(lines[0])
        in_file = _IN_FILE.match(lines[0])
        if merging:
            where = f"the override {merging['override']}"
        elif in_file:
            where = f"config file {in_file['file']}.yaml"
            if not message and len(lines) > 1:
                message = lines[1]
    for line in lines:
        if line.startswith("full_key:") and not full_key:
            full_key = line.removeprefix("full_key:").strip()
    if not message:
        if isinstance(error, OverrideParseException):
            return f"an override cannot be read: {_joined(str(error))}"
        return _joined(str(error))
    return _worded(message, full_key, where)


def _worded(message: str, full_key: str, where: str) -> str:
    """The message with its setting, its source and the fix."""
    at = f" (in {where})" if where else ""
    not_in = _NOT_IN.match(message)
    if not_in and full_key:
        credential = destination_problem(full_key, ())
        if credential is not None:
            return f"refusing config setting '{full_key}'{at}: {credential}; {FIX}"
        unknown = unknown_key(full_key)
        if unknown is not None:
            return f"{unknown}{at}"
        return f"unknown setting '{full_key}'{at}; remove it or check its spelling"
    convert = _CONVERT.search(message)
    if convert and full_key:
        takes = _TAKES.get(convert["type"], convert["type"])
        return f"{full_key}: {message}{at}; {full_key} takes {takes}"
    if full_key:
        return f"{full_key}: {message}{at}; fix the value"
    return f"{message}{at}"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text)


def _joined(text: str) -> str:
    """Any other message, its lines joined; an indented list under a line ending in ``:``
    (Hydra's available options) comma-separated."""
    parts: list[str] = []
    listing = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("Config search path"):
            break  # Hydra's search path: where it looked, not what is wrong
        if not line or _NOISE.search(line):
            continue
        if listing and raw[:1].isspace():
            parts[-1] += (" " if parts[-1].endswith(":") else ", ") + line
            continue
        parts.append(line)
        listing = line.endswith(":")
    return "; ".join(parts) if parts else "the configuration could not be composed"


def config_file_error_line(error: BaseException, config_dir: Path | None) -> str:
    """One line for a config file that cannot be read (:data:`CONFIG_FILE_ERRORS`): the
    file, the line and column, what is wrong and the fix. A file that is not UTF-8 text is
    found in ``config_dir`` (the decoder does not name it)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        where = f"config file {mark.name}, line {mark.line + 1}, column {mark.column + 1}"
        problem = " ".join(str(error.problem or error.context or "not YAML").split())
        if "'\\t'" in problem:
            fix = "indent with spaces: YAML does not allow tabs there"
        else:
            fix = (
                "fix the YAML there (one `key: value` a line, nested keys indented with "
                "spaces, brackets and quotes closed)"
            )
        return f"{where}: {problem}; {fix}"
    if isinstance(error, UnicodeDecodeError):
        found = _not_utf8(config_dir)
        if found is not None:
            path, bad = found
            return (
                f"config file {path} is not UTF-8 text (byte 0x{bad.object[bad.start]:02x} at "
                f"position {bad.start}); save it as UTF-8"
            )
        return f"a config file is not UTF-8 text ({error.reason}); save it as UTF-8"
    return f"a config file cannot be read ({type(error).__name__}: {error}); fix it"


def _not_utf8(config_dir: Path | None) -> tuple[Path, UnicodeDecodeError] | None:
    """The first YAML file in ``config_dir`` that is not UTF-8 text, with the decoder's
    error."""
    if config_dir is None or not config_dir.is_dir():
        return None
    for path in sorted(config_dir.rglob("*.yaml")):
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            return path, error
        except OSError:
            continue
    return None
