"""The ``.hydra/`` files' YAML, written as ``OmegaConf.to_yaml`` writes it, without the cost.

``OmegaConf.to_yaml(OmegaConf.create(tree))`` builds a config of nodes from plain containers
only to turn it back into the same containers, then emits through PyYAML's pure-Python
emitter: ~45 ms for a run's three files, before the first call. Here the plain tree goes
straight to PyYAML with OmegaConf's quoting rule for strings (text that would read back as a
boolean, an integer or a float is single-quoted), through libyaml's emitter where PyYAML has
it. A tree holding anything a safe dumper cannot write takes OmegaConf's own way.
"""

from __future__ import annotations

from typing import Any

import yaml
from omegaconf import OmegaConf
from omegaconf._utils import is_float, is_int, yaml_is_bool

_BASE: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BASE):
    """A safe dumper quoting strings the way OmegaConf's does, with no anchors (OmegaConf's
    round trip copies every node, so a list used twice is written twice)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: Any, data: str) -> Any:
    quoted = yaml_is_bool(data) or is_int(data) or is_float(data)
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'" if quoted else None)


_Dumper.add_representer(str, _string)


def yaml_text(tree: Any) -> str:
    """``tree`` (plain dicts, lists and scalars) as the YAML ``OmegaConf.to_yaml`` writes."""
    try:
        text: str = yaml.dump(
            tree, Dumper=_Dumper, default_flow_style=False, allow_unicode=True, sort_keys=False
        )
    except yaml.YAMLError:
        return OmegaConf.to_yaml(OmegaConf.create(tree))
    return text
