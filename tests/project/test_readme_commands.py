"""Every command in the ``bash`` blocks of the README and of the documentation pages runs as
written.

Each command runs with ``bash`` in one temporary copy of the project (so nothing is written into
the checkout), in reading order — the README, then the pages in the order of the site's
navigation — with tiny stand-in data files where the docs or a dataset config say a user puts
theirs, placeholders such as ``results/sweeps/<time>`` filled from what an earlier command
wrote, and a loopback server wherever a command points at a local server. A command shown in
several places runs once, where it first appears.

Left out, each for a reason:

- commands that need an API key (``…_API_KEY=…``): no key is spent here. A sweep among them is
  still checked as a dry run (key assignment dropped, ``runner.dry_run=true`` added), which
  composes its config, prices it and reads its dataset without building a client;
- installation steps (``python3 -m venv``, ``pip install``): they need the package registry and
  minutes; ``.ci/run`` runs the set-up command exactly as written (``test_ci_script.py`` checks
  that it does) and installs the extras the README's way before its second pass;
- benchmarks (``python benchmarks/…``): they take minutes and print figures, not pass or fail;
- the commands listed in :data:`EXCLUDED`, with their reasons.

A command that needs an optional extra (the local embedding judges, a launcher plugin) skips
with the reason when the extra is absent, and is marked ``needs_extra`` for CI's second pass; a
command that needs a subcommand this mmjudge lacks skips with that reason.
"""

from __future__ import annotations

import csv
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from _pytest.mark.structures import ParameterSet
from PIL import Image

from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import REPO_ROOT, installed, sweep_env

README = REPO_ROOT / "README.md"
MKDOCS = REPO_ROOT / "mkdocs.yml"

#: Commands not run here, by their exact text in the README, with the reason.
EXCLUDED = {
    ".venv/bin/python -m pytest": "the test suite itself; .ci/run runs it exactly as written",
    '.venv/bin/python -m pytest -m "not slow"': "the test suite itself (the fast loop)",
    ".venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy mmjudge": (
        "the linters, which .ci/run runs on every change"
    ),
    ".venv/bin/mkdocs build --strict": "the documentation build, which .ci/run runs",
}
_KEY = re.compile(r"(?:^|\s)[A-Z][A-Z0-9_]*_API_KEY=\S*")
_INSTALL = re.compile(r"^(?:python3? -m venv|(?:\.venv/bin/)?pip install)\b")
_COMMENT = re.compile(r"\s+#\s.*$")
_LOCAL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)")
_BENCHMARK = re.compile(r"^python3? benchmarks/")
#: What some commands need beyond the test extra: (pattern, module, extra named in the reason).
_NEEDS = (
    (re.compile(r"\bmodel=\S*\b(?:minilm|clip|distilled)\b"), "sentence_transformers", "local"),
    (re.compile(r"\bmmjudge distill\b"), "sentence_transformers", "local"),
    (re.compile(r"hydra/launcher=joblib"), "hydra_plugins.hydra_joblib_launcher", "joblib"),
    (re.compile(r"hydra/launcher=ray"), "hydra_plugins.hydra_ray_launcher", "ray"),
)


class Command(NamedTuple):
    """One command of a Markdown file: its text (continued lines joined) and first line
    number."""

    text: str
    line: int


class Shown(NamedTuple):
    """A command where it is shown: the file (relative to the project) and the command."""

    source: str
    command: Command


def doc_pages() -> list[Path]:
    """The documentation pages in the order of the site's navigation."""
    return [
        REPO_ROOT / "docs" / page
        for page in re.findall(
            r":\s*(\S+\.md)\s*$", MKDOCS.read_text(encoding="utf-8"), flags=re.MULTILINE
        )
    ]


def readme_commands(text: str) -> list[Command]:
    """The commands in the ``bash`` blocks of a Markdown text, in order (comment-only and
    blank lines dropped; a line ending in a backslash continues on the next)."""
    commands: list[Command] = []
    in_block = False
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("```"):
            in_block = line == "```bash" if not in_block else False
            continue
        if not in_block or (not pending and (not line or line.startswith("#"))):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1].strip())
            continue
        commands.append(Command(" ".join([*pending, line]), start))
        pending = []
    return commands


def without_installs(text: str) -> str:
    """The command with its installation steps (``&&``-joined parts) left out."""
    return " && ".join(part for part in text.split(" && ") if not _INSTALL.match(part.strip()))


def dry_run_of(text: str) -> str:
    """A key-needing sweep as a dry run: no key assignment, no comment, ``runner.dry_run=true``."""
    command = _KEY.sub(" ", _COMMENT.sub("", text)).strip()
    return f"{command} runner.dry_run=true"


def shown_commands() -> list[Shown]:
    """Every command of the README's and the documentation pages' ``bash`` blocks, in
    reading order (a command shown again is kept where it first appears)."""
    shown: list[Shown] = []
    seen: set[str] = set()
    for path in [README, *doc_pages()]:
        source = path.relative_to(REPO_ROOT).as_posix()
        for command in readme_commands(path.read_text(encoding="utf-8")):
            if command.text not in seen:
                seen.add(command.text)
                shown.append(Shown(source, command))
    return shown


def _param(shown: Shown, text: str) -> ParameterSet:
    marks: list[pytest.MarkDecorator] = [pytest.mark.slow]
    for pattern, module, extra in _NEEDS:
        if pattern.search(text):
            marks.append(pytest.mark.needs_extra)
            if not installed(module):
                reason = f"needs the {extra} extra: .venv/bin/pip install -e '.[{extra}]'"
                marks.append(pytest.mark.skip(reason=reason))
    short = text.replace(".venv/bin/python -m ", "").replace(".venv/bin/", "")
    slug = re.sub(r"[^\w=,.-]+", " ", short)[:60].strip()
    return pytest.param(text, id=f"{shown.source}:{shown.command.line} {slug}", marks=marks)


def planned() -> tuple[list[ParameterSet], list[ParameterSet]]:
    """(commands run as written, key-needing sweeps checked as dry runs) as test parameters."""
    run: list[ParameterSet] = []
    dry: list[ParameterSet] = []
    for shown in shown_commands():
        text = shown.command.text
        if text in EXCLUDED or _BENCHMARK.match(text):
            continue
        if _KEY.search(text):
            if "-m mmjudge.sweep" in text:
                dry.append(_param(shown, dry_run_of(text)))
            continue
        text = without_installs(text)
        if text:
            run.append(_param(shown, text))
    return run, dry


RUN, DRY = planned()


# --- the project copy and its stand-in data ------------------------------------------------


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project (code, configs, the demo dataset) with the venv linked in and
    stand-in data files where the README and the dataset configs put a user's own."""
    root = tmp_path_factory.mktemp("readme") / "mmjudge"
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "__pycache__", "*.egg-info", ".*_cache", ".cache", "results", "reports"
    )
    shipped = [f"datasets/{name}" for name in ("demo_fashion", "demo_multilingual")]
    for name in ("mmjudge", "hydra_plugins", "conf", *shipped, "tests", "benchmarks"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=ignore)
    for name in ("pyproject.toml", "setup.py", "README.md", "datasets/__init__.py"):
        shutil.copy2(REPO_ROOT / name, root / name)
    # a developer's own datasets/ must not leak into the copy (only the demos are copied)
    (root / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    write_crowdflower(root / "datasets" / "crowdflower" / "train.csv")
    write_flickr8k(root / "datasets" / "flickr8k_expert")
    write_qrels(root)
    where = subprocess.run(
        [".venv/bin/python", "-c", "import mmjudge.locations as m; print(m.PACKAGE_DIR.parent)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(where.stdout.strip()) == root, "the copy must run its own code, not the checkout's"
    return root


COLUMNS = ["id", "query", "product_title", "product_description", "median_relevance"]


def write_crowdflower(path: Path) -> None:
    """A CrowdFlower-shaped train.csv (the columns the config reads): HTML in descriptions,
    grades 1-4."""
    path.parent.mkdir(parents=True)
    rng = random.Random(11)
    products = ["Red summer dress", "Brown leather boots", "Garden hose 30 m", "USB-C cable"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for i, (query, title) in enumerate(
            (q, t) for q in ("red dress", "leather boots", "garden hose") for t in products
        ):
            grade = 4 if query.split()[-1] in title.lower() else rng.randint(1, 2)
            writer.writerow([i + 1, query, title, f"<p>{title}, in stock.</p>", grade])


def write_flickr8k(root: Path) -> None:
    """Flickr8k-Expert-shaped files: expert ratings, captions and small photos."""
    (root / "images").mkdir(parents=True)
    photos = [f"{n}_photo.jpg" for n in range(3)]
    for n, name in enumerate(photos):
        Image.new("RGB", (60, 40), (80 * n, 120, 200 - 60 * n)).save(root / "images" / name)
    captions = ["A dog runs on the beach .", "Two children play football .", "A red car ."]
    (root / "Flickr8k.token.txt").write_text(
        "".join(f"{photo}#0\t{text}\n" for photo, text in zip(photos, captions, strict=True))
    )
    ratings = [
        f"{image}\t{caption}#0\t{1 + (i + j) % 4}\t{1 + (i + 2 * j) % 4}\t2\n"
        for i, image in enumerate(photos)
        for j, caption in enumerate(photos)
    ]
    (root / "ExpertAnnotations.txt").write_text("".join(ratings))


def write_qrels(root: Path) -> None:
    """The label files the agreement examples name: human grades and two judges' (0-3), a
    ``runs/`` folder of three TREC runs over the same documents, and ``slices.tsv`` putting
    each query in one of two slices."""
    rng = random.Random(5)
    files: dict[str, list[str]] = {"human_qrels.txt": [], "judge_a.txt": [], "judge_b.txt": []}
    for q in range(8):
        for d in range(6):
            human = rng.randint(0, 3)
            near = min(3, max(0, human + rng.choice([-1, 0, 0, 1])))
            for name, grade in zip(files, (human, near, rng.randint(0, 3)), strict=True):
                files[name].append(f"q{q} 0 q{q}d{d} {grade}\n")
    for name, lines in files.items():
        (root / name).write_text("".join(lines))
    (root / "slices.tsv").write_text(
        "".join(f"q{q}\t{('short', 'long')[q % 2]}\n" for q in range(8))
    )
    (root / "runs").mkdir()
    for system in range(3):
        lines = []
        for q in range(8):
            order = sorted(range(6), key=lambda d, s=system: (d * (s + 1) + q) % 7)
            lines += [
                f"q{q} Q0 q{q}d{d} {r + 1} {6 - r} sys{system}\n" for r, d in enumerate(order)
            ]
        (root / "runs" / f"sys{system}.txt").write_text("".join(lines))


# --- running --------------------------------------------------------------------------------


#: What a command with a placeholder is run after when no earlier command has left one in
#: this copy (the suite's workers may take a page's commands out of order): the free grid and
#: the default run, both commands the README itself shows.
_MAKE_A_SWEEP = [
    ".venv/bin/python",
    "-m",
    "mmjudge.sweep",
    "-m",
    "model=lexical",
    "modality=text,mm",
]
_MAKE_A_RUN = [".venv/bin/python", "-m", "mmjudge.sweep"]


def fill_placeholders(text: str, root: Path) -> str:
    """``results/sweeps/<time>``: the newest finished sweep; ``results/runs/<that run>``: the
    newest run folder — written by commands earlier in the README, or made here first."""
    if "<time>" in text:
        sweeps = sorted((root / "results" / "sweeps").glob("*/sweep_summary.json"))
        if not sweeps:
            subprocess.run(
                _MAKE_A_SWEEP, cwd=root, env=sweep_env(), capture_output=True, check=True
            )
            sweeps = sorted((root / "results" / "sweeps").glob("*/sweep_summary.json"))
        assert sweeps, f"no finished sweep for: {text}"
        text = text.replace("<time>", sweeps[-1].parent.name)
    if "<that run>" in text:
        runs = sorted(p for p in (root / "results" / "runs").glob("*") if p.is_dir())
        if not runs:
            subprocess.run(_MAKE_A_RUN, cwd=root, env=sweep_env(), capture_output=True, check=True)
            runs = sorted(p for p in (root / "results" / "runs").glob("*") if p.is_dir())
        assert runs, f"no run folder for: {text}"
        text = text.replace("<that run>", runs[-1].name)
    assert "<" not in text.replace("<<", ""), f"a placeholder the test cannot fill: {text}"
    return text


@pytest.fixture
def local_servers(request: pytest.FixtureRequest) -> Iterator[None]:
    """A loopback server on each 127.0.0.1 port the command points at (skip if one is taken)."""
    text: str = request.node.callspec.params["text"]
    servers = []
    try:
        for port in sorted({int(p) for p in _LOCAL_URL.findall(text)}):
            try:
                servers.append(LoopbackServer(port=port).start())
            except OSError as error:
                pytest.skip(f"port {port} on 127.0.0.1 is taken ({error}); this command needs it")
        yield
    finally:
        for server in servers:
            server.stop()


def in_the_copy(text: str) -> str:
    """The command as it runs in the project copy: the ``mmjudge`` console script imports the
    installed checkout, so its documented equivalent ``python -m mmjudge`` (which imports the
    code of the folder it runs in) stands in for it."""
    text = re.sub(r"^mmjudge ", ".venv/bin/mmjudge ", text)
    return text.replace(".venv/bin/mmjudge ", ".venv/bin/python -m mmjudge ")


def run_as_written(text: str, root: Path) -> subprocess.CompletedProcess[str]:
    env = sweep_env({"HF_HUB_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"})
    return subprocess.run(
        ["bash", "-c", fill_placeholders(in_the_copy(text), root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


# Every command runs on one worker, in reading order: a later command reads what an earlier one
# wrote (``--dist loadfile`` in pyproject.toml keeps this file's tests on one worker, in order).
@pytest.mark.parametrize("text", RUN)
def test_readme_command_runs_as_written(text: str, project: Path, local_servers: None) -> None:
    result = run_as_written(text, project)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{text}\n{output[-3000:]}"
    assert "Traceback" not in output, output[-3000:]


@pytest.mark.parametrize("text", DRY)
def test_readme_key_command_composes_as_a_dry_run(text: str, project: Path) -> None:
    result = run_as_written(text, project)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{text}\n{output[-3000:]}"
    assert "forecast" in output and "Traceback" not in output, output[-3000:]


# --- the plan itself (fast) -----------------------------------------------------------------


def test_the_readme_commands_are_all_accounted_for() -> None:
    texts = [shown.command.text for shown in shown_commands()]
    stale = [text for text in EXCLUDED if text not in texts]
    assert not stale, f"excluded commands no longer in the README or the docs: {stale}"
    assert len(RUN) + len(DRY) + len(EXCLUDED) <= len(texts)
    # the default sweep of the set-up command runs here; its installs are CI's
    assert ".venv/bin/python -m mmjudge.sweep" in [p.values[0] for p in RUN]


def test_the_parser_joins_continued_lines_and_skips_comments() -> None:
    text = (
        "prose\n```bash\n# a comment\nA=1 cmd one \\\n    two\n\ncmd three  # note\n```\n"
        '```json\n{"not": "bash"}\n```\n  ```bash\n  indented\n  ```\n'
    )
    assert readme_commands(text) == [
        Command("A=1 cmd one two", 4),
        Command("cmd three  # note", 7),
        Command("indented", 13),
    ]
    assert dry_run_of("OPENAI_API_KEY=… x -m mmjudge.sweep a=b   # c") == (
        "x -m mmjudge.sweep a=b runner.dry_run=true"
    )
    assert (
        without_installs('python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && b') == "b"
    )


def test_the_docs_pages_are_read_in_the_order_of_the_site() -> None:
    pages = doc_pages()
    assert pages and all(page.is_file() for page in pages), pages
    assert pages[0].name == "index.md" and len(set(pages)) == len(pages)
    sources = [shown.source for shown in shown_commands()]
    assert sources[0] == "README.md" and any(s.startswith("docs/") for s in sources)
    # a benchmark shown in the docs is not run here, and a bare `mmjudge` is the copy's own
    planned_texts = [p.values[0] for p in RUN + DRY]
    assert not any(_BENCHMARK.match(text) for text in planned_texts)
    assert in_the_copy("mmjudge sweep") == ".venv/bin/python -m mmjudge sweep"
