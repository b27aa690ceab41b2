"""Where a run's numbers came from: package versions and the project's git commit."""

from __future__ import annotations

from importlib import metadata

from mmjudge import __version__
from mmjudge.locations import source_checkout_commit

PACKAGES = ("mmjudge", "hydra-core", "openai", "anthropic", "pillow", "pandas", "numpy", "tiktoken")


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = __version__ if name == "mmjudge" else "not installed"
    return versions


def git_commit() -> str | None:
    """The commit of mmjudge's source when it runs from a git checkout of it; None for an
    installed wheel."""
    return source_checkout_commit()
