"""The packages of the distribution (everything else is in pyproject.toml).

The shipped config groups (``conf/``) and demo datasets (``datasets/``) sit at the top of the
repository and install as ``mmjudge.conf`` and ``mmjudge.datasets`` (``package-dir`` in
pyproject.toml). Their subfolders are listed here as packages, so their files come along as
package data; of ``datasets/`` only the demos go in, never a user's own folders beside them.
"""

from setuptools import find_namespace_packages, setup

#: The demo datasets the wheel carries (the shipped dataset configs name them as
#: ``pkg://mmjudge/datasets/<name>``).
DEMO_DATASETS = ("demo_fashion", "demo_multilingual")


def _under(package: str, folder: str, include: tuple[str, ...] = ("*",)) -> list[str]:
    found = find_namespace_packages(where=folder, include=include)
    return [package, *(f"{package}.{name}" for name in found)]


packages = [
    *find_namespace_packages(include=["mmjudge", "mmjudge.*"], exclude=["*.__pycache__"]),
    # mmjudge's Hydra sweeper (sweeps and races): Hydra finds plugins in the hydra_plugins namespace
    "hydra_plugins.mmjudge_grid",
    *_under("mmjudge.conf", "conf", ("[a-z]*",)),
    *_under(
        "mmjudge.datasets",
        "datasets",
        tuple(p for name in DEMO_DATASETS for p in (name, f"{name}.*")),
    ),
]

setup(packages=packages)
