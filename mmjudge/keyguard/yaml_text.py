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

_BASE: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

#: The words YAML 1.1 reads as booleans, which OmegaConf quotes when they are strings.
_YAML_BOOLEANS = frozenset(
    case(word)
    for word in ("y", "yes", "n", "no", "true", "false", "on", "off")
    for case in (str.lower, str.capitalize, str.upper)
)


def _reads_as_number(text: str, kind: type) -> bool:
    try:
        kind(text)
    except ValueError:
        return False
    return True


def quoted_by_omegaconf(text: str) -> bool:
    """Whether ``OmegaConf.to_yaml`` single-quotes the string ``text``: when it would read
    back as a boolean, an integer or a float (as Python reads numbers: ``1_000``, ``nan``)."""
    return text in _YAML_BOOLEANS or _reads_as_number(text, int) or _reads_as_number(text, float)


class _Dumper(_BASE):
    """A safe dumper quoting strings the way OmegaConf's does, with no anchors (OmegaConf's
    round trip copies every node, so a list used twice is written twice)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: Any, data: str) -> Any:
    quoted = quoted_by_omegaconf(data)
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
