"""Where mmjudge finds its own files and the user's: the one place paths are resolved.

Two kinds of location exist. What ships with mmjudge (the configs, the demo datasets) is package
data, read from wherever the package is installed: the modules ``mmjudge.conf`` and
``mmjudge.datasets``, which in a source checkout are the folders ``conf/`` and ``datasets/`` at
the top of the repository (mapped by pyproject.toml, for an editable install as for a wheel).
Everything a user names — results, reports, caches, their own datasets — is relative to the
folder the command runs in, so a wheel installed anywhere behaves the same as a clone, and two
projects never share files by accident.

A config may also name a folder inside an installed package as ``pkg://<package>/<path>``
(the shipped demo is ``pkg://mmjudge/datasets/demo_fashion``), the form Hydra uses for
package search paths.
"""

from __future__ import annotations

import subprocess
from importlib import resources
from pathlib import Path

from mmjudge.errors import ConfigError

#: The installed package's folder (its code; the configs and demos are found by module name).
PACKAGE_DIR = Path(__file__).resolve().parent

#: The shipped config groups as a Python module, and as Hydra's package search path entry.
CONFIG_MODULE = "mmjudge.conf"
CONFIG_SEARCH_PATH = f"pkg://{CONFIG_MODULE}"

#: The shipped config groups (``model/``, ``dataset/``, ``pricing/``…), as files on disk: the
#: folder Hydra reads through :data:`CONFIG_SEARCH_PATH` (``conf/`` in a source checkout).
CONFIG_DIR = Path(str(resources.files(CONFIG_MODULE)))

PACKAGE_SCHEME = "pkg://"


def resolve_path(value: str | Path, base: Path | None = None) -> Path:
    """A path from a config or the command line, made absolute.

    ``~`` is expanded; ``pkg://<package>/<path>`` names a folder inside an installed package;
    any other relative path is taken against ``base`` (the current working folder unless
    given), never against where mmjudge is installed.
    """
    text = str(value)
    if text.startswith(PACKAGE_SCHEME):
        return package_path(text)
    path = Path(text).expanduser()
    if path.is_absolute():
        return path
    return (base if base is not None else Path.cwd()) / path


def package_path(url: str) -> Path:
    """The folder or file a ``pkg://<package>/<path>`` location names.

    The path is taken inside the deepest package it names (``pkg://mmjudge/datasets/demo``
    is ``demo`` in the package ``mmjudge.datasets``), since a subpackage need not sit inside
    its parent's folder (``mmjudge.datasets`` is ``datasets/`` in a source checkout).
    """
    rest = url.removeprefix(PACKAGE_SCHEME).strip("/")
    package, _, inner = rest.partition("/")
    if not package:
        raise ConfigError(f"{url!r} names no package; write pkg://<package>/<path>")
    try:
        root = Path(str(resources.files(package)))
    except ModuleNotFoundError:
        raise ConfigError(
            f"{url!r}: no installed package '{package}'; write pkg://<package>/<path> with an "
            "installed package, or give a folder path"
        ) from None
    parts = [part for part in inner.split("/") if part]
    while parts and parts[0].isidentifier() and not (root / parts[0]).exists():
        package = f"{package}.{parts[0]}"
        try:
            root = Path(str(resources.files(package)))
        except (ModuleNotFoundError, TypeError):  # no such subpackage: the path as named
            return root.joinpath(*parts)
        parts.pop(0)
    return root.joinpath(*parts)


def source_checkout_commit() -> str | None:
    """The git commit of mmjudge's own source, when it runs from a git checkout of mmjudge.

    None for an installed wheel, or when the package merely sits inside some other git
    repository (a virtual environment in a user's project must not report that project's
    commit as mmjudge's).
    """
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"],
            cwd=PACKAGE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = top.stdout.splitlines()
    if top.returncode != 0 or len(lines) != 2:
        return None
    toplevel, commit = lines
    if Path(toplevel).resolve() / "mmjudge" != PACKAGE_DIR:
        return None
    return commit
