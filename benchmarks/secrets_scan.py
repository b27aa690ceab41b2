"""Plant a secret through every known route into real sweeps and count the files that hold it.

Each route runs ``python -m mmjudge.sweep`` (one run, or a two-cell multirun) against the
loopback provider in a fresh temporary folder, with fresh random secrets: the live key in
``OPENAI_API_KEY`` (not shaped like a provider key, so only its value gives it away) and, for
most routes, a second secret planted through a config file, an override, ``env_set``, a header
or the endpoint URL. Afterwards every file the run left behind (results, reports, Hydra's log,
the response and image caches) is read as bytes, as is everything the process printed, and
searched for both secrets. The figure is the number of files holding one: it must be 0. A
route must end the way it should: refused with one ``mmjudge: refusing …`` line, or, for the
control routes (the key only in the environment, also with a provider that echoes it in its
errors), run to its summary.

    python benchmarks/secrets_scan.py            # a table per route and the total
    python benchmarks/secrets_scan.py --json     # the same as JSON

:func:`planted_secret_files` returns the total for other scripts (e.g. the chaos benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fixtures.loopback_server import Behaviour, LoopbackServer  # noqa: E402
from tests.helpers import installed  # noqa: E402

#: How many dataset items each run judges: enough for records, a summary and a report.
LIMIT = 4
#: Environment variable names dropped from the runs' environment, so no real credential of
#: the machine running the scan ever reaches a run.
_CREDENTIAL_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


class Plant(NamedTuple):
    """The secrets of one route and the folder it runs in."""

    live_key: str
    """The value of ``OPENAI_API_KEY`` for the run (the key the provider is called with)."""
    planted: str
    """A second secret, not shaped like a provider key, for routes that plant one."""
    planted_key: str
    """A second secret shaped like a provider key (``sk-…``)."""
    workdir: Path
    base_url: str
    """The loopback server's OpenAI base URL."""


class Route(NamedTuple):
    """One way a secret could reach a run: its name and the arguments that plant it."""

    name: str
    arguments: Callable[[Plant], list[str]]
    expect_refusal: bool
    server_says: Callable[[Plant], Behaviour] | None = None
    """What the provider answers instead of a grade (a gateway echoing what it was sent)."""


@dataclass
class RouteResult:
    """What one route left behind."""

    route: str
    exit_code: int
    expected_refusal: bool
    refused: bool
    """The run stopped with mmjudge's one-line refusal."""
    summaries: int
    """``summary.json`` files the run wrote (0 when refused)."""
    files: list[str] = field(default_factory=list)
    """Files (relative to the run's folder) that hold a secret."""
    streams: list[str] = field(default_factory=list)
    """``stdout`` / ``stderr`` when the process printed a secret."""
    files_scanned: int = 0

    @property
    def as_expected(self) -> bool:
        if self.expected_refusal:
            return self.refused and self.exit_code != 0 and self.summaries == 0
        return not self.refused and self.summaries > 0


def _planted_model(plant: Plant, options: str) -> list[str]:
    """A model config file holding ``options`` in a config folder of the route's own."""
    folder = plant.workdir / "conf" / "model"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "planted.yaml").write_text(
        "name: planted\nprovider: openai\nmodel_id: gpt-4o-mini-2024-07-18\n"
        f"api_key_env: OPENAI_API_KEY\nbase_url: {plant.base_url}\noptions:\n{options}",
        encoding="utf-8",
    )
    return [f"--config-dir={plant.workdir / 'conf'}"]


def _judge(plant: Plant) -> list[str]:
    return ["model=gpt4o_mini", f"model.base_url={plant.base_url}"]


ROUTES: tuple[Route, ...] = (
    Route("key in the environment (control)", _judge, False),
    Route(
        "key in the environment, multirun (control)",
        lambda p: ["-m", "model=gpt4o_mini,lexical", f"model.base_url={p.base_url}"],
        False,
    ),
    Route(
        "config file, key-shaped value",
        lambda p: [*_planted_model(p, f"  api_key: {p.planted_key}\n"), "model=planted"],
        True,
    ),
    Route(
        "config file, the live key's value",
        lambda p: [*_planted_model(p, f"  note: {p.live_key}\n"), "model=planted"],
        True,
    ),
    Route(
        "config file in a multirun",
        lambda p: [
            *_planted_model(p, f"  note: {p.live_key}\n"),
            "-m",
            "model=planted",
            "modality=text,mm",
        ],
        True,
    ),
    Route(
        "config file swept in a multirun",
        lambda p: [
            *_planted_model(p, f"  auth: {p.planted}\n"),
            "-m",
            "model=planted,lexical",
        ],
        True,
    ),
    Route(
        "override, key-shaped value",
        lambda p: [*_judge(p), f"+model.options.api_key={p.planted_key}"],
        True,
    ),
    Route(
        "override, the live key's value",
        lambda p: [*_judge(p), f"+model.options.note={p.live_key}"],
        True,
    ),
    Route(
        "override, ${oc.env:OPENAI_API_KEY}",
        lambda p: [*_judge(p), "+model.options.note=${oc.env:OPENAI_API_KEY}"],
        True,
    ),
    Route(
        "env_set of OPENAI_API_KEY",
        lambda p: [*_judge(p), f"+hydra.job.env_set.OPENAI_API_KEY={p.planted}"],
        True,
    ),
    Route(
        "env_set, multirun",
        lambda p: [
            "-m",
            "model=gpt4o_mini,lexical",
            f"model.base_url={p.base_url}",
            f"+hydra.job.env_set.OPENAI_API_KEY={p.planted}",
        ],
        True,
    ),
    Route(
        "header override",
        lambda p: [
            *_judge(p),
            f"+model.options.default_headers={{Authorization:'Bearer {p.planted}'}}",
        ],
        True,
    ),
    Route(
        "header inside a swept dict",
        lambda p: [
            "-m",
            *_judge(p),
            f"++model.options={{}},{{default_headers:{{Authorization:'Bearer {p.planted}'}}}}",
        ],
        True,
    ),
    Route("auth override", lambda p: [*_judge(p), f"+model.options.auth={p.planted}"], True),
    Route(
        "the server echoes the key in its errors",
        lambda p: [*_judge(p), "runner.max_retries=0"],
        False,
        lambda p: Behaviour.error(500, message=f"gateway saw Authorization: Bearer {p.live_key}"),
    ),
    Route(
        "endpoint URL query",
        lambda p: ["model=gpt4o_mini", f"model.base_url='{p.base_url}?key={p.planted}'"],
        True,
    ),
    Route(
        "endpoint URL user:password",
        lambda p: [
            "model=gpt4o_mini",
            "model.base_url='" + p.base_url.replace("://", f"://user:{p.planted}@") + "'",
        ],
        True,
    ),
)


def _with_joblib(route: Route) -> Route:
    def arguments(plant: Plant) -> list[str]:
        return [*route.arguments(plant), "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]

    return Route(f"{route.name} (joblib)", arguments, route.expect_refusal)


#: The multirun routes again with jobs in worker processes, when the joblib launcher is there.
if installed("hydra_plugins.hydra_joblib_launcher"):
    ROUTES += tuple(_with_joblib(route) for route in ROUTES if "multirun" in route.name)


def run_environment(live_key: str) -> dict[str, str]:
    """The machine's environment without its credentials, plus the route's live key."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not any(word in name.upper() for word in _CREDENTIAL_WORDS)
        and name not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    env["OPENAI_API_KEY"] = live_key
    return env


def files_holding(
    root: Path, needles: Iterable[str], skip: Path | None = None
) -> tuple[list[Path], int]:
    """Files under ``root`` (outside ``skip``) whose bytes contain any of ``needles``, and how
    many files were read."""
    wanted = [needle.encode() for needle in needles]
    found: list[Path] = []
    scanned = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        if skip is not None and path.is_relative_to(skip):
            continue
        scanned += 1
        data = path.read_bytes()
        if any(needle in data for needle in wanted):
            found.append(path)
    return found, scanned


def run_route(route: Route, server: LoopbackServer) -> RouteResult:
    """Run one route in a fresh folder and search what it left behind."""
    with tempfile.TemporaryDirectory(prefix="mmjudge-secrets-") as tmp:
        workdir = Path(tmp)
        plant = Plant(
            live_key="lk" + secrets.token_hex(20),
            planted="pl" + secrets.token_hex(20),
            planted_key="sk-" + secrets.token_hex(20),
            workdir=workdir,
            base_url=server.openai_base_url,
        )
        arguments = route.arguments(plant)
        server.set_default(route.server_says(plant) if route.server_says else None)
        command = [
            sys.executable,
            "-m",
            "mmjudge.sweep",
            *arguments,
            f"dataset.limit={LIMIT}",
            f"paths.results={workdir / 'results'}",
            f"paths.reports={workdir / 'reports'}",
            f"paths.response_cache={workdir / 'cache.sqlite'}",
            f"paths.image_cache={workdir / 'images'}",
            "runner.progress=false",
        ]
        done = subprocess.run(
            command,
            cwd=workdir,
            env=run_environment(plant.live_key),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        needles = (plant.live_key, plant.planted, plant.planted_key)
        # The route's own config folder holds the planted file by design: it is input.
        found, scanned = files_holding(workdir, needles, skip=workdir / "conf")
        streams = [
            name
            for name, text in (("stdout", done.stdout), ("stderr", done.stderr))
            if any(needle in text for needle in needles)
        ]
        return RouteResult(
            route=route.name,
            exit_code=done.returncode,
            expected_refusal=route.expect_refusal,
            refused=any(line.startswith("mmjudge: refusing") for line in done.stderr.splitlines()),
            summaries=sum(1 for _ in workdir.rglob("summary.json")),
            files=[str(path.relative_to(workdir)) for path in found],
            streams=streams,
            files_scanned=scanned,
        )


def scan(routes: Sequence[Route] = ROUTES) -> list[RouteResult]:
    """Every route, each in its own folder, against one loopback server."""
    server = LoopbackServer().start()
    try:
        return [run_route(route, server) for route in routes]
    finally:
        server.stop()


def planted_secret_files(routes: Sequence[Route] = ROUTES) -> int:
    """The number of files, over every route, that hold a planted secret (must be 0)."""
    return sum(len(result.files) for result in scan(routes))


def _print_table(results: list[RouteResult]) -> None:
    width = max(len(result.route) for result in results)
    print(f"{'route':<{width}}  exit  files scanned  holding a secret  printed it")
    for r in results:
        flag = "" if r.as_expected else "   <- not the expected ending"
        printed = ",".join(r.streams) or "-"
        print(
            f"{r.route:<{width}}  {r.exit_code:>4}  {r.files_scanned:>13}  "
            f"{len(r.files):>16}  {printed}{flag}"
        )
        for path in r.files:
            print(f"{'':<{width}}    {path}")
    total = sum(len(r.files) for r in results)
    printed_total = sum(len(r.streams) for r in results)
    print(
        f"files holding a planted secret: {total} over {len(results)} routes; "
        f"routes that printed one: {printed_total}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)
    results = scan()
    if args.json:
        rows = [dict(vars(r), as_expected=r.as_expected) for r in results]
        print(json.dumps(rows, indent=2))
    else:
        _print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
