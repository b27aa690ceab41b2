"""The package's shape, checked: rooms import only from their own or earlier stages, no
import cycles between modules or between rooms, no private name taken from another module,
and every file over 500 lines or function over 60 named with why it is one piece.

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
STAGES: list[tuple[str, ...]] = [
    ("__init__", "errors", "records", "files", "keyguard", "images", "departures"),
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
COMMAND_LINE = ("mmjudge.cli", "mmjudge.sweep", "mmjudge.__main__")
#: Sizes past which a file or a function is worth a second look: it may hold two ideas that
#: would read better apart. They are prompts, not limits: a file that is one idea stays whole
#: (a module carved out only to get under a count is harder to read, and code is never
#: squeezed to fit). Each file or function past its size is named below with why it is one
#: piece, so the list is read whenever one grows past it.
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60

#: Files over :data:`MAX_FILE_LINES`, each with why it stays one file.
LONG_FILES: dict[str, str] = {
    "mmjudge.engine.sync": "one class, the sync runner: scheduling and each call's retries "
    "share its slots, limits, claims and stop state",
    "mmjudge.engine.response_cache": "the answers and the claims on them share one SQLite "
    "connection, its write transactions and the one-line error of every step on the file "
    "(the request keys or the claims are where it would divide)",
    "mmjudge.estimation.planning": "the two plans (κ to ± a half-width, best against "
    "runner-up) and the per-dataset entries of `mmjudge plan` built from their fields; what a "
    "small pilot can say and the budget split are apart already (pilot.py, budget.py), and the "
    "entries are where it divides once they become a typed record of store/",
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
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def stage(module: str) -> int:
    """The stage of the longest entry of :data:`STAGES` that names ``module`` or its room."""
    dotted = module.removeprefix("mmjudge.") if module != "mmjudge" else "__init__"
    best: tuple[int, int] | None = None
    for index, names in enumerate(STAGES):
        for name in names:
            named = dotted == name or dotted.startswith(name + ".")
            if named and (best is None or len(name) > best[1]):
                best = (index, len(name))
    assert best is not None, f"{module}: in no stage of tests/project/test_architecture.py"
    return best[0]


def imported(path: Path, known: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The package modules ``path`` imports (``from mmjudge import x`` names module x when
    there is one), with the line of each import."""
    for node in ast.walk(syntax_tree(path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "mmjudge":
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                yield (full if full in known else node.module), node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mmjudge":
                    yield alias.name, node.lineno


def test_every_import_goes_to_the_same_or_an_earlier_stage() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        for target, line in imported(path, known):
            if target != "mmjudge" and stage(target) > stage(name):
                wrong.append(f"{name}:{line} imports {target} (a later stage)")
    assert not wrong, "\n".join(wrong)


def in_command_line(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in COMMAND_LINE)


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


def test_no_import_cycles_between_modules() -> None:
    known = modules()
    graph = {
        name: {t for t, _ in imported(path, known) if t in known and t != name}
        for name, path in known.items()
    }
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
            if node.module.split(".")[0] != "mmjudge":
                continue
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in known:
                    modules_by_alias[alias.asname or alias.name] = full
                elif private(alias.name):
                    yield full, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mmjudge":
                    modules_by_alias[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else "mmjudge"
                    )
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
            if node.module.split(".")[0] in ("mmjudge", "__future__"):
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
                if alias.name.split(".")[0] == "mmjudge":
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
    """The room a module lives in: its package under ``mmjudge``, or itself at the top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_import_cycles_between_rooms() -> None:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges = graph.setdefault(room(name), set())
        edges |= {room(t) for t, _ in imported(path, known) if t != "mmjudge"} - {room(name)}
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
