"""Shared fixtures and collection rules.

- ``loopback``: the loopback server that speaks the providers' wire formats.
- ``provider``: each SDK whose calls can take the fast request path, by provider name.
- ``conversions``: the HTML values this process converts to text.
- Tests marked ``live`` call real provider APIs: they run only when the ``-m`` expression
  names them (``pytest -m live``); any other selection, ``-m "not slow"`` included, leaves
  them out.
- The running test is recorded so that the sweep helpers in ``tests/helpers.py`` can insist
  that a test starting a sweep subprocess is marked ``slow``; more generally, a test that
  starts a Python process (the interpreter or the ``mmjudge`` command) must be marked
  ``slow``: each costs a fresh interpreter and its imports, a second or more, which keeps
  ``pytest -m "not slow"`` fast as tests are added.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import RUNNING_TEST

# No test may reach the Hugging Face hub (nothing is downloaded; every model a test uses is
# built in it or bundled): offline, a name that is not a local folder fails at once instead
# of waiting on the network, in this process and in every process a test starts.
os.environ["HF_HUB_OFFLINE"] = "1"


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    """A started loopback server on 127.0.0.1 (a free port), stopped after the test."""
    server = LoopbackServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def conversions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The HTML values this process converts to text (html-text counted): the engine's and
    the check's child's tests see where conversion happened."""
    import html_text

    seen: list[str] = []
    real = html_text.extract_text

    def counting(value: str, *args: object, **kwargs: object) -> str:
        seen.append(value)
        return str(real(value, *args, **kwargs))  # type: ignore[arg-type]

    monkeypatch.setattr(html_text, "extract_text", counting)
    return seen


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    """Each SDK whose calls can skip most of its per-call machinery
    (:mod:`mmjudge.speed.wire`), by provider name."""
    return str(request.param)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "live" in (config.getoption("markexpr") or ""):
        return
    live = [item for item in items if item.get_closest_marker("live") is not None]
    if live:
        config.hook.pytest_deselected(items=live)
        items[:] = [item for item in items if item.get_closest_marker("live") is None]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    token = RUNNING_TEST.set(item)
    try:
        return (yield)
    finally:
        RUNNING_TEST.reset(token)


_PYTHON = os.path.realpath(sys.executable)
_COMMANDS = {"mmjudge"}


def _starts_python(executable: object, args: object) -> bool:
    program = executable if executable is not None else args
    if isinstance(program, (list, tuple)):
        program = program[0] if program else None
    if not isinstance(program, (str, bytes, os.PathLike)):
        return False  # a shell string: left to the test's own judgement
    path = Path(os.fsdecode(program))
    return (
        os.path.realpath(path) == _PYTHON
        or path.name.startswith("python")
        or path.name in _COMMANDS
    )


def _refuse_python_processes_outside_slow(event: str, args: tuple[object, ...]) -> None:
    if event != "subprocess.Popen":
        return
    item = RUNNING_TEST.get()
    if item is None or item.get_closest_marker("slow") is not None:
        return
    if _starts_python(args[0], args[1]):
        raise AssertionError(
            f"{item.nodeid} starts a Python process: mark it @pytest.mark.slow so that "
            "pytest -m 'not slow' stays fast"
        )


sys.addaudithook(_refuse_python_processes_outside_slow)
