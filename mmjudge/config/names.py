"""What a cell is called: its run folder's name and the name the console and report show.

Each is built here once. The shipped ``conf/config.yaml`` builds ``hydra.run.dir`` and
``hydra.sweep.subdir`` through the ``mmjudge_run_folder`` resolver, which calls
:func:`run_folder_name`, and the library names its folders with the same function, so
``mmjudge sweep``, ``python -m mmjudge.sweep`` and :func:`mmjudge.run_cell` or
:func:`mmjudge.run_sweep` save one cell under one name.

A name that becomes part of a path is made safe first (:func:`path_part`): no separator, no
``..``, never empty, so a model or dataset named ``../x`` or ``a/b`` is written inside
``paths.results`` like any other; a report named after many folders is kept short enough for
a folder's name (:func:`report_folder_name`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from mmjudge.config.request import language_suffix, passages_suffix

#: The prompt a cell uses unless one is chosen (``conf/config.yaml``'s defaults list).
DEFAULT_PROMPT = "default"
#: A cell judged on results as they are (``perturb=none``).
NO_PERTURBATION = "none"
#: The time a single run's folder name starts with (Hydra's ``${now:…}`` in
#: ``conf/config.yaml`` uses the same pattern).
STAMP_FORMAT = "%Y-%m-%d_%H-%M-%S"
#: Between the parts of a single run's folder name, and of a sweep cell's subfolder.
RUN_SEPARATOR = "_"
SWEEP_SEPARATOR = "."


#: Path separators and control characters, which a name in a path does not keep.
_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]")
#: Two dots or more: a name made of them, or holding them, could climb out of its folder.
_DOTS = re.compile(r"\.{2,}")
#: What stands for what a name does not keep, and for an empty name.
PLACEHOLDER = "-"
#: The longest name of a folder mmjudge makes, in bytes (file systems allow 255).
NAME_BYTES = 200


def path_part(name: object) -> str:
    """``name`` made safe as a folder's name, or a part of one: path separators and control
    characters become ``-``, as does a run of two dots or more, and an empty name is ``-``.
    An ordinary name (letters, digits, ``-``, ``_``, single dots) is left as it is."""
    text = _DOTS.sub(PLACEHOLDER, _UNSAFE.sub(PLACEHOLDER, str(name)))
    return text or PLACEHOLDER


def report_folder_name(run_names: Sequence[str], given: str | None = None) -> str:
    """The folder name of a report: ``given`` (``--name``), else the names of the folders
    it reports on joined by ``+``, made safe (:func:`path_part`). A name longer than
    :data:`NAME_BYTES` is cut: the first folders' names, how many more, and a hash of the
    whole, so reports on different folders never share a folder."""
    full = path_part(given or "+".join(run_names))
    if len(full.encode("utf-8")) <= NAME_BYTES:
        return full
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:10]
    if given or len(run_names) < 2:
        return f"{_cut(full, NAME_BYTES - 11)}-{digest}"
    kept: list[str] = []
    for name in run_names:
        more = f"+{len(run_names) - len(kept) - 1}-more-{digest}"
        if len(("+".join([*kept, name]) + more).encode("utf-8")) > NAME_BYTES:
            break
        kept.append(name)
    more = f"+{len(run_names) - max(len(kept), 1)}-more-{digest}"
    head = "+".join(kept) if kept else _cut(run_names[0], NAME_BYTES - len(more))
    return path_part(head + more)


def _cut(text: str, size: int) -> str:
    """``text`` cut to at most ``size`` bytes of UTF-8, at a character's boundary."""
    return text.encode("utf-8")[:size].decode("utf-8", errors="ignore")


def cell_prompt_id(
    prompt_id: object,
    language: object = "en",
    passages: object = 1,
    answer: object = "auto",
    reasons: object = False,
) -> str:
    """The prompt's id as a cell carries it: ``-<language>`` appended for a language other
    than English, then ``-k<K>`` for several results per call, with the answer's format and
    reasons where they are not the default (:func:`~mmjudge.config.request.passages_suffix`;
    each once: an id that ends with it already is kept)."""
    text = str(prompt_id)
    for suffix in (language_suffix(language), passages_suffix(passages, answer, reasons)):
        if suffix and not text.endswith(suffix):
            text += suffix
    return text


def run_folder_name(
    dataset: object,
    model: object,
    modality: object,
    prompt_id: object,
    language: object = "en",
    perturb: object = NO_PERTURBATION,
    *,
    separator: str = RUN_SEPARATOR,
    stamp: str | None = None,
    passages: object = 1,
    answer: object = "auto",
    reasons: object = False,
) -> str:
    """A cell's folder name: ``[<stamp>_]<dataset>_<model>_<modality>_<prompt>[-<language>]
    [_<perturbation>]`` with ``separator`` between the parts (``_`` for a single run's folder,
    ``.`` for a sweep cell's subfolder, which takes no stamp), made safe (:func:`path_part`).
    English and ``perturb=none`` add nothing, so such cells keep the folders they always
    had."""
    parts = [
        str(dataset),
        str(model),
        str(modality),
        cell_prompt_id(prompt_id, language, passages, answer, reasons),
    ]
    if perturb not in (None, NO_PERTURBATION):
        parts.append(str(perturb))
    if stamp:
        parts.insert(0, stamp)
    return path_part(separator.join(parts))


def cell_display_name(
    dataset: object,
    model: object,
    modality: object,
    prompt_id: object,
    perturb: object = NO_PERTURBATION,
    *,
    prompt_named: bool = False,
) -> str:
    """A cell as the console and the report name it: ``dataset × model × modality``, then
    ``× prompt`` when the prompt was chosen (in a prompt sweep it is what tells the cells
    apart) or is not the default one, then ``× perturbation`` for a perturbed cell.
    ``prompt_id`` is the cell's (with its language, :func:`cell_prompt_id`)."""
    parts = [dataset, model, modality]
    if prompt_named or str(prompt_id) != DEFAULT_PROMPT:
        parts.append(prompt_id)
    if perturb not in (None, NO_PERTURBATION):
        parts.append(perturb)
    return " × ".join(str(part) for part in parts)


def _run_folder_resolver(
    stamp: object,
    separator: object,
    dataset: object,
    model: object,
    modality: object,
    prompt_id: object,
    language: object,
    perturb: object,
    passages: object = 1,
    answer: object = "auto",
    reasons: object = False,
) -> str:
    """``${mmjudge_run_folder:<stamp or ''>,<separator>,${dataset.name},…}`` in a config."""
    return run_folder_name(
        dataset,
        model,
        modality,
        prompt_id,
        language,
        perturb,
        separator=str(separator),
        stamp=str(stamp) if stamp else None,
        passages=passages,
        answer=answer,
        reasons=reasons,
    )


#: The resolver's name in ``conf/config.yaml``.
RUN_FOLDER_RESOLVER = "mmjudge_run_folder"


def register_resolvers() -> None:
    """Register the naming resolver with OmegaConf (once; before Hydra composes a config)."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(RUN_FOLDER_RESOLVER):
        OmegaConf.register_new_resolver(RUN_FOLDER_RESOLVER, _run_folder_resolver)
