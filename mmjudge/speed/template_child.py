"""The SDK's request template made in a child started with the command, so that the first
call does not wait for the SDK to load.

``import openai`` takes about a second (``import anthropic`` about two), and a judge
cannot send its first request before the SDK has shown what that request looks like
(:mod:`mmjudge.speed.wire`): URL, headers, body encoding. Composing the config and checking
the dataset take about as long, but they need the config, which is only known once Hydra has
composed it. So ``python -m mmjudge.sweep`` reads
its command line for the model it will most likely use and, when that model's judge talks to
an SDK that can hand over its template, forks a child at once (:func:`start_for_argv`). The
child imports the SDK on the other core while this process composes the config. When the cell
knows its judge (:func:`request`), the child builds the judge's SDK client from the same
settings (:class:`~mmjudge.judges.sdk_clients.ClientSpec`, which the judge builds its own
client from) and environment, lets the SDK build a request (which it never sends) and sends
back its template.
The judge's calls then go out through :class:`~mmjudge.speed.wire.WireSender` from the first
one, and this process imports the SDK only if it needs to build one of the SDK's errors.

This is a guess that is only ever used when it was right: a template is taken only by a judge
whose request settings (:meth:`~mmjudge.judges.http.SDKJudge.ahead_request`) and environment are
the ones the child was given (:func:`take`); anything else (a
model chosen otherwise, an error in the child, ``-m``, a dry run, ``hydra.verbose``, a run
answered from the cache) leaves the judge to have the SDK build its template at its first
call, exactly as without the child, and the child is stopped (:func:`release`).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import sys
from pathlib import Path
from typing import IO, Any, NoReturn

from mmjudge.errors import ConfigError
from mmjudge.speed import fast_path_on
from mmjudge.speed.pipes import die_with_parent, read_message, write_message

#: Providers whose judges can take a template made ahead, and the SDK each loads.
_SDKS = {"openai": "openai", "openai_compatible": "openai", "anthropic": "anthropic"}

#: Seconds to wait for the template once asked (the child has usually sent it by then): a
#: child that hangs (a stalled import, say) leaves the judge on the SDK's path instead.
WAIT_S = 20.0

#: Command-line words after which no single cell with a known model runs.
_NOT_ONE_CELL = ("-m", "--multirun", "-h", "--help", "--hydra-help", "-c", "--cfg", "--info")


class _Child:
    """The forked child, and what this process has asked of it."""

    def __init__(self, pid: int, sdk: str, outbox: IO[bytes], inbox: IO[bytes]) -> None:
        self.pid = pid
        self.sdk = sdk
        self.outbox = outbox
        self.inbox = inbox
        self.asked_for: tuple[tuple[Any, ...], dict[str, str]] | None = None
        """What the child was asked for (the judge's :meth:`ahead_request`), and the
        environment it was asked in."""
        self.template: tuple[Any, ...] | None = None
        self.done = False


_child: _Child | None = None


def start_for_argv(argv: list[str], conf_dir: Path) -> None:
    """Fork the child for the model ``argv`` selects (see the module's docstring), where one
    applies; does nothing otherwise."""
    global _child
    if _child is not None or not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return
    try:
        if not fast_path_on():
            return
    except ConfigError:
        return  # refused in one line once the run starts
    sdk = guess_sdk(argv, conf_dir)
    if sdk is None:
        return
    from_parent, to_child = os.pipe()
    from_child, to_parent = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        die_with_parent(parent)
        os.close(to_child)
        os.close(from_child)
        _serve(sdk, from_parent, to_parent)
    os.close(from_parent)
    os.close(to_parent)
    _child = _Child(pid, sdk, os.fdopen(to_child, "wb"), os.fdopen(from_child, "rb"))


def guess_sdk(argv: list[str], conf_dir: Path) -> str | None:
    """The SDK of the one model ``argv`` runs, read from the command line and the model's
    config file; None when it is not one cell, or not a model with an SDK template."""
    if any(arg in _NOT_ONE_CELL or arg.startswith("hydra.verbose") for arg in argv):
        return None
    settings = dict(arg.split("=", 1) for arg in argv if "=" in arg and not arg.startswith("-"))
    if settings.get("runner.dry_run", "").lower() == "true":
        return None
    provider = settings.get("model.provider")
    if provider is None:
        name = settings.get("model")
        if not name or not re.fullmatch(r"[\w.-]+", name):
            return None
        text = _model_config(name, [*_user_config_dirs(argv, settings), conf_dir])
        found = re.search(r"^provider:\s*['\"]?([\w-]+)", text or "", re.MULTILINE)
        provider = found.group(1) if found else None
    return _SDKS.get(provider or "")


def _user_config_dirs(argv: list[str], settings: dict[str, str]) -> list[Path]:
    """Config folders the command line adds to the project's: ``--config-dir``/``-cd`` and
    the ``file://`` entries of ``hydra.searchpath``."""
    folders = []
    for flag, value in zip(argv, [*argv[1:], ""], strict=True):
        if flag in ("--config-dir", "-cd") and value:
            folders.append(value)
        elif flag.startswith(("--config-dir=", "-cd=")):
            folders.append(flag.split("=", 1)[1])
    for entry in settings.get("hydra.searchpath", "").strip("[]").split(","):
        entry = entry.strip().strip("'\"")
        if entry.startswith("file://"):
            folders.append(entry[len("file://") :])
    return [Path(folder).expanduser() for folder in folders if folder]


def _model_config(name: str, folders: list[Path]) -> str | None:
    """The text of the first ``model/<name>.yaml`` among ``folders``."""
    for folder in folders:
        try:
            return (folder / "model" / f"{name}.yaml").read_text(encoding="utf-8")
        except OSError:
            continue
    return None


def request(judge: Any) -> bool:
    """Ask the child for ``judge``'s request template; False (and the child stopped) when
    there is no child for this judge's SDK."""
    child = _child
    if child is None or child.asked_for is not None:
        return False
    asked = judge.ahead_request()
    if asked is None or asked[0] != child.sdk:
        release()
        return False
    environ = dict(os.environ)
    try:
        write_message(child.outbox, (asked, environ))
    except (OSError, ValueError):
        release()
        return False
    child.asked_for = (asked, environ)
    return True


def receive() -> bool:
    """Wait for the template asked for; whether it came (the child is reaped either way)."""
    child = _child
    if child is None or child.asked_for is None:
        return False
    if not child.done:
        try:
            ready, _, _ = select.select([child.inbox], [], [], WAIT_S)
            answer = read_message(child.inbox) if ready else None
        except Exception:
            answer = None
        child.template = answer if isinstance(answer, tuple) else None
        _stop(child)
    return child.template is not None


def take(judge: Any) -> tuple[Any, ...] | None:
    """The template made for a judge like ``judge`` (same request settings, same
    environment), waiting for it if it is on its way; None for any other judge, or when
    none came."""
    child = _child
    if child is None or child.asked_for is None:
        return None
    asked, environ = child.asked_for
    if judge.ahead_request() != asked or not receive() or dict(os.environ) != environ:
        return None
    return child.template


def release() -> None:
    """Stop the child if nothing was asked of it yet (a child asked for a template is stopped
    once it has answered)."""
    child = _child
    if child is not None and child.asked_for is None:
        _stop(child)


def _stop(child: _Child) -> None:
    if child.done:
        return
    child.done = True
    for pipe in (child.outbox, child.inbox):
        with contextlib.suppress(OSError):
            pipe.close()
    with contextlib.suppress(OSError):
        os.kill(child.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(child.pid, 0)


def _serve(sdk: str, inbox_fd: int, outbox_fd: int) -> NoReturn:
    """The child: import the SDK, wait for the judge's request settings, send back its
    template (or None); leave without running any exit handler or flushing anything
    inherited."""
    code = 1
    try:
        import logging
        import warnings
        from importlib import import_module

        logging.disable(logging.CRITICAL)
        warnings.simplefilter("ignore")
        module = import_module(sdk)
        import asyncio

        from mmjudge.speed import wire  # noqa: F401 - loaded before the request arrives

        with os.fdopen(inbox_fd, "rb") as inbox, os.fdopen(outbox_fd, "wb") as outbox:
            asked, environ = read_message(inbox)
            os.environ.clear()
            os.environ.update(environ)
            write_message(outbox, asyncio.run(_template_for(module, *asked)))
        code = 0
    except BaseException:  # any failure: this process's judge uses the SDK's path
        pass
    finally:
        os._exit(code)


async def _template_for(
    module: Any, sdk: str, spec: Any, path: str, body: dict[str, Any]
) -> tuple[Any, ...] | None:
    """The template of the request the SDK builds for ``body`` with a client built from
    ``spec`` (in the child); None where the judge's calls stay on the SDK's path."""
    from mmjudge.speed.wire import WireSender

    client, aiohttp = spec.build(module)
    if not aiohttp or not WireSender.usable(client):
        return None
    wire = WireSender(sdk, lambda: client, path, connections=None, timeout_s=spec.timeout_s)
    return await wire.capture(body)
