"""Where a run's numbers came from: package versions and the project's git commit."""

from __future__ import annotations

from importlib import metadata

from mmjudge import __version__
from mmjudge.judges.registry import descriptors
from mmjudge.locations import source_checkout_commit

#: The distributions every run depends on; each judge adds its own (its descriptor's
#: ``packages``: the provider SDKs, a local judge's model library).
CORE_PACKAGES = ("mmjudge", "hydra-core", "pillow", "pandas", "numpy", "tiktoken")


def packages() -> tuple[str, ...]:
    """The distributions whose versions a run records: mmjudge's core ones, then every known
    judge's, each once."""
    judges = (name for descriptor in descriptors() for name in descriptor.packages)
    return tuple(dict.fromkeys((*CORE_PACKAGES, *judges)))


def package_versions() -> dict[str, str]:
    versions = {}
    for name in packages():
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = __version__ if name == "mmjudge" else "not installed"
    return versions


def git_commit() -> str | None:
    """The commit of mmjudge's source when it runs from a git checkout of it; None for an
    installed wheel."""
    return source_checkout_commit()
