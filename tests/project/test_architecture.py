"""The package's shape, checked: rooms import only from their own or earlier stages, no
import cycles between modules or between rooms, no private name taken from another module,
no run-folder file parsed outside ``store/``, and every file over 500 lines or function over
60 named with why it is one piece. Hydra's plugins (``hydra_plugins/``) are checked with the
package, as part of its command line.

A small AST walk rather than a linter plugin: the rules are few, the package is small, and
the test names the offending module, import or function in its message. Imports inside
functions count like any other (an import moved into a function to dodge a cycle is still
the dependency it was).
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mmjudge"
#: mmjudge's Hydra plugins (the grid's sweeper), beside the package: Hydra finds them by this
#: namespace. They are the command line's: they may import anything, and only ``cli/`` imports
#: them.
PLUGINS = PACKAGE.parent / "hydra_plugins"

#: The stages, in the order data flows through them; a module may import from its own stage
#: and earlier ones only. An entry names a room (``running``) or a top-level module (``sweep``).
#: ``testbank`` holds the bank's model and its grading, which the runner uses; writing a bank
#: runs a model, so that part is :mod:`mmjudge.engine.bank_writer`. ``images`` sits with the
#: records: it encodes pictures, knows no config, and the config checks its settings with it.
#: ``files`` is the one atomic write, JSONL reader and JSONL append, for every stage's files.
#: ``locations`` resolves paths (the user's against the working folder, the shipped configs in
#: ``conf`` as package data). ``api`` is the library surface, over the same code the command
#: runs (the package's ``__init__`` re-exports it lazily, by name, so importing any module of
#: the package never loads the surface); the command line comes last, a shell over ``api``.
#: ``monitor`` runs cells (canary checks) and reads their rows; the report draws its history,
#: so it comes before ``report``. ``speed`` holds the machinery that changes how fast work is
#: done, never what is done (the fast request path, the forked children, the collector, the
#: loop), behind one switch; it sits under the judges and the engine that use it, and what it
#: needs from above (the report's builder, the judge's request) is handed to it. ``departures``
#: (whether a request has left) is told by the fast path and the SDK's path alike. ``grid`` is
#: the one seam for running cells: a grid composed once, launchers, and the loop of rounds that
#: sweeps, races and the race's simulation share; it runs cells through the engine.
#: ``distill`` trains a judge from saved runs' grades (store, data, metrics); the folder it
#: writes is read by the ``distilled`` judge, so that format lives in ``judges``.
STAGES: list[tuple[str, ...]] = [
    ("__init__", "errors", "records", "display", "files", "keyguard", "images", "departures"),
    ("locations",),
    ("config",),
    ("data",),
    ("prompts", "testbank", "perturb"),
    ("speed",),
    ("judges",),
    ("store",),
    ("costs",),
    ("metrics",),
    ("studies",),
    ("estimation",),
    ("distill",),
    ("engine",),
    ("grid",),
    ("ensembles",),
    ("monitor",),
    ("report",),
    ("api",),
    ("cli", "sweep", "__main__"),
]
#: The command line: ``cli/`` and the two entry modules Python runs (``python -m mmjudge``,
#: ``python -m mmjudge.sweep``), which hand over to ``cli/`` at once. Nothing else may import
#: ``mmjudge.cli``: the library is the core and the command a shell over it.
COMMAND_LINE = ("mmjudge.cli", "mmjudge.sweep", "mmjudge.__main__", "hydra_plugins")
#: Sizes past which a file or a function is worth a second look: it may hold two ideas that
#: would read better apart. They are prompts, not limits: a file that is one idea stays whole
#: (a module carved out only to get under a count is harder to read, and code is never
#: squeezed to fit). Each file or function past its size is named below with why it is one
#: piece, so the list is read whenever one grows past it.
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60

#: Files over :data:`MAX_FILE_LINES`, each with why it stays one file.
LONG_FILES: dict[str, str] = {
    "mmjudge.engine.batch": "one class, the batch runner: packing, submitting, polling and "
    "collecting share its batches' state file, its stop and its budget (the packing's pure "
    "parts are engine/batch_packing.py already)",
    "mmjudge.engine.sync": "one class, the sync runner: scheduling and each call's retries "
    "share its slots, limits, claims and stop state",
    "mmjudge.engine.response_cache": "the answers and the claims on them share one SQLite "
    "connection, its write transactions and the one-line error of every step on the file "
    "(the request keys or the claims are where it would divide)",
    "mmjudge.studies.race_rule": "one idea, the race's rule: its docstring states the rule and "
    "its guarantee in full beside the code that applies it (the rounds, the boundary, the "
    "pairs' statistics, the asked grades and the records are apart already: race_rounds.py, "
    "race_boundary.py, race_pairs.py, race_labels.py, race_records.py)",
    "mmjudge.estimation.planning": "the two plans (κ to ± a half-width, best against "
    "runner-up) from a pilot's labels, and the sweep's plan that turns them into "
    "store.plan_file's records (a refused judge or pair spelled out field by field); what a "
    "small pilot can say and the budget split are apart already (pilot.py, budget.py), and "
    "plan_sweep with its entries over saved runs is where it would divide next",
}
#: Functions over :data:`MAX_FUNCTION_LINES` (``module:function``), each with why.
LONG_FUNCTIONS: dict[str, str] = {}


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    """``path`` parsed, once per test process (every rule walks every module)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    """Every module of the package and of its Hydra plugins, by dotted name."""
    paths = [*PACKAGE.rglob("*.py"), *PLUGINS.rglob("*.py")]
    return {module_name(p): p for p in sorted(paths)}


def is_plugin(module: str) -> bool:
    return module == "hydra_plugins" or module.startswith("hydra_plugins.")


def stage(module: str) -> int:
    """The stage of the longest entry of :data:`STAGES` that names ``module`` or its room (the
    Hydra plugins: the command line's, the last)."""
    if is_plugin(module):
        return len(STAGES) - 1
    dotted = module.removeprefix("mmjudge.") if module != "mmjudge" else "__init__"
    best: tuple[int, int] | None = None
    for index, names in enumerate(STAGES):
        for name in names:
            named = dotted == name or dotted.startswith(name + ".")
            if named and (best is None or len(name) > best[1]):
                best = (index, len(name))
    assert best is not None, f"{module}: in no stage of tests/project/test_architecture.py"
    return best[0]


#: The top-level packages whose modules :func:`modules` lists.
OWN_PACKAGES = ("mmjudge", "hydra_plugins")


def imported(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The package's (and its plugins') modules ``path`` imports (``from mmjudge import x``
    names module x when there is one), with the line of each import."""
    for node in ast.walk(syntax_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in OWN_PACKAGES:
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                yield (full if full in known else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OWN_PACKAGES:
                    yield alias.name, node.lineno


def test_every_import_goes_to_the_same_or_an_earlier_stage() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        for target, line in imported(path, known):
            if target not in OWN_PACKAGES and stage(target) > stage(name):
                wrong.append(f"{name}:{line} imports {target} (a later stage)")
    assert not wrong, "\n".join(wrong)


def test_only_the_command_lines_modules_import_the_hydra_plugins() -> None:
    """The plugins run the command's grid inside Hydra; ``cli/`` registers them. The library
    never needs them: nothing in ``mmjudge`` but ``cli/`` imports ``hydra_plugins``."""
    known = modules()
    wrong = [
        f"{name}:{line} imports {target}"
        for name, path in known.items()
        if not (is_plugin(name) or name == "mmjudge.cli" or name.startswith("mmjudge.cli."))
        for target, line in imported(path, known)
        if is_plugin(target)
    ]
    assert not wrong, "\n".join(wrong)


def in_command_line(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in COMMAND_LINE)


# --------------------------------------------------------------------------- run folders

#: Calls that parse JSON text, by their full dotted name once import aliases are resolved: the
#: standard library's, msgspec's (a decoder made is a decoder used), pandas' and orjson's, and
#: the package's own JSON-lines reader.
JSON_PARSERS = (
    "json.load",
    "json.loads",
    "msgspec.json.decode",
    "msgspec.json.Decoder",
    "pandas.read_json",
    "orjson.loads",
    "mmjudge.files.read_jsonl",
)


@functools.cache
def run_folder_names() -> tuple[frozenset[str], dict[str, str]]:
    """The files ``store/`` owns, and the store's names that lead to one.

    The files are what the store's own constants name: every public module-level string or
    path of ``mmjudge.store`` (and its modules) whose last part is a ``.json`` or ``.jsonl``
    file name (``summary.json``, ``race.json``, ``monitor/history.jsonl``…; a glob such as
    ``repriced_*.json`` for a family). The names are ``module.NAME`` for each such constant,
    and for each function of the store annotated to return a ``Path`` (a path the store hands
    out, ``judgments_path``), with the file or the path each leads to."""
    import importlib
    import inspect
    import pkgutil

    import mmjudge.store as store

    found = [store] + [
        importlib.import_module(f"mmjudge.store.{info.name}")
        for info in pkgutil.iter_modules(store.__path__)
    ]
    files: set[str] = set()
    names: dict[str, str] = {}
    for module in found:
        for name, value in vars(module).items():
            text = value.name if isinstance(value, Path) else value
            if private(name) or not isinstance(text, str) or "/" in text:
                continue
            if text.endswith((".json", ".jsonl")):
                files.add(text)
                names[f"{module.__name__}.{name}"] = text
    for module in found:
        for name, value in vars(module).items():
            if private(name) or not inspect.isfunction(value):
                continue
            if inspect.signature(value).return_annotation in ("Path", Path):
                names[f"{module.__name__}.{name}"] = f"the path {name}() gives"
    return frozenset(files), names


def names_a_file(text: str, files: frozenset[str]) -> str | None:
    """The store's file a string literal names as a path (``run_dir / "summary.json"``,
    ``"*/sweep_summary.json"``), or None; prose that mentions one is not a path."""
    import fnmatch

    if not text.strip() or any(ch.isspace() for ch in text):
        return None
    last = text.replace("\\", "/").rsplit("/", 1)[-1]
    return next((f for f in sorted(files) if fnmatch.fnmatchcase(last, f)), None)


def run_folder_reads(path: Path) -> Iterator[str]:
    """Where a module outside ``store/`` parses JSON while naming a file the store owns.

    A read of a run folder's file needs both: a parse (:data:`JSON_PARSERS`) and a way to the
    file, which outside the store is its name as a literal path, one of the store's constants
    for it, or a path a store function hands out (:func:`run_folder_names`). The module is the
    unit: a path built in one function and parsed in another is still the module reading the
    file. Docstrings and prose are not paths; a module that only passes a run folder to the
    store, or parses JSON that is not a run folder's file (a provider's answer), is not
    flagged."""
    files, names = run_folder_names()
    tree = syntax_tree(path)
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    parses: list[tuple[int, str]] = []
    ways: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        full = _full_name(node, aliases)
        if isinstance(node, ast.Call) and _full_name(node.func, aliases) in JSON_PARSERS:
            parses.append((node.lineno, str(_full_name(node.func, aliases))))
        elif full is not None and full in names:
            ways.append((node.lineno, names[full]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = None if id(node) in docstrings else names_a_file(node.value, files)
            if named is not None:
                ways.append((node.lineno, named))
    if parses and ways:
        (parse_line, parser), (way_line, way) = min(parses), min(ways)
        yield (
            f"line {parse_line} parses JSON ({parser}) and line {way_line} names {way}: read "
            "it through its reader in mmjudge.store"
        )


def _full_name(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """``node``'s dotted name with its first part resolved through the module's imports
    (``loads`` from ``from json import loads`` is ``json.loads``), or None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or (not parts and node.id not in aliases):
        return None
    return ".".join([aliases.get(node.id, node.id), *parts])


def test_no_module_outside_the_store_parses_a_run_folder_file() -> None:
    """``store/`` holds one reader and one writer for each file a run, sweep or monitoring
    folder holds; every other module takes the record (see :func:`run_folder_reads` for how a
    read is recognised)."""
    wrong = [
        f"{name}: {what}"
        for name, path in modules().items()
        if not (name == "mmjudge.store" or name.startswith("mmjudge.store."))
        for what in run_folder_reads(path)
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ('import json\ndef f(d):\n    return json.loads((d / "summary.json").read_text())\n', True),
        (
            "from json import loads as parse\nfrom mmjudge.store.sweep_file import SWEEP_SUMMARY\n"
            "def f(d):\n    return parse((d / SWEEP_SUMMARY).read_text())\n",
            True,
        ),
        (
            "from mmjudge import files, store\n"
            "def f(d):\n    return list(files.read_jsonl(store.judgments_path(d)))\n",
            True,
        ),
        ('import msgspec\nP = "x/repriced_2026-10-31.json"\nD = msgspec.json.Decoder()\n', True),
        ('"""Reads summary.json."""\nimport json\ndef f(t):\n    return json.loads(t)\n', False),
        (
            'import json\ndef f(d):\n    return (d / "summary.json").is_file(), json.dumps({})\n',
            False,
        ),
        ('import json\ndef f(text):\n    return json.loads(text)["choices"]\n', False),
    ],
)
def test_the_run_folder_rule_names_a_real_read(tmp_path: Path, source: str, flagged: bool) -> None:
    """The rule itself, on modules written for it: a read by a literal path, by the store's
    constant through an alias, by a path a store function gives and by a decoder beside a
    family's name is flagged; a docstring, a file checked but not parsed, and JSON that is no
    run folder's are not."""
    module = tmp_path / "reader.py"
    module.write_text(source, encoding="utf-8")
    found = list(run_folder_reads(module))
    assert bool(found) is flagged, found


def test_only_the_command_line_imports_the_command_line() -> None:
    """The library never reaches up into ``cli/``: what a subcommand does lives in the library
    (``api/`` and the rooms under it), and ``cli/`` parses, calls and prints."""
    known = modules()
    wrong = [
        f"{name}:{line} imports {target}"
        for name, path in known.items()
        if not in_command_line(name)
        for target, line in imported(path, known)
        if target == "mmjudge.cli" or target.startswith("mmjudge.cli.")
    ]
    assert not wrong, "\n".join(wrong)


#: Imports that close a cycle, each with why it stays for now (``importer -> imported``);
#: every other cycle fails. An entry whose import is gone must be dropped.
CYCLE_EDGES: dict[tuple[str, str], str] = {}


def test_no_import_cycles_between_modules() -> None:
    known = modules()
    graph = {
        name: {
            t
            for t, _ in imported(path, known)
            if t in known and t != name and (name, t) not in CYCLE_EDGES
        }
        for name, path in known.items()
    }
    present = {(name, t) for name, path in known.items() for t, _ in imported(path, known)}
    assert not CYCLE_EDGES.keys() - present, "imports no longer made, drop from CYCLE_EDGES"
    # a package's __init__ is imported by its modules implicitly; only explicit edges count
    seen: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        seen[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if seen.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in seen and (cycle := visit(nxt)):
                return cycle
        seen[node] = 2
        stack.pop()
        return None

    for start in sorted(graph):
        if start not in seen and (cycle := visit(start)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def borrowed_private_names(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """``module._name`` for each private name ``path`` takes from another module of the
    package: imported by name (``from mmjudge.x import _y``) or read off an imported module
    (``x._y``)."""
    tree = syntax_tree(path)
    modules_by_alias: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in OWN_PACKAGES:
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in known:
                    modules_by_alias[alias.asname or alias.name] = full
                elif private(alias.name):
                    yield full, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in OWN_PACKAGES:
                    modules_by_alias[alias.asname or top] = alias.name if alias.asname else top
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            dotted: list[str] = []
            base: ast.expr = node.value
            while isinstance(base, ast.Attribute):
                dotted.insert(0, base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules_by_alias:
                owner = ".".join([modules_by_alias[base.id], *dotted])
                if owner in known:
                    yield f"{owner}.{node.attr}", node.lineno


def test_no_private_name_is_taken_from_another_module() -> None:
    """A name with a leading underscore is its module's own; one another module needs is
    made public (or the code that needs it moves next to it)."""
    known = modules()
    wrong = [
        f"{name}:{line} uses {target}"
        for name, path in known.items()
        for target, line in borrowed_private_names(path, known)
        if target.rsplit(".", 1)[0] != name
    ]
    assert not wrong, "\n".join(wrong)


#: Underscore names of other packages that are public by their documentation: ``os._exit``,
#: and the methods and fields of every named tuple (underscored only to stay clear of field
#: names).
DOCUMENTED_UNDERSCORE = {"_exit", "_replace", "_asdict", "_fields", "_make", "_field_defaults"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def own_names(known: dict[str, Path]) -> set[str]:
    """Every underscore name the package defines: functions, classes, module and class
    variables, attributes assigned on ``self`` or ``cls``, and dataclass fields."""
    names: set[str] = set()
    for path in known.values():
        for node in ast.walk(syntax_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {name for name in names if _private(name)}


def foreign_private_uses(path: Path, own: set[str]) -> Iterator[tuple[str, int]]:
    """Underscore names of other packages that ``path`` imports, reads, looks up by name
    (``getattr``, ``hasattr``) or patches, and the classes and modules of other packages it
    sets attributes on (``setattr(Hydra, ...)``, ``Hydra.get_mode = ...``)."""
    tree = syntax_tree(path)
    foreign: set[str] = set()  # names bound by importing another package (not the stdlib's)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in (*OWN_PACKAGES, "__future__"):
                continue
            if any(_private(part) for part in node.module.split(".")):
                yield f"from {node.module} import ...", node.lineno
            for alias in node.names:
                if _private(alias.name):
                    yield f"from {node.module} import {alias.name}", node.lineno
                if node.module.split(".")[0] not in sys.stdlib_module_names:
                    foreign.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in OWN_PACKAGES:
                    continue
                if any(_private(part) for part in alias.name.split(".")):
                    yield f"import {alias.name}", node.lineno
                if alias.name.split(".")[0] not in sys.stdlib_module_names:
                    foreign.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            yield from _by_name(node, node.func.id, own, foreign)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            yield from _attribute(node, own, foreign)


def _constant_text(node: ast.expr) -> str | None:
    """The text of a string literal, or the literal parts of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    return None


def _by_name(
    node: ast.Call, function: str, own: set[str], foreign: set[str]
) -> Iterator[tuple[str, int]]:
    """A private module imported by name, a private attribute looked up by name, or another
    package's class patched through ``setattr``."""
    first = _constant_text(node.args[0]) if node.args else None
    if function in ("import_module", "__import__") and first is not None:
        if any(_private(part) for part in first.split(".")[1:]):
            yield f"{function}({first!r})", node.lineno
        return
    if function not in ("getattr", "hasattr", "setattr", "delattr") or len(node.args) < 2:
        return
    name = _constant_text(node.args[1])
    if name is not None and _private(name) and name not in own:
        yield f"{function}(..., {name!r})", node.lineno
    target = node.args[0]
    if function in ("setattr", "delattr") and isinstance(target, ast.Name) and target.id in foreign:
        yield f"{function}({target.id}, ...) patches another package", node.lineno


def _attribute(node: ast.Attribute, own: set[str], foreign: set[str]) -> Iterator[tuple[str, int]]:
    """An attribute of another package's set or deleted, or a private one read."""
    base = node.value
    patched = isinstance(node.ctx, ast.Store | ast.Del)
    if patched and isinstance(base, ast.Name) and base.id in foreign:
        yield f"{base.id}.{node.attr} = ... patches another package", node.lineno
    if not _private(node.attr) or node.attr in DOCUMENTED_UNDERSCORE or node.attr in own:
        return
    if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
        yield f"... .{node.attr}", node.lineno


def test_no_private_name_of_another_package_is_used() -> None:
    """Other packages are used through their public API only: no import of or attribute
    access to a name of theirs with a leading underscore, and none of their classes or
    modules patched, so that their next release cannot break a path a user runs without
    breaking a public contract. (An attribute is taken to be another package's when the
    package defines no name like it; ``os._exit`` and named tuples' methods are public.)"""
    known = modules()
    own = own_names(known)
    wrong = [
        f"{name}:{line} uses {what}"
        for name, path in known.items()
        for what, line in foreign_private_uses(path, own)
    ]
    assert not wrong, "\n".join(wrong)


def room(module: str) -> str:
    """The room a module lives in: its package under ``mmjudge``, or itself at the top; the
    Hydra plugins are the command line's room."""
    if is_plugin(module):
        return "cli"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycles_between_rooms() -> None:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges = graph.setdefault(room(name), set())
        edges |= {room(t) for t, _ in imported(path, known) if t not in OWN_PACKAGES} - {room(name)}
    cycles = []
    for start in sorted(graph):
        # every room reachable from ``start``; a cycle when ``start`` is among them
        reached, todo = set(), list(graph[start])
        while todo:
            here = todo.pop()
            if here not in reached:
                reached.add(here)
                todo.extend(graph.get(here, ()))
        if start in reached:
            cycles.append(start)
    assert not cycles, f"rooms that import themselves through others: {cycles}"


#: Public functions and methods of ``mmjudge`` with ``dict[str, Any]`` in their signature: a
#: ceiling that only comes down (105 before the run folders' files had typed records, 58 before
#: the studies' answers and the report's sections had theirs; issue 45 asks for at most 40).
#: What crosses modules takes a typed record; a provider's wire payload, a Vega spec, a resolved
#: Hydra config and the store's own JSON at the file boundary may stay mappings.
UNTYPED_SIGNATURES = 39


def untyped_signatures() -> list[str]:
    """``module:function`` for each public function or method (of a public class) whose
    parameters or return type say ``dict[str, Any]``."""
    found = []
    for name, path in modules().items():
        if is_plugin(name):
            continue
        scopes: list[tuple[ast.AST, str]] = [(syntax_tree(path), "")]
        while scopes:
            scope, prefix = scopes.pop()
            for node in ast.iter_child_nodes(scope):
                if isinstance(node, ast.ClassDef) and not private(node.name):
                    scopes.append((node, f"{prefix}{node.name}."))
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    if private(node.name):
                        continue
                    args = node.args
                    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                    every += [a for a in (args.vararg, args.kwarg) if a is not None]
                    notes = [a.annotation for a in every if a.annotation is not None]
                    notes += [node.returns] if node.returns is not None else []
                    if any("dict[str, Any]" in ast.unparse(note) for note in notes):
                        found.append(f"{name}:{prefix}{node.name}")
    return sorted(found)


def test_untyped_dicts_in_public_signatures_do_not_grow() -> None:
    found = untyped_signatures()
    assert len(found) <= UNTYPED_SIGNATURES, (
        f"{len(found)} public signatures take or give dict[str, Any] (at most "
        f"{UNTYPED_SIGNATURES}): type what crosses modules with a record:\n" + "\n".join(found)
    )


def test_every_long_file_is_named_with_its_reason() -> None:
    long = {
        name
        for name, path in modules().items()
        if len(path.read_text(encoding="utf-8").splitlines()) > MAX_FILE_LINES
    }
    unnamed, shorter = sorted(long - LONG_FILES.keys()), sorted(LONG_FILES.keys() - long)
    assert not unnamed, (
        f"over {MAX_FILE_LINES} lines: {unnamed}. If the file divides into concepts, split it "
        "there; if it is one idea, add it to LONG_FILES with why (never compact it to fit)"
    )
    assert not shorter, f"no longer over {MAX_FILE_LINES} lines, drop from LONG_FILES: {shorter}"
    assert all(reason.strip() for reason in LONG_FILES.values()), "each entry needs its reason"


def too_long(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return (node.end_lineno or node.lineno) - node.lineno + 1 > MAX_FUNCTION_LINES


def test_every_long_function_is_named_with_its_reason() -> None:
    long = set()
    for name, path in modules().items():
        for node in ast.walk(syntax_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and too_long(node):
                long.add(f"{name}:{node.name}")
    unnamed = sorted(long - LONG_FUNCTIONS.keys())
    shorter = sorted(LONG_FUNCTIONS.keys() - long)
    assert not unnamed, (
        f"over {MAX_FUNCTION_LINES} lines: {unnamed}. Split it into named steps where it has "
        "them; if it is one step, add it to LONG_FUNCTIONS with why"
    )
    assert not shorter, f"no longer over {MAX_FUNCTION_LINES} lines, drop: {shorter}"
    assert all(reason.strip() for reason in LONG_FUNCTIONS.values()), "each entry needs its reason"
