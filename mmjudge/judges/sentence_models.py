"""Loading sentence-transformers models from a folder or a name, as the local judges do: one
place that knows a bare Hugging Face CLIP checkpoint needs sentence-transformers' CLIP module
around it, and how embeddings are made unit length for cosines."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


def unit_rows(vectors: Any) -> np.ndarray:
    """Each row of ``vectors`` scaled to length 1 (cosines become dot products)."""
    import numpy as np

    array = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    result: np.ndarray = array / np.maximum(norms, 1e-12)
    return result


def open_model(source: str, *, clip: bool, device: str | None = None) -> Any:
    """A sentence-transformers model from ``source`` (a folder or a model name); with ``clip``,
    a folder holding a bare Hugging Face CLIP checkpoint (no ``modules.json``) is wrapped in
    sentence-transformers' CLIP module. Blocking; the loader's own errors pass through."""
    from sentence_transformers import SentenceTransformer

    kwargs: dict[str, Any] = {"device": device} if device else {}
    directory = Path(source)
    bare_clip = (
        clip
        and directory.is_dir()
        and not (directory / "modules.json").exists()
        and (directory / "config.json").exists()
    )
    if bare_clip:
        return SentenceTransformer(modules=[_clip_module(source)], **kwargs)
    return SentenceTransformer(source, **kwargs)


def _clip_module(directory: str) -> Any:
    """sentence-transformers' CLIP module around a bare Hugging Face CLIP checkpoint."""
    try:  # sentence-transformers >= 5.4, where the module moved (and ``load`` is quiet)
        from sentence_transformers.sentence_transformer.modules import clip_model
    except ImportError:
        legacy = importlib.import_module("sentence_transformers.models")
        return legacy.CLIPModel(directory)
    return clip_model.CLIPModel.load(directory)
