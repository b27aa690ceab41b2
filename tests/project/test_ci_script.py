"""CI runs the README's set-up commands exactly as written, before any extra is installed."""

from __future__ import annotations

import subprocess

from tests.helpers import REPO_ROOT
from tests.project.test_readme_commands import README, readme_commands

CI = REPO_ROOT / ".ci" / "run"


def setup_commands() -> list[str]:
    """The commands of the README's set-up section, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Set-up", 1)[1].split("\n## ", 1)[0]
    return [command.text for command in readme_commands(section)]


def script_lines() -> list[str]:
    return [line.strip() for line in CI.read_text(encoding="utf-8").splitlines()]


def test_ci_runs_the_readme_set_up_commands_verbatim_and_in_order() -> None:
    commands = setup_commands()
    assert len(commands) == 2, commands  # install + default sweep, then the tests
    lines = script_lines()
    positions = []
    for command in commands:
        assert command in lines, f".ci/run does not run the README's command as written: {command}"
        positions.append(lines.index(command))
    assert positions == sorted(positions)


def test_ci_installs_no_extra_before_the_readme_commands_have_passed() -> None:
    lines = script_lines()
    tests_at = lines.index(setup_commands()[-1])
    installs = [
        i for i, line in enumerate(lines) if "pip install" in line and not line.startswith("#")
    ]
    first, *later = installs
    assert first < tests_at and '-e ".[test]"' in lines[first]  # the README's own install
    assert later and all(i > tests_at for i in later)
    assert any("pytest -m needs_extra" in line for line in lines[tests_at + 1 :])


def test_ci_runs_the_readme_linters_and_is_valid_bash() -> None:
    text = README.read_text(encoding="utf-8")
    development = text.split("\n## Development", 1)[1]
    linters = [c.text for c in readme_commands(development) if "ruff check" in c.text]
    assert linters and linters[0] in script_lines()
    assert subprocess.run(["bash", "-n", str(CI)], check=False).returncode == 0


def test_ci_builds_the_docs_the_readme_way_after_the_linters() -> None:
    text = README.read_text(encoding="utf-8")
    development = [c.text for c in readme_commands(text.split("\n## Development", 1)[1])]
    install = '.venv/bin/pip install -e ".[docs]"'
    build = ".venv/bin/mkdocs build --strict"
    assert install in development and build in development
    lines = script_lines()
    linters = next(i for i, line in enumerate(lines) if line.startswith(".venv/bin/ruff check"))
    installs = [i for i, line in enumerate(lines) if '".[docs]"' in line and "pip install" in line]
    assert installs and installs[0] > linters
    assert build in lines and lines.index(build) > installs[0]


#: The packages whose ranges CI tests at both ends.
RANGED = ("openai", "anthropic", "hydra-core", "statsmodels")


def _bounds() -> dict[str, tuple[str, str]]:
    """Each ranged package's lowest and highest version in ``pyproject.toml``."""
    import re
    import tomllib

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = {}
    for requirement in project["project"]["dependencies"]:
        match = re.fullmatch(r"([a-z-]+)(\[[a-z]+\])?>=([\d.]+),<=([\d.]+)", requirement)
        if match and match.group(1) in RANGED:
            found[match.group(1)] = (match.group(3), match.group(4))
    return found


def test_the_sdks_and_hydra_are_bounded_on_both_sides() -> None:
    assert sorted(_bounds()) == sorted(RANGED), "each needs >=lowest,<=highest tested"


def test_ci_tests_the_request_path_at_the_lowest_allowed_versions() -> None:
    text = CI.read_text(encoding="utf-8")
    for package, (lowest, _highest) in _bounds().items():
        extra = "[aiohttp]" if package in ("openai", "anthropic") else ""
        pinned = f'"{package}{extra}=={lowest}"'
        assert pinned in text, f".ci/run does not install {package}=={lowest}"
    lines = script_lines()
    runs = [line for line in lines if line.startswith(".venv-lowest/bin/python -m pytest")]
    assert runs and "tests/judges" in runs[0]
    assert lines.index(runs[0]) < lines.index('say "linters"')


def test_the_docs_table_names_the_tested_ranges() -> None:
    page = (REPO_ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    for package, (lowest, highest) in _bounds().items():
        extra = "[aiohttp]" if package in ("openai", "anthropic") else ""
        assert f"| `{package}{extra}` | {lowest} | {highest} |" in page


def test_ci_runs_the_editable_install_and_the_wheel_from_an_empty_folder() -> None:
    """conf/ and datasets/ are package data only through pyproject.toml's package-dir: CI runs
    a sweep with the editable install outside the checkout, and checks the sdist carries them
    and the wheel runs outside it too."""
    text = CI.read_text(encoding="utf-8")
    editable = text.split('cd "$editable_outside"', 1)
    assert len(editable) == 2, (
        ".ci/run runs no sweep from an empty folder with the editable install"
    )
    assert '"$repo/.venv/bin/python" -m mmjudge.sweep' in editable[1].split("\n)", 1)[0]
    assert "conf/config.yaml" in text and "datasets/demo_fashion/items.jsonl" in text
    assert '"$dist/venv/bin/mmjudge" sweep' in text
