"""mmjudge: measure LLM and multimodal LLM relevance judges against humans, with exact costs."""

from pathlib import Path

__version__ = "0.1.0"

#: The project root holding ``conf/``, ``datasets/``, ``results/`` and ``reports/``.
#: Relative paths in configs are resolved against it, never against the working directory.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
