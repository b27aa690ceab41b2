"""The names ``import mmjudge`` offers: each resolves, is documented, and is declared for
type checkers in ``mmjudge/__init__.pyi``."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import mmjudge

STUB = Path(mmjudge.__file__).with_suffix(".pyi")


@pytest.mark.parametrize("name", [n for n in mmjudge.__all__ if n != "__version__"])
def test_every_name_resolves_and_is_documented(name: str) -> None:
    value = getattr(mmjudge, name)
    assert inspect.getdoc(value), f"mmjudge.{name} has no docstring"


def test_the_stub_declares_exactly_the_surface() -> None:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module != "pathlib"
        for alias in node.names
    }
    [listed] = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    ]
    assert isinstance(listed, ast.List)
    stub_all = {elt.value for elt in listed.elts if isinstance(elt, ast.Constant)}
    assert stub_all == set(mmjudge.__all__)
    assert imported == set(mmjudge.__all__) - {"__version__"}


def test_the_stub_imports_each_name_from_the_module_that_defines_it() -> None:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "pathlib":
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert getattr(mmjudge, alias.asname or alias.name) is getattr(module, alias.name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = mmjudge.no_such_thing  # type: ignore[attr-defined]


def test_the_package_ships_its_type_marker() -> None:
    assert (Path(mmjudge.__file__).parent / "py.typed").is_file()


@pytest.mark.slow
def test_importing_the_package_loads_nothing_else() -> None:
    probe = "import sys, mmjudge; print(sorted(m for m in sys.modules if m.startswith('mmjudge')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['mmjudge']"
