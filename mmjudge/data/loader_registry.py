"""The dataset loaders, registered by name in one module-level table (``dataset.loader``).

Registration is explicit and a name can be taken once: :func:`register` refuses a second
loader under a name already in use, so a plugin cannot silently replace a shipped loader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from mmjudge.config import DatasetConfig
from mmjudge.data import flickr8k, hm, jsonl, table, trec
from mmjudge.data.schema import Example
from mmjudge.errors import ConfigError

#: Turns a dataset config into its stream of examples.
Loader = Callable[[DatasetConfig], Iterator[Example]]

LOADERS: dict[str, Loader] = {}


def register(name: str, loader: Loader) -> None:
    """Make ``loader`` the one for ``dataset.loader=name``; a name already taken is an error."""
    if name in LOADERS:
        raise ValueError(f"a dataset loader named '{name}' is already registered")
    LOADERS[name] = loader


def loader_for(cfg: DatasetConfig) -> Loader:
    """The loader ``cfg`` names; a one-line error listing the names when it is unknown."""
    loader = LOADERS.get(cfg.loader)
    if loader is None:
        raise ConfigError(
            f"dataset.loader='{cfg.loader}' is unknown for dataset '{cfg.name}'; "
            f"choose one of: {', '.join(sorted(LOADERS))}"
        )
    return loader


register("jsonl", jsonl.load)
register("hm", hm.load)
register("flickr8k_expert", flickr8k.load)
register("trec", trec.load)
register("table", table.load)
