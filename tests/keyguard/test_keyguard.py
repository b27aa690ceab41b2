"""Secrets never reach a disk: what mmjudge.keyguard refuses, what it lets through, and what it
redacts. Every secret here is made at random when the test runs; none is written to the
repository, and the runs that handle one work in temporary folders."""

from __future__ import annotations

import io
import json
import logging
import secrets
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from mmjudge.keyguard import (
    REDACTED,
    RedactingFilter,
    check_config,
    check_overrides,
    credential_setting,
    credential_variable,
    redact,
    redact_text,
    resolved_config,
    secret_values,
)
from mmjudge.locations import CONFIG_DIR
from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.helpers import CONF_DIR, compose_config, compose_option, shipped_options


def fresh(prefix: str = "pl") -> str:
    """A random secret that is not shaped like any provider's key."""
    return prefix + secrets.token_hex(16)


@pytest.fixture
def live_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A random value in OPENAI_API_KEY, as the key a run would call the provider with."""
    key = fresh("lk")
    monkeypatch.setenv("OPENAI_API_KEY", key)
    return key


def compose_with_hydra(overrides: list[str]) -> object:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name="config", overrides=overrides, return_hydra_config=True)


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["api_key", "apikey", "key", "x-api-key", "Authorization", "auth", "default_headers",
     "extra_headers", "headers", "token", "access_token", "client_secret", "password",
     "db_password", "secret_access_key", "cookies", "proxy_auth", "credentials"],
)  # fmt: skip
def test_settings_named_like_credentials(name: str) -> None:
    assert credential_setting(name)


@pytest.mark.parametrize(
    "name",
    ["api_key_env", "price_key", "max_tokens", "tokens_per_minute", "max_text_tokens",
     "base_url", "model_id", "context_tokens", "forecast_output_tokens", "cache_path"],
)  # fmt: skip
def test_ordinary_setting_names(name: str) -> None:
    assert not credential_setting(name)


def test_variables_named_like_credentials() -> None:
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GH_PAT"):
        assert credential_variable(name), name
    for name in ("PATH", "TOKENIZERS_PARALLELISM", "OPENAI_BASE_URL", "HOME", "KEYBOARD"):
        assert not credential_variable(name), name


def test_secret_values_skip_short_values_and_paths_and_follow_api_key_env() -> None:
    env = {
        "OPENAI_API_KEY": "lk0123456789abcdef",
        "SOME_TOKEN": "1",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/me/creds.json",
        "MY_LLM": "custom-secret-value",
        "OTHER": "not-a-credential-value",
    }
    assert secret_values(env=env) == {"lk0123456789abcdef": "OPENAI_API_KEY"}
    assert secret_values(["MY_LLM"], env=env)["custom-secret-value"] == "MY_LLM"


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "+hydra.job.env_set.OPENAI_API_KEY={s}",
        "hydra.job.env_set={{OPENAI_API_KEY:{s}}}",
        "+model.options.default_headers={{Authorization:'Bearer {s}'}}",
        "++model.options={{}},{{default_headers:{{x-api-key:{s}}}}}",
        "+model.options.auth={s}",
        "+model.options.api_key={s}",
        "+model.options.client_secret={s}",
        "model.base_url='http://127.0.0.1:9/v1?key={s}'",
        "model.base_url='http://user:{s}@127.0.0.1:9/v1'",
    ],
)
def test_overrides_refused_by_destination_or_shape(template: str) -> None:
    secret = fresh()
    problem = check_overrides(["model=gpt4o_mini", template.format(s=secret)], secrets={})
    assert problem is not None and problem.startswith("refusing the override")
    assert secret not in problem


def test_env_set_of_the_variable_a_model_reads_its_key_from_is_refused() -> None:
    arguments = ["model.api_key_env=MY_LLM", f"+hydra.job.env_set.MY_LLM={fresh()}"]
    problem = check_overrides(arguments, secrets={})
    assert problem is not None and "MY_LLM" in problem and "environment" in problem


def test_overrides_refused_by_value(live_key: str) -> None:
    for argument in (
        f"+model.options.note={live_key}",
        f"model.name=x{live_key}y",
        f"model=gpt4o_mini,{live_key}",
        "+model.options.note=${oc.env:OPENAI_API_KEY}",
    ):
        problem = check_overrides([argument])
        assert problem is not None and "OPENAI_API_KEY" in problem, argument
        assert live_key not in problem


def test_ordinary_overrides_pass(live_key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIVIAL_TOKEN", "1")
    arguments = [
        "-m",
        "--config-dir=/tmp/conf",
        "model=gpt4o,gpt4o_mini",
        "model.api_key_env=OPENAI_API_KEY",
        "model.base_url=http://127.0.0.1:8000/v1",
        "model.price_key=gpt-4o-2024-05-13",
        "+hydra.job.env_set.CUDA_VISIBLE_DEVICES=0",
        "~model.options.auth",
        "hydra/launcher=joblib",
        "dataset.limit=1",
        "dataset.max_text_tokens=2000",
        "+model.options.reasoning_effort=low",
    ]
    assert check_overrides(arguments) is None


# -- composed configs --------------------------------------------------------------------------


@pytest.mark.slow  # over a second: every shipped option composed
def test_every_config_option_passes_the_guard_with_hydras_settings(live_key: str) -> None:
    for group, option in shipped_options():
        cfg = compose_option(group, option, hydra=True)
        assert check_config(cfg) is None, f"{group}={option}"


def test_composed_config_refused_by_resolved_value(live_key: str) -> None:
    cfg = compose_config(["+model.options.note=${oc.env:OPENAI_API_KEY}"])
    problem = check_config(cfg)
    assert problem is not None and "'model.options.note'" in problem
    assert live_key not in problem


def test_composed_env_set_is_refused(live_key: str) -> None:
    cfg = compose_with_hydra([f"+hydra.job.env_set.ANTHROPIC_API_KEY={fresh()}"])
    problem = check_config(cfg)
    assert problem is not None and "ANTHROPIC_API_KEY" in problem


def test_config_value_holding_a_key_shape_is_refused() -> None:
    key = "sk-" + secrets.token_hex(16)
    problem = check_config({"model": {"base_url": f"http://127.0.0.1:9/v1?k={key}"}}, secrets={})
    assert problem is not None and "'model.base_url'" in problem and key not in problem


# -- redaction ---------------------------------------------------------------------------------


def test_redact_by_path_and_by_value(live_key: str) -> None:
    planted = fresh()
    tree = {
        "model": {
            "options": {"auth": planted, "note": f"a {live_key} b", "k1": 1.2},
            "default_headers": {"Authorization": f"Bearer {planted}"},
            "base_url": f"http://user:{planted}@127.0.0.1:9/v1?token={planted}&x=1",
            "api_key_env": "OPENAI_API_KEY",
        },
        "hydra": {
            "job": {"env_set": {"OPENAI_API_KEY": planted, "CUDA_VISIBLE_DEVICES": "0"}},
            "overrides": {"task": [f"+model.options.auth={planted}", "model=gpt4o"]},
        },
    }
    clean = redact(tree)
    assert planted not in json.dumps(clean) and live_key not in json.dumps(clean)
    model = clean["model"]
    assert model["options"] == {"auth": REDACTED, "note": f"a {REDACTED} b", "k1": 1.2}
    assert model["default_headers"] == REDACTED
    assert model["base_url"] == f"http://{REDACTED}@127.0.0.1:9/v1?token={REDACTED}&x=1"
    assert model["api_key_env"] == "OPENAI_API_KEY"
    assert clean["hydra"]["job"]["env_set"] == {
        "OPENAI_API_KEY": REDACTED,
        "CUDA_VISIBLE_DEVICES": "0",
    }
    assert clean["hydra"]["overrides"]["task"] == [f"+model.options.auth={REDACTED}", "model=gpt4o"]


def test_redact_text_recognises_key_shapes_without_the_environment() -> None:
    key = "sk-" + secrets.token_hex(16)
    assert redact_text(f"rejected {key}, Bearer {key}", secrets={}).count(key) == 0
    for ordinary in ("mask-rcnn_resnet50_fpn_v2_coco", "task-relevance-graded-0123"):
        assert redact_text(ordinary, secrets={}) == ordinary
        assert check_overrides([f"+model.options.note={ordinary}"], secrets={}) is None


def test_summary_config_is_redacted(live_key: str) -> None:
    planted = fresh()
    cfg = compose_config([f"+model.options.auth={planted}", f"+model.options.note={live_key}"])
    options = resolved_config(cfg)["model"]["options"]
    assert options["auth"] == REDACTED and options["note"] == REDACTED


def test_log_records_are_redacted(live_key: str) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter(secret_values()))
    logger = logging.getLogger("mmjudge.test_keyguard")
    logger.addHandler(handler)
    try:
        logger.warning("calling with %s", live_key)
        try:
            raise ValueError(f"bad key {live_key}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert live_key not in text and text.count(REDACTED) >= 2 and "ValueError" in text


def test_provider_messages_are_redacted(live_key: str) -> None:
    from mmjudge.judges.http import provider_message

    echo = Exception("400")
    echo.body = {"error": {"message": f"invalid key {live_key} from Bearer {live_key}"}}  # type: ignore[attr-defined]
    assert live_key not in provider_message(echo)


def test_error_rows_do_not_repeat_a_key_the_server_echoes(
    tmp_path: Path, live_key: str, loopback: LoopbackServer
) -> None:
    from mmjudge.engine.cell import run_cell

    loopback.set_default(Behaviour.error(500, message=f"upstream said: Bearer {live_key}"))
    cfg = compose_config(
        [
            "model=gpt4o_mini",
            f"model.base_url={loopback.openai_base_url}",
            "dataset.limit=2",
            "runner.max_retries=0",
            "runner.progress=false",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.image_cache={tmp_path / 'images'}",
        ]
    )
    run_dir = tmp_path / "run"
    summary = run_cell(cfg, run_dir)
    rows = (run_dir / "judgments.jsonl").read_text()
    assert summary.n_errors == 2 and "upstream said" in rows
    assert live_key not in rows and live_key not in (run_dir / "summary.json").read_text()


def test_report_provenance_redacts_a_summary_written_before_redaction(
    tmp_path: Path, live_key: str
) -> None:
    from mmjudge.report import build_report
    from tests.fake_runs import make_run

    planted = fresh()
    human = {("q1", "d1"): {"a": 1}, ("q1", "d2"): {"a": 0}, ("q2", "d1"): {"a": 2}}
    labels = {key: 1 for key in human}
    run = make_run(tmp_path / "runs", "old_run", labels, human)
    summary = json.loads((run / "summary.json").read_text())
    summary["config"]["model"] = {"options": {"auth": planted, "note": live_key}}
    (run / "summary.json").write_text(json.dumps(summary))
    out = build_report(run, tmp_path / "reports")
    page = (out / "index.html").read_text()
    assert "old_run" in page
    assert planted not in page and live_key not in page


def test_hydra_writes_no_copy_of_the_config_itself() -> None:
    raw = OmegaConf.load(CONFIG_DIR / "config.yaml")
    assert raw.hydra.output_subdir is None
    assert raw.hydra.callbacks.keyguard._target_ == "mmjudge.keyguard.KeyGuard"


def test_a_value_that_cannot_be_resolved_is_checked_as_written() -> None:
    from omegaconf import OmegaConf

    from mmjudge.keyguard import config_leaves

    config = OmegaConf.create(
        {"model": {"key": "${oc.env:MMJUDGE_NOT_SET_ANYWHERE}", "name": "m", "todo": "???"}}
    )
    leaves = dict(config_leaves(config))
    assert leaves == {
        "model.key": "${oc.env:MMJUDGE_NOT_SET_ANYWHERE}",
        "model.name": "m",
        "model.todo": "???",
    }
