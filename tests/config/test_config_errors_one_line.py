"""Every configuration error is one line and exit 2: values of the wrong type, settings a
node does not have (in the shipped configs or a ``--config-dir`` folder), and base URLs a
judge cannot call, from the config or the environment, refused before any call."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException, MissingConfigException
from omegaconf.errors import ValidationError

from mmjudge.config import ModelConfig
from mmjudge.config.hydra_errors import config_error_line
from mmjudge.errors import ConfigError
from mmjudge.judges.endpoint import checked_base_url
from mmjudge.judges.registry import endpoint_override
from tests.helpers import compose_config, run_sweep

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0" * 2


def _one_line_exit_2(result: object) -> str:
    returncode = getattr(result, "returncode")  # noqa: B009
    stderr = str(getattr(result, "stderr"))  # noqa: B009
    assert returncode == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mmjudge: "), stderr
    assert "Traceback" not in stderr and "HYDRA_FULL_ERROR" not in stderr
    return lines[0]


def _composition_error(overrides: list[str]) -> BaseException:
    with pytest.raises((ConfigCompositionException, MissingConfigException)) as caught:
        compose_config(overrides)
    return caught.value


def test_a_value_of_the_wrong_type_is_one_line_naming_setting_and_what_it_takes() -> None:
    line = config_error_line(_composition_error(["dataset.limit=abc"]))
    assert "\n" not in line
    assert line.startswith("dataset.limit: Value 'abc'")
    assert "the override dataset.limit=abc" in line
    assert line.endswith("dataset.limit takes a whole number")
    line = config_error_line(_composition_error(["runner.concurrency=2.5"]))
    assert "runner.concurrency takes a whole number" in line


def test_an_unknown_group_option_lists_the_options_without_the_search_path() -> None:
    line = config_error_line(_composition_error(["model=nope"]))
    assert "\n" not in line
    assert "Could not find 'model/nope'" in line and "gpt4o_mini" in line
    assert "search path" not in line


def test_an_omegaconf_error_alone_is_one_line() -> None:
    error = ValidationError("Value 'x' of type 'str' could not be converted to Boolean")
    assert config_error_line(error) == ("Value 'x' of type 'str' could not be converted to Boolean")


@pytest.mark.slow
def test_type_errors_on_the_command_line_are_one_line_and_exit_2(tmp_path: Path) -> None:
    for override, setting in (
        ("dataset.limit=abc", "dataset.limit"),
        ("runner.concurrency=2.5", "runner.concurrency"),
    ):
        line = _one_line_exit_2(run_sweep(tmp_path, override, "runner.dry_run=true"))
        assert line.startswith(f"mmjudge: {setting}: ") and "takes a whole number" in line


@pytest.mark.slow
def test_a_key_in_a_model_file_of_a_config_dir_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "mine.yaml").write_text(
        f"name: mine\nprovider: openai\nmodel_id: gpt-4o-mini\napi_key: {SECRET}\n",
        encoding="utf-8",
    )
    (folder / "model" / "typo.yaml").write_text(
        "name: typo\nprovider: openai\nmodel_id: gpt-4o-mini\nmax_tokens: lots\n",
        encoding="utf-8",
    )
    result = run_sweep(tmp_path, "-cd", str(folder), "model=mine", "runner.dry_run=true")
    line = _one_line_exit_2(result)
    assert "refusing config setting 'model.api_key' (in config file model/mine.yaml)" in line
    assert "model.api_key_env" in line
    assert SECRET not in result.stdout + result.stderr
    line = _one_line_exit_2(
        run_sweep(tmp_path, "-cd", str(folder), "model=typo", "runner.dry_run=true")
    )
    assert "model.max_tokens" in line and "model/typo.yaml" in line


# -- base URLs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("not-a-url", "has no scheme"),
        ("localhost:8000/v1", "has no scheme"),
        ("ftp://example.com/v1", "uses ftp://"),
        ("file:///etc/passwd", "uses file://"),
        ("http:///v1", "names no host"),
        ("http://example.com:port/v1", "is not a URL a judge can call"),
    ],
)
def test_base_urls_that_cannot_work_are_refused_with_the_fix(url: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        checked_base_url(url, "model.base_url")
    message = str(caught.value)
    assert message.startswith("model.base_url") and says in message
    assert "http://" in message and "https://" in message


def test_credentials_in_a_base_url_are_refused_and_never_repeated() -> None:
    with pytest.raises(ConfigError) as caught:
        checked_base_url("http://alice:hunter2secret@proxy.example/v1", "OPENAI_BASE_URL")
    message = str(caught.value)
    assert message.startswith("OPENAI_BASE_URL holds a user name or password")
    assert "hunter2secret" not in message and "alice" not in message
    assert "model.api_key_env" in message


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000/v1", "https://api.openai.com/v1", "HTTPS://Example.com"]
)
def test_working_base_urls_pass(url: str) -> None:
    assert checked_base_url(url, "model.base_url") == url


def test_the_environment_base_url_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    model = ModelConfig(name="m", provider="openai", model_id="gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://example.com/v1")
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL='ftp://example.com/v1' uses ftp"):
        endpoint_override(model)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://u:p4ssw0rd@example.com/v1")
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL holds a user name or password"):
        endpoint_override(model)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert endpoint_override(model) == "http://127.0.0.1:9/v1"


def test_compose_accepts_the_shipped_base_urls() -> None:
    cfg = compose_config(["model=vllm_local"])
    assert endpoint_override(ModelConfig(**cfg.model)) is not None


@pytest.mark.slow
def test_a_bad_base_url_stops_the_run_before_any_call(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://u:p4ssw0rd@127.0.0.1:9/v1"}
    result = run_sweep(tmp_path, "model=gpt4o_mini", "dataset.limit=2", env=env)
    line = _one_line_exit_2(result)
    assert line.startswith("mmjudge: OPENAI_BASE_URL holds a user name or password")
    assert "p4ssw0rd" not in result.stdout + result.stderr
    assert not list((tmp_path / "results").rglob("judgments.jsonl"))
    line = _one_line_exit_2(
        run_sweep(tmp_path, "model=gpt4o_mini", "model.base_url=not-a-url", env=env)
    )
    assert line.startswith("mmjudge: model.base_url='not-a-url' has no scheme")


def test_a_list_of_values_without_m_says_to_add_it() -> None:
    line = config_error_line(_composition_error(["model=lexical,replay"]))
    assert line == (
        "model=lexical,replay gives several values, which only a sweep takes: add -m to run one "
        "cell for each (mmjudge sweep -m model=lexical,replay …)"
    )
    line = config_error_line(_composition_error(["dataset.runs=a.txt,b.txt"]))
    assert line.endswith(
        "(mmjudge sweep -m dataset.runs=a.txt,b.txt …); for a list write "
        "dataset.runs=[a.txt,b.txt], for one value quote it: dataset.runs='a.txt,b.txt'"
    )


@pytest.mark.parametrize(
    ("launcher", "fix"),
    [
        ("ray", "hydra/launcher=ray needs its Hydra plugin: pip install 'mmjudge[ray]'"),
        (
            "submitit_slurm",
            "hydra/launcher=submitit_slurm needs its Hydra plugin: pip install "
            "hydra-submitit-launcher",
        ),
        ("nosuch", "hydra/launcher=nosuch needs its Hydra launcher plugin installed here"),
    ],
)
def test_a_launcher_that_is_not_installed_names_what_installs_it(launcher: str, fix: str) -> None:
    error = MissingConfigException(
        f"In 'hydra/config': Could not find 'hydra/launcher/{launcher}'\n\n"
        "Available options in 'hydra/launcher':\n\tbasic\n\tjoblib\n"
        "Config search path:\n\tprovider=hydra, path=pkg://hydra.conf"
    )
    line = config_error_line(error)
    assert line == (
        f"In 'hydra/config': Could not find 'hydra/launcher/{launcher}'; Available options in "
        f"'hydra/launcher': basic, joblib; {fix}"
    )


@pytest.mark.slow
def test_a_new_users_command_line_mistakes_hint_at_the_fix(tmp_path: Path) -> None:
    import importlib.util

    line = _one_line_exit_2(run_sweep(tmp_path, "model=lexical,replay"))
    assert "add -m to run one cell for each (mmjudge sweep -m model=lexical,replay …)" in line
    if importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None:
        line = _one_line_exit_2(run_sweep(tmp_path, "-m", "hydra/launcher=ray"))
        assert line.endswith(
            "hydra/launcher=ray needs its Hydra plugin: pip install 'mmjudge[ray]'"
        )
