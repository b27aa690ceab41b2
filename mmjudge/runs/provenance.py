"""Where a run's numbers came from: package versions and the project's git commit."""

from __future__ import annotations

import subprocess
from importlib import metadata

from mmjudge import PROJECT_ROOT, __version__

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
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
