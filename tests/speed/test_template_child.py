"""A judge's request template made ahead in a child process
(:mod:`mmjudge.speed.template_child`): the first call then skips the SDK, yet puts the SDK's
own request on the wire and gives the SDK's own answers and errors; the template is only ever
used by the judge it was made for."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from mmjudge.judges.http import SDKJudge
from mmjudge.locations import CONFIG_DIR
from mmjudge.speed import template_child
from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.helpers import REPO_ROOT
from tests.judges.test_providers import ANTHROPIC_KEY, OPENAI_KEY, _keys  # noqa: F401
from tests.speed.test_wire import (
    BEHAVIOURS,
    PER_SEND,
    PROVIDERS,
    _seen,
    judge_for,
    request,
    run,
    sent_key,
    sent_to,
)

CONF = CONFIG_DIR


def template_of(judge: SDKJudge) -> tuple[Any, ...] | None:
    """The template the child would send for ``judge`` (built here, with no fork)."""
    from importlib import import_module

    asked = judge.ahead_request()
    assert asked is not None
    return asyncio.run(template_child._template_for(import_module(asked[0]), *asked))


def preset_judge(
    server: LoopbackServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> SDKJudge:
    """A judge whose template was made template_child, as a sweep's judge gets it."""
    judge = judge_for(server, provider)
    parts = template_of(judge_for(server, provider))
    monkeypatch.setattr(template_child, "take", lambda asking: parts if asking is judge else None)
    return judge


def test_the_first_call_skips_the_sdk_and_sends_the_sdks_request(
    loopback: LoopbackServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (through_sdk,) = run(judge_for(loopback, provider), request())
    judge = preset_judge(loopback, provider, monkeypatch)
    (fast,) = run(judge, request())
    assert judge._wire is not None and judge._wire.fast_calls == 1
    assert judge._built is None  # the SDK's client was never needed
    sdk_sent, fast_sent = sent_to(loopback, provider)
    assert fast_sent.body == sdk_sent.body and fast_sent.size == sdk_sent.size
    kept = {k: v for k, v in sdk_sent.headers.items() if k not in PER_SEND | {"content-length"}}
    assert {k: fast_sent.headers.get(k) for k in kept} == kept
    assert fast.text == through_sdk.text and fast.usage == through_sdk.usage


@pytest.mark.parametrize("behaviour", BEHAVIOURS, ids=lambda b: f"{b.action}-{b.status}")
def test_answers_and_errors_of_a_first_call_are_the_sdks(
    loopback: LoopbackServer, provider: str, monkeypatch: pytest.MonkeyPatch, behaviour: Behaviour
) -> None:
    sdk_judge = judge_for(loopback, provider)
    loopback.script(behaviour)
    (through_sdk,) = run(sdk_judge, request())
    judge = preset_judge(loopback, provider, monkeypatch)
    loopback.script(behaviour)
    (fast,) = run(judge, request())
    assert judge._wire is not None and judge._wire.fast_calls == 1
    assert _seen(judge, fast) == _seen(sdk_judge, through_sdk)


def test_a_client_the_wire_cannot_serve_gets_no_template(
    loopback: LoopbackServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses
    from importlib import import_module

    from mmjudge.speed.wire import WireSender

    sdk, spec, path, body = judge_for(loopback, provider).ahead_request() or ()
    on_httpx = dataclasses.replace(spec, use_aiohttp=False)  # the SDK's own httpx transport
    assert (
        asyncio.run(template_child._template_for(import_module(sdk), sdk, on_httpx, path, body))
        is None
    )
    # credentials made per request (workload identity, custom auth): never off the SDK's path
    monkeypatch.setattr(WireSender, "usable", staticmethod(lambda client: False))
    assert template_of(judge_for(loopback, provider)) is None


@pytest.mark.parametrize(
    ("argv", "sdk"),
    [
        (["model=gpt4o_mini", "runner.concurrency=64"], "openai"),
        (["model=vllm_local", "dataset=demo_fashion"], "openai"),
        (["model=lexical"], None),
        ([], None),  # the default model is local
        (["model=claude3_haiku"], "anthropic"),
        (["model=lexical", "model.provider=openai"], "openai"),
        (["model=gpt4o_mini", "model.provider=anthropic"], "anthropic"),
        (["model=gpt4o_mini", "model.provider=embedding"], None),
        (["-m", "model=gpt4o_mini"], None),
        (["model=gpt4o_mini", "runner.dry_run=true"], None),
        (["model=gpt4o_mini", "hydra.verbose=true"], None),
        (["model=gpt4o_mini", "--cfg", "job"], None),
        (["model=no_such_model"], None),
        (["model=../../etc/passwd"], None),
    ],
)
def test_the_sdk_is_guessed_from_the_command_line(argv: list[str], sdk: str | None) -> None:
    assert template_child.guess_sdk(argv, CONF) == sdk


@pytest.mark.parametrize(
    "argv",
    [
        ["--config-dir", "{dir}", "model=my_claude"],
        ["-cd", "{dir}", "model=my_claude"],
        ["--config-dir={dir}", "model=my_claude"],
        ["model=my_claude", "hydra.searchpath=[file://{dir}]"],
        ["model=my_claude", "hydra.searchpath=['pkg://elsewhere','file://{dir}']"],
    ],
)
def test_a_model_in_the_users_own_config_folder_is_found(argv: list[str], tmp_path: Path) -> None:
    folder = tmp_path / "my_conf"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "my_claude.yaml").write_text("name: my_claude\nprovider: anthropic\n")
    assert template_child.guess_sdk([arg.format(dir=folder) for arg in argv], CONF) == "anthropic"
    assert template_child.guess_sdk(["model=my_claude"], CONF) is None  # not without the folder


SCRIPT = textwrap.dedent(
    """
    import asyncio, json, os, sys
    from mmjudge.locations import CONFIG_DIR
    from mmjudge.speed import template_child
    provider, model, sdk = sys.argv[2:5]
    template_child.start_for_argv([f"model={model}"], CONFIG_DIR)
    from mmjudge.config import ModelConfig
    from mmjudge.judges.registry import create_judge
    from mmjudge.records import JudgeRequest

    def judge(**changes):
        settings = dict(name=model, provider=provider, model_id="m-1", max_tokens=20,
                        base_url=sys.argv[1])
        settings.update(changes)
        return create_judge(ModelConfig(**settings))

    async def main():
        asked = judge()
        assert template_child.request(asked)
        other = judge(max_tokens=21)
        taken_by_other = template_child.take(other) is not None
        calls, loaded = [], []
        for item in (asked, other):
            try:
                answer = await item.generate(JudgeRequest(item_key="k", prompt="Grade it."))
                calls.append(answer.text)
            except Exception as error:
                calls.append(type(error).__name__)
            finally:
                await item.aclose()
            loaded.append(sdk in sys.modules)
        return {
            "taken_by_other": taken_by_other,
            "fast": asked._wire is not None and asked._wire.fast_calls == 1,
            "calls": calls,
            "sdk_loaded": loaded,
            "child_reaped": template_child._child.done,
        }

    print(json.dumps(asyncio.run(main())))
    """
)


#: A model of each SDK's in conf/model, and its base URL at the loopback server.
CHILD_CASES = {
    "openai": ("gpt4o_mini", lambda server: server.openai_base_url),
    "anthropic": ("claude3_haiku", lambda server: server.anthropic_base_url),
}


def run_script(script: str, server: LoopbackServer, provider: str) -> dict[str, Any]:
    """What ``script`` printed last (JSON), run in a new process for ``provider``'s model of
    :data:`CHILD_CASES` with the test keys; its arguments: base URL, provider, model, SDK."""
    env = {**os.environ, "OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    model, base_url = CHILD_CASES[provider]
    result = subprocess.run(
        [sys.executable, "-c", script, base_url(server), provider, model, provider],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return seen


@pytest.mark.slow
def test_a_child_started_with_the_command_hands_over_the_template(
    loopback: LoopbackServer, provider: str
) -> None:
    loopback.script(Behaviour.reply("2"), Behaviour.error(401, "Incorrect API key provided"))
    seen = run_script(SCRIPT, loopback, provider)
    assert seen["taken_by_other"] is False  # other settings: not this template
    assert seen["fast"] is True and seen["child_reaped"] is True
    # the first judge's call went out with no SDK loaded here; the other judge is on the
    # SDK's path (a template made for other settings is not its own), and gets its error
    assert seen["calls"] == ["2", "AuthenticationError"]
    assert seen["sdk_loaded"] == [False, True]
    first, second = sent_to(loopback, provider)
    assert first.headers["user-agent"] == second.headers["user-agent"]
    assert sent_key(first, provider) == PROVIDERS[provider][3][1]
    assert first.body == {**second.body, "max_tokens": 20}


@pytest.mark.slow
def test_a_child_nobody_asks_is_stopped() -> None:
    script = textwrap.dedent(
        """
        import os
        from mmjudge.locations import CONFIG_DIR
        from mmjudge.speed import template_child
        template_child.start_for_argv(["model=gpt4o_mini"], CONFIG_DIR)
        pid = template_child._child.pid
        template_child.release()
        try:
            os.kill(pid, 0)
            print("alive")
        except ProcessLookupError:
            print("gone")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "gone", result.stderr


def test_a_child_that_never_answers_is_given_up_on(monkeypatch: pytest.MonkeyPatch) -> None:
    silent = subprocess.Popen(["sleep", "60"])
    to_child, from_child = os.pipe(), os.pipe()
    child = template_child._Child(
        silent.pid, "openai", os.fdopen(to_child[1], "wb"), os.fdopen(from_child[0], "rb")
    )
    child.asked_for = (("openai",), dict(os.environ))
    monkeypatch.setattr(template_child, "_child", child)
    monkeypatch.setattr(template_child, "WAIT_S", 0.2)
    try:
        assert template_child.receive() is False
        assert child.done and silent.poll() is not None  # stopped and reaped
    finally:
        silent.kill()
        for fd in (to_child[0], from_child[1]):
            os.close(fd)


ERROR_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, threading
    from mmjudge.locations import CONFIG_DIR
    from mmjudge.speed import template_child
    base_url, provider, model, sdk = sys.argv[1:5]
    template_child.start_for_argv([f"model={model}"], CONFIG_DIR)
    from mmjudge.config import ModelConfig
    from mmjudge.judges.registry import create_judge
    from mmjudge.records import JudgeRequest

    WATCHED = {sdk, "httpx2", "httpcore2", "anyio", "h11", "truststore"}
    imported = {"main": [], "other": []}

    class Watch:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in WATCHED:
                main = threading.current_thread() is threading.main_thread()
                imported["main" if main else "other"].append(name)
            return None

    async def main():
        judge = create_judge(ModelConfig(name=model, provider=provider, model_id="m-1",
                                         max_tokens=20, base_url=base_url))
        sys.meta_path.insert(0, Watch())  # after the judge's check that the SDK is installed
        assert template_child.request(judge)
        ask = lambda: judge.generate(JudgeRequest(item_key="k", prompt="Grade it."))
        timeout = judge.classify_error(TimeoutError("no answer"))  # not one of the SDK's
        try:
            await ask()
            failed = await asyncio.gather(ask(), ask(), return_exceptions=True)
        finally:
            await judge.aclose()
        return {
            "errors": [type(error).__name__ for error in failed],
            "retryable": [judge.classify_error(error).retryable for error in failed],
            "fast_calls": judge._wire.fast_calls,
            "timeout_retryable": timeout.retryable,
            "imported_on_main_thread": imported["main"],
            "sdk_imported_elsewhere": sdk in imported["other"],
        }

    print(json.dumps(asyncio.run(main())))
    """
)


@pytest.mark.slow
def test_the_first_error_loads_the_sdk_off_the_event_loop(
    loopback: LoopbackServer, provider: str
) -> None:
    # Two calls meet the run's first rate limit together: the SDK's import for their errors
    # runs once, in a thread (with its client, which builds status errors), and both get the
    # SDK's own error. A timeout of the runner's before that (not an SDK error) imports nothing.
    loopback.script(Behaviour.reply("2"), Behaviour.rate_limit(), Behaviour.rate_limit())
    seen = run_script(ERROR_SCRIPT, loopback, provider)
    assert seen["errors"] == ["RateLimitError", "RateLimitError"]
    assert seen["retryable"] == [True, True]
    assert seen["fast_calls"] == 3
    assert seen["timeout_retryable"] is False  # as on the SDK's path: the runner decides
    assert seen["sdk_imported_elsewhere"] is True
    assert seen["imported_on_main_thread"] == []
