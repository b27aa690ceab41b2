"""Nothing heavy loads before a sweep's first call: tables, statistics, plotting and local-model
libraries are imported when the summary or the report needs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import REPO_ROOT, isolated_overrides, sweep_env

#: Libraries a cell does not need until its last call has been answered.
LATER = ("pandas", "numpy", "scipy", "matplotlib", "sklearn", "torch", "sentence_transformers")

_PROBE = """
import json, sys
import mmjudge.sweep, mmjudge.engine.cell, mmjudge.judges.openai, mmjudge.judges.anthropic
import mmjudge.judges.lexical
from mmjudge.judges import registry
registry.descriptors()  # every judge module found, the local ones' libraries not loaded
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in {later})))
"""


@pytest.mark.slow
def test_the_sweep_and_its_judges_load_no_heavy_library() -> None:
    probe = _PROBE.format(later=set(LATER))
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


#: Runs the sweep of the command line after it, then writes the modules it loaded to the file
#: named first.
_TRACED_SWEEP = """
import atexit, json, runpy, sys
out, sys.argv = sys.argv[1], [sys.argv[0], *sys.argv[2:]]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
runpy.run_module("mmjudge.sweep", run_name="__main__")
"""


@pytest.mark.slow
def test_a_rerun_from_a_full_cache_loads_no_sdk_and_no_tokenizer(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    """Every answer in the response cache: the provider's SDK, its client and tiktoken are
    never needed, so never loaded. The first run, which makes calls, loads them."""
    settings = [
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        "modality=text",
        "dataset=demo_fashion",
        "dataset.limit=12",
        "runner.progress=false",
        "report.build=false",
    ]
    env = sweep_env({"OPENAI_API_KEY": "sk-test-lazy"})
    cache = tmp_path / "cache.sqlite"
    loaded = []
    for name in ("first", "rerun"):
        paths = {**isolated_overrides(tmp_path / name), "paths.response_cache": str(cache)}
        out = tmp_path / f"{name}.json"
        command = [sys.executable, "-c", _TRACED_SWEEP, str(out), *settings]
        command += [f"{key}={value}" for key, value in paths.items()]
        done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        loaded.append(set(json.loads(out.read_text())))
    first, rerun = loaded
    assert {"aiohttp", "openai"} <= first
    assert not {"openai", "anthropic", "tiktoken", "httpx", "aiohttp"} & rerun
    [run_dir] = (tmp_path / "rerun" / "results" / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["calls"]["api_calls"] == 0 and summary["calls"]["cache_hits"] == 12


_JUDGES_PROBE = """
import json, os, sys
from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, CredentialError
from mmjudge.judges.anthropic import AnthropicJudge
from mmjudge.judges.openai import OpenAIJudge
problems = []
os.environ.pop("OPENAI_API_KEY", None)
for make in (
    lambda: OpenAIJudge(ModelConfig(name="o", provider="openai", model_id="gpt-4o-mini")),
    lambda: AnthropicJudge(ModelConfig(name="a", provider="anthropic", model_id="claude")),
    lambda: OpenAIJudge(ModelConfig(name="c", provider="openai_compatible", model_id="x")),
):
    try:
        make()
    except (ConfigError, CredentialError) as error:
        problems.append(str(error))
os.environ["OPENAI_API_KEY"] = "sk-probe"
try:
    model = ModelConfig(name="h", provider="openai", model_id="m", options={"http_client": "curl"})
    OpenAIJudge(model)
except ConfigError as error:
    problems.append(str(error))
judge = OpenAIJudge(ModelConfig(name="o", provider="openai", model_id="gpt-4o-mini"))
loaded = sorted(name for name in ("openai", "anthropic") if name in sys.modules)
print(json.dumps({"problems": problems, "loaded": loaded}))
"""


@pytest.mark.slow
def test_judges_check_keys_and_settings_without_loading_their_sdk() -> None:
    """A missing key or a bad setting is reported when the judge is made, before any call,
    and making a judge loads no SDK (that waits for its first call)."""
    out = subprocess.run(
        [sys.executable, "-c", _JUDGES_PROBE],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=sweep_env(),
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["loaded"] == []
    problems = found["problems"]
    assert len(problems) == 4
    assert "OPENAI_API_KEY" in problems[0] and "ANTHROPIC_API_KEY" in problems[1]
    assert "model.base_url" in problems[2] and "http_client='curl'" in problems[3]
