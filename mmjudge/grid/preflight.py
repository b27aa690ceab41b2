"""A sweep's check before its first call: every cell's settings, dataset, price and API key.

Without it a grid stops at the first cell whose key is missing, after paying for the cells
before it. :func:`check_cells` looks at every cell first and reports everything that would
stop one, in one line, so that nothing is judged until all of it is fixed. The command runs it
from its ``on_multirun_start`` callback (:class:`mmjudge.cli.sweep_callback.CellsChecked`), the
library from :func:`mmjudge.run_sweep`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from omegaconf import DictConfig, open_dict

from mmjudge.errors import ConfigError, CredentialError, MMJudgeError


def cell_problems(raw: DictConfig) -> tuple[list[str], list[str]]:
    """What would stop the cell ``raw`` before or at its first call: (missing key variables,
    other problems). A cell its judge cannot serve (it would be skipped) needs nothing; a dry
    run needs no key."""
    from mmjudge.config.hydra_errors import CONFIG_ERRORS, config_error_line
    from mmjudge.costs.sheets import price_for
    from mmjudge.data import load_dataset
    from mmjudge.data.leniency import unsaid
    from mmjudge.engine.cell import skip_reason, typed_config
    from mmjudge.judges.registry import endpoint_override, judge_class

    if "hydra" in raw:
        raw = raw.copy()
        with open_dict(raw):
            del raw["hydra"]  # as Hydra hands a job its config
    try:
        cfg = typed_config(raw)
        endpoint_override(cfg.model)
        judge_cls = judge_class(cfg.model)
        if skip_reason(cfg, judge_cls) is not None:
            return [], []
        price_for(cfg.pricing, cfg.model)
        with unsaid():  # the cell says what its reading finds
            first = load_dataset(cfg.dataset, seed=cfg.seed)
            try:
                next(iter(first), None)  # the file is there and its first item reads
            finally:
                close = getattr(first, "close", None)
                if close is not None:
                    close()
    except CONFIG_ERRORS as error:
        return [], [config_error_line(error)]
    except MMJudgeError as error:
        return [], [str(error)]
    if cfg.runner.dry_run:
        return [], []
    env = judge_cls.api_key_env(cfg.model)
    if env and not os.environ.get(env, "").strip():
        return [env], []
    return [], []


def check_cells(cells: Iterable[tuple[str, DictConfig]]) -> None:
    """Refuse the sweep when any cell (``(name, config)`` pairs) could not run, naming every
    missing key variable (with the models that need it) and every other problem in one line.

    Raises:
        CredentialError: only keys are missing.
        ConfigError: any other problem (with the missing keys in the same line).
    """
    missing: dict[str, list[str]] = {}
    where: dict[str, list[str]] = {}  # each problem, with the cells it stops
    for name, raw in cells:
        keys, other = cell_problems(raw)
        for env in keys:
            model = str(raw.model.name)
            if model not in missing.setdefault(env, []):
                missing[env].append(model)
        for problem in other:
            where.setdefault(problem, []).append(name)
    if not missing and not where:
        return
    parts = [
        f"set {env} (needed by {', '.join(models)})" for env, models in sorted(missing.items())
    ]
    problems = [f"{_cells(names)}: {problem}" for problem, names in where.items()]
    line = "; ".join([*parts, *problems])
    if problems:
        raise ConfigError(f"nothing was judged: {line}")
    raise CredentialError(f"nothing was judged: API key missing; {line}")


def _cells(names: list[str]) -> str:
    """``a.b.c.d`` for one cell, ``a.b.c.d and 3 more cells`` for several."""
    more = len(names) - 1
    return names[0] if more == 0 else f"{names[0]} and {more} more cell{'s' if more > 1 else ''}"
