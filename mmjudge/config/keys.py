"""Unknown settings, caught before Hydra composes the config and answered in one line.

Hydra reports a misspelt key in several lines and without the keys that would have been
right. :func:`unknown_setting` checks the command line's overrides and the group files they
select against the structured config (:class:`~mmjudge.config.SweepConfig`) first, and names
the bad key with the valid settings of its node:

    unknown setting 'dataset.limt'; valid settings of dataset: name, loader, path, ...

Anything it cannot judge (Hydra's own settings, another primary config, the group options of a
folder of the user's own configs (``--config-dir``), sweeps over globs or ranges, syntax errors)
it leaves to Hydra.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from mmjudge.config import SweepConfig

#: Flags that make Hydra print something and stop instead of running.
_INFO_FLAGS = (
    "--help",
    "-h",
    "--hydra-help",
    "--version",
    "--info",
    "-i",
    "--shell-completion",
    "-sc",
)

#: Keys of a config file that are Hydra's, not settings.
_FILE_DIRECTIVES = ("defaults", "hydra")


#: libyaml's parser where PyYAML was built with it (its wheels are), else the pure-Python one:
#: the same documents, several times faster on the config files read before every run.
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_YAML_LOADER)


def unknown_setting(argv: list[str], conf_dir: Path) -> str | None:
    """A one-line message for the first unknown setting or group option, else ``None``."""
    parsed = _parse(argv)
    if parsed is None:
        return None
    overrides, user_dir = parsed
    groups = sorted(p.name for p in conf_dir.iterdir() if p.is_dir())
    if user_dir is not None:
        return _unknown_with_user_dir(overrides, groups, user_dir)
    chosen = _default_choices(conf_dir, groups)
    for override in overrides:
        key = override.key_or_group
        if key.split(".")[0].split("/")[0] == "hydra" or override.package is not None:
            continue
        if override.is_delete():
            continue
        if key in groups:
            options = _options(override)
            if options is None:
                chosen.pop(key, None)
                continue
            for option in options:
                problem = _unknown_option(conf_dir, key, option)
                if problem:
                    return problem
            chosen[key] = options
            continue
        problem = _check_path(key.split("."), where="") or _check_value(
            key.split("."), _values(override), where=""
        )
        if problem:
            return problem
    for group, options in chosen.items():
        for option in options:
            problem = _check_file(conf_dir, group, option)
            if problem:
                return problem
    return _check_yaml(conf_dir / "config.yaml", [])


def _unknown_with_user_dir(overrides: list[Any], groups: list[str], user_dir: Path) -> str | None:
    """With ``--config-dir`` (a folder of the user's own configs, ``mmjudge init``): the
    settings named on the command line are checked; the group options and files, which that
    folder may add to, are left to Hydra."""
    if user_dir.is_dir():
        groups = sorted({*groups, *(p.name for p in user_dir.iterdir() if p.is_dir())})
    for override in overrides:
        key = override.key_or_group
        if key.split(".")[0].split("/")[0] == "hydra" or override.package is not None:
            continue
        if override.is_delete() or key.split("/")[0] in groups:
            continue
        problem = _check_path(key.split("."), where="") or _check_value(
            key.split("."), _values(override), where=""
        )
        if problem:
            return problem
    return None


def _hydra_command_line() -> argparse.ArgumentParser:
    """A parser for the command line ``@hydra.main`` reads: its documented flags (``--help``
    lists them), those that take a value declared with it, so that what is left are the
    overrides. Hydra itself parses the command line again when it runs; this one only finds
    the overrides to check."""
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    parser.add_argument("overrides", nargs="*")
    for flags in (("--help", "-h"), ("--hydra-help",), ("--version",), ("--resolve",)):
        parser.add_argument(*flags, action="store_true")
    for flags in (("--run", "-r"), ("--multirun", "-m"), ("--shell-completion", "-sc")):
        parser.add_argument(*flags, action="store_true")
    parser.add_argument("--cfg", "-c", choices=["job", "hydra", "all"])
    parser.add_argument("--package", "-p")
    parser.add_argument("--config-path", "-cp")
    parser.add_argument("--config-name", "-cn")
    parser.add_argument("--config-dir", "-cd")
    parser.add_argument("--experimental-rerun")
    info = ["all", "config", "defaults", "defaults-tree", "plugins", "searchpath"]
    parser.add_argument("--info", "-i", nargs="?", const="all", choices=info)
    return parser


def _parse(argv: list[str]) -> tuple[list[Any], Path | None] | None:
    """The command line's overrides parsed as Hydra parses them, with the ``--config-dir``
    folder it names (else None); ``None`` when Hydra should answer instead."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    if any(arg.split("=")[0] in _INFO_FLAGS for arg in argv):
        return None  # help, version and the like: Hydra answers them
    parser = _hydra_command_line()
    try:
        args, _unknown = parser.parse_known_args(argv)
    except argparse.ArgumentError:
        return None  # Hydra reports it
    if args.config_path or args.config_name or args.experimental_rerun:
        return None  # another primary config: its settings are not known here
    try:
        overrides = OverridesParser.create().parse_overrides(args.overrides)
    except HydraException:
        return None
    if any(o.key_or_group in ("hydra.searchpath", "hydra/searchpath") for o in overrides):
        return None
    return list(overrides), (Path(args.config_dir) if args.config_dir else None)


def config_dir_of(argv: list[str]) -> Path | None:
    """The ``--config-dir`` (``-cd``) folder a command line names, if any."""
    try:
        args, _unknown = _hydra_command_line().parse_known_args(argv)
    except argparse.ArgumentError:
        return None
    return Path(args.config_dir) if args.config_dir else None


def _options(override: Any) -> list[str] | None:
    """The group options an override selects; ``None`` for sweeps it cannot list (globs)."""
    if override.is_sweep_override():
        kind = override.value_type.name if override.value_type is not None else ""
        if kind not in ("CHOICE_SWEEP", "SIMPLE_CHOICE_SWEEP"):
            return None
        return [str(option) for option in override.sweep_string_iterator()]
    value = override.get_value_element_as_str()
    return None if value in ("null", "None") else [value]


def _default_choices(conf_dir: Path, groups: list[str]) -> dict[str, list[str]]:
    """The group options the primary config's defaults list selects."""
    data = _load_yaml((conf_dir / "config.yaml").read_text(encoding="utf-8")) or {}
    chosen: dict[str, list[str]] = {}
    for entry in data.get("defaults") or []:
        if isinstance(entry, Mapping):
            for group, option in entry.items():
                if group in groups and option is not None:
                    chosen[str(group)] = [str(option)]
    return chosen


def _unknown_option(conf_dir: Path, group: str, option: str) -> str | None:
    if (conf_dir / group / f"{option}.yaml").is_file():
        return None
    valid = sorted(path.stem for path in (conf_dir / group).glob("*.yaml"))
    return (
        f"unknown option '{option}' for {group}; valid options: {', '.join(valid)}"
        f"{_own_folder_hint(group, option)}"
    )


#: Folders under the working one looked into for a config of the user's own, at most.
_LOOKED_INTO = 200


def _own_folder_hint(group: str, option: str) -> str:
    """Where a config of the user's own by that name may be, for a command that forgot its
    ``-cd``: the working folder or one of its folders when it holds ``GROUP/OPTION.yaml``,
    else how to add one."""
    wanted = Path(group) / f"{option}.yaml"
    here = Path.cwd()
    try:
        below = sorted(p for p in here.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        below = []
    for folder in [here, *below[:_LOOKED_INTO]]:
        if (folder / wanted).is_file():
            name = "." if folder == here else folder.name
            return f"; {name}/{wanted} is a config of your own: add -cd {name} to the command"
    return f"; for a config of your own, add -cd DIR, the folder where your {group}/ folder lives"


def _check_file(conf_dir: Path, group: str, option: str) -> str | None:
    """Keys of a selected group file that its node does not have."""
    if group not in (_fields(SweepConfig) or {}):
        return None  # a group placed elsewhere (an experiment file, say): Hydra checks it
    return _check_yaml(conf_dir / group / f"{option}.yaml", [group])


def _check_yaml(path: Path, prefix: list[str]) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
        data = _load_yaml(text)
    except (OSError, yaml.YAMLError):
        return None  # Hydra names the file and the syntax error
    if not isinstance(data, Mapping) or "@package" in text:
        return None
    for key, value in _leaves(data):
        if key[0] in _FILE_DIRECTIVES:
            continue
        where = f"{path}: "
        problem = _check_path([*prefix, *key], where) or _check_value(
            [*prefix, *key], [value], where
        )
        if problem:
            return problem
    return None


def _leaves(
    data: Mapping[Any, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[list[str], Any]]:
    """Each leaf setting of a config file's mapping: its key's parts and its value."""
    for key, value in data.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, path)
        else:
            yield list(path), value


def _values(override: Any) -> list[Any]:
    """The values an override gives its setting (each of a sweep's choices; none for a sweep
    it cannot list, such as a range)."""
    if not override.is_sweep_override():
        return [override.value()]
    kind = override.value_type.name if override.value_type is not None else ""
    if kind not in ("CHOICE_SWEEP", "SIMPLE_CHOICE_SWEEP"):
        return []
    return list(override.sweep_iterator())


def _check_value(parts: list[str], values: list[Any], where: str) -> str | None:
    """A value a true/false setting would take without a word though it is neither (OmegaConf
    reads ``runner.cache=2`` as true): named in one line. Other values are checked where the
    typed config is built (:meth:`mmjudge.config.SweepConfig.validate`)."""
    if _leaf_type(parts) is not bool:
        return None
    key = ".".join(parts)
    for value in values:
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str) and value.startswith("${"):
            continue  # an interpolation: its value is checked when it is read
        shown = repr(value) if isinstance(value, str) else str(value)
        return f"{where}{key}={shown} is not allowed; {key} takes true or false"
    return None


def _leaf_type(parts: list[str]) -> Any:
    """The type the structured config gives the setting ``parts`` (its own type for an
    optional one); None where the path leaves the structured config."""
    node: Any = SweepConfig
    for part in parts:
        fields = _fields(node)
        if fields is None or part not in fields:
            return None
        node = fields[part]
    arguments = [a for a in typing.get_args(node) if a is not type(None)]
    if typing.get_origin(node) in (typing.Union, types.UnionType) and len(arguments) == 1:
        return arguments[0]
    return node


def _check_path(parts: list[str], where: str) -> str | None:
    """Walk ``parts`` down the structured config; the first name a node lacks is reported."""
    node: Any = SweepConfig
    for depth, part in enumerate(parts):
        fields = _fields(node)
        if fields is None:
            return None  # a free-form mapping, a list or a value: anything below is Hydra's
        if part not in fields:
            owner = ".".join(parts[:depth])
            of = f"of {owner}" if owner else "at the top level"
            return (
                f"{where}unknown setting '{'.'.join(parts[: depth + 1])}'; valid settings {of}: "
                f"{', '.join(fields)}"
            )
        node = fields[part]
    return None


def _fields(node: Any) -> dict[str, Any] | None:
    """A dataclass's settings and their types; ``None`` for anything else."""
    if not (isinstance(node, type) and dataclasses.is_dataclass(node)):
        return None
    return _dataclass_fields(node)


@functools.cache
def _dataclass_fields(node: type) -> dict[str, Any]:
    """Once per class: resolving the annotations compiles every one (read-only result)."""
    hints = typing.get_type_hints(node)
    return {field.name: hints[field.name] for field in dataclasses.fields(node)}


def unknown_key(key: str, where: str = "") -> str | None:
    """The one-line message for a dotted ``key`` the structured config does not have (valid
    settings of its node listed), else ``None``; ``where`` prefixes it (a file's name)."""
    return _check_path(key.split("."), where=where)
