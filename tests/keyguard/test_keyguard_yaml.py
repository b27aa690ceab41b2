"""The ``.hydra/`` files are written as ``OmegaConf.to_yaml`` would write them
(:mod:`mmjudge.keyguard.yaml_text`): the same text for every shipped config option, and text
that reads back as the same values for strings that look like other types."""

from __future__ import annotations

import enum

import pytest
import yaml
from omegaconf import OmegaConf

from mmjudge.keyguard.yaml_text import yaml_text
from tests.helpers import compose_option, shipped_options


def omegaconf_text(tree: object) -> str:
    return OmegaConf.to_yaml(OmegaConf.create(tree))


@pytest.mark.slow  # over a second: every shipped option composed
def test_every_shipped_option_is_written_as_omegaconf_writes_it() -> None:
    for group, option in shipped_options():
        cfg = compose_option(group, option, hydra=True)
        for node in (cfg, cfg.hydra):
            tree = OmegaConf.to_container(node, resolve=False, enum_to_str=True)
            assert yaml_text(tree) == omegaconf_text(tree), f"{group}={option}"


LOOKALIKES = [
    "true", "False", "yes", "No", "on", "OFF", "y", "n", "null", "~", "1", "-7", "1_000",
    "0x1f", "0o17", "1e3", "1.5", ".5", "nan", "inf", "-Infinity", " 5", "5 ", "", " ",
    "${model.name}", "${oc.env:HOME}", "a: b", "- x", "#not a comment", "it's", 'say "hi"',
    "line one\nline two", "trailing newline\n", "tab\there", "ünïcödé ✓", "日本語",
    "x" * 200, "word " * 40, "@at", "`tick", "%pct", "!bang", "&amp", "*star", "|pipe", ">gt",
    "[list]", "{map}", "?q", "2024-01-01", "12:30", "\u2028sep", "\x85nel",
]  # fmt: skip


@pytest.mark.parametrize("text", LOOKALIKES)
def test_strings_read_back_as_the_same_strings(text: str) -> None:
    tree = {"value": text, "nested": [{"k": text}, text], text: 1}
    written = yaml_text(tree)
    assert yaml.safe_load(written) == tree
    assert OmegaConf.to_container(OmegaConf.create(written)) == tree


def test_scalars_and_shared_objects_read_back_unchanged() -> None:
    shared = [1, 2]
    tree = {"a": shared, "b": shared, "f": 0.1, "big": 10**30, "neg": -0.0, "none": None}
    written = yaml_text(tree)
    assert "&" not in written and "*" not in written  # no anchors, as OmegaConf writes it
    assert written == omegaconf_text(tree)


def test_what_a_safe_dumper_cannot_write_takes_omegaconfs_way() -> None:
    class Colour(enum.Enum):
        RED = 1

    tree = {"colour": Colour.RED}
    assert yaml_text(tree) == OmegaConf.to_yaml(OmegaConf.create(tree))
