"""``mmjudge init [DIR]``: write a starter folder of the user's own configs.

The folder holds one example of each kind of config a user adds — a dataset (with a few
items), a judge on an OpenAI-compatible server, a price sheet, a prompt variant and a named
sweep — under the config groups' folder names, so ``mmjudge sweep -cd DIR …`` picks them up
beside the shipped configs. Nothing of the package's own configs is copied.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from mmjudge.cli.exits import fail

PROG = "mmjudge init"
DEFAULT_FOLDER = "mmjudge-conf"

#: Written into the starter files where they name their own folder (commands, the dataset's
#: path), so what they say can be pasted as it is.
FOLDER_MARK = "@FOLDER@"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Write a folder of your own configs with one example of each kind (dataset, "
            "model, price sheet, prompt, experiment); use it with mmjudge sweep -cd DIR."
        ),
    )
    parser.add_argument(
        "folder",
        nargs="?",
        default=DEFAULT_FOLDER,
        help=f"the folder to write (default: {DEFAULT_FOLDER}); it must not exist or be empty",
    )
    return parser


def starter_files() -> dict[str, str]:
    """The starter folder's files, by path inside it, as shipped (with the folder mark)."""
    files: dict[str, str] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            name = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, name + "/")
            elif not child.name.endswith((".py", ".pyc")):
                files[name] = child.read_text(encoding="utf-8")

    walk(resources.files("mmjudge").joinpath("starter"), "")
    return files


def write_starter(folder: Path, shown_as: str | None = None) -> list[Path]:
    """Write the starter files into ``folder`` (created; it must not hold anything yet).

    ``shown_as`` is how the files name the folder in the commands and the dataset path they
    contain (default: ``folder`` as given), which should be the path from where the user runs
    commands. Returns the files written.
    """
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder} already exists and is not empty; name a new folder")
    label = (shown_as or str(folder)).replace("\\", "/").rstrip("/") or "."
    written = []
    for name, text in starter_files().items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace(FOLDER_MARK, label), encoding="utf-8")
        written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    folder = Path(args.folder)
    try:
        written = write_starter(folder, args.folder)
    except (FileExistsError, OSError) as error:
        return fail(PROG, str(error))
    print(f"wrote {len(written)} files to {folder}/ (see {folder / 'README.md'})")
    print(f"try: mmjudge sweep -cd {args.folder} dataset=my_catalogue")
    return 0
