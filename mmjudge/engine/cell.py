"""One sweep cell, start to end, as its stages: check (config, keys, skip reason) → prepare
(:mod:`~mmjudge.engine.prepare`: the dataset survey, the bank, the judge) → judge
(:mod:`~mmjudge.engine.judging`, each row recorded as it comes by
:mod:`~mmjudge.engine.record`) → summarise; each hands the next a typed object
(:mod:`~mmjudge.engine.stages`)."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.config.hydra_errors import config_error_line
from mmjudge.config.names import cell_prompt_id
from mmjudge.config.run import unwritable_problem
from mmjudge.costs.calls import CallPricer
from mmjudge.costs.sheets import price_for
from mmjudge.data.leniency import new_cell_warnings
from mmjudge.data.survey import (
    unserved_by_config,
)
from mmjudge.engine.examples import ExampleStream
from mmjudge.engine.judging import forecast_cell, judge_cell, skipped_forecast
from mmjudge.engine.passage_calls import pictures_refusal
from mmjudge.engine.passages import passages_refusal
from mmjudge.engine.prepare import prepare_cell
from mmjudge.engine.stages import CheckedCell, JudgedCell, PreparedCell, Skipped
from mmjudge.errors import (
    ConfigError,
)
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.registry import check_model, endpoint_override, judge_class
from mmjudge.keyguard import check_config, redact_text, resolved_config
from mmjudge.speed import Speed, read_switch
from mmjudge.store import (
    CellInfo,
    RunSummary,
    SummaryParts,
    judgments_path,
)
from mmjudge.store.forecast_file import CellForecast
from mmjudge.store.lock import run_folder_lock
from mmjudge.testbank import grading as bank_grading
from mmjudge.testbank.derive import check_bank_prompt


def typed_config(cfg: DictConfig | SweepConfig) -> SweepConfig:
    """The typed config, its values checked (:meth:`SweepConfig.validate`)."""
    if isinstance(cfg, SweepConfig):
        obj = cfg
    else:
        try:
            typed = OmegaConf.to_object(cfg)
        except ValueError as error:  # a node's own check (images: ImageSettings) refused it,
            # or a value read only now (an interpolation such as ${nosuch}): one line
            raise ConfigError(config_error_line(error)) from None
        assert isinstance(typed, SweepConfig)
        obj = typed
    obj.validate()
    check_model(obj.model)
    prompt = obj.prompt
    prompt_id = cell_prompt_id(
        prompt.id,
        prompt.language,
        prompt.passages_per_call,
        prompt.answer_format,
        prompt.passage_reasons,
    )
    if prompt_id != obj.prompt.id:
        # The two languages of one prompt, and one or several results per call, are cells of
        # their own: ids, rows and folders tell them apart.
        obj.prompt = dataclasses.replace(obj.prompt, id=prompt_id)
    if obj.prompt.bank is not None:
        check_bank_prompt(obj.prompt)
    return obj


def skip_reason(cfg: SweepConfig, judge: type[JudgeAPI]) -> str | None:
    """Why this cell cannot run, known before the dataset is read: a judge that cannot see
    images asked to look at them, calls whose pictures one request cannot carry, or a
    dataset configured to show none."""
    refusal = judge.refusal(cfg.model, cfg.modality.name, cfg.modality.include_image)
    if refusal is not None:
        return refusal
    bank_reason = bank_grading.skip_reason(cfg.model.provider, cfg.prompt.bank)
    if bank_reason is not None:
        return bank_reason
    passages_reason = passages_refusal(cfg)
    if passages_reason is not None:
        return passages_reason
    if cfg.modality.include_image:
        pictures_reason = pictures_refusal(cfg)
        if pictures_reason is not None:
            return pictures_reason
    return unserved_by_config(cfg.modality, cfg.dataset)


def run_cell(
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    *,
    secrets_checked: bool = False,
    resume_setting: str | None = None,
    speed: Speed | None = None,
) -> RunSummary:
    """Judge one cell and write ``judgments.jsonl`` and ``summary.json`` into ``run_dir``.

    The config is checked for secrets first, unless the caller has just done that
    (``secrets_checked``: the sweep's :func:`~mmjudge.keyguard.keep_run_config`). A command
    gives ``resume_setting``, its setting that finds ``run_dir`` again (``hydra.run.dir=…``),
    for the line a stop signal prints. ``speed``: whether the run uses the speed machinery,
    as the caller read it where the run started; None: read here
    (:func:`~mmjudge.speed.read_switch`). A dry run's config is refused: it is
    :func:`forecast`'s.

    Raises:
        ConfigError: a bad setting, or ``runner.dry_run=true``."""
    checked = check_cell(raw_cfg, run_dir, secrets_checked=secrets_checked, speed=speed)
    if checked.cfg.runner.dry_run:
        raise ConfigError("runner.dry_run=true forecasts a cell: forecast it instead")
    checked = dataclasses.replace(checked, resume_setting=resume_setting)
    # one process at a time in a run folder, whatever response cache each uses
    with run_folder_lock(run_dir), contextlib.closing(ExampleStream(checked.cfg)) as examples:
        prepared = prepare_cell(checked, examples)
        if isinstance(prepared, Skipped):
            judgments_path(run_dir).touch()
            return summarise_cell(checked, skipped=prepared.reason)
        judged = judge_cell(prepared)
        summary = summarise_cell(checked, prepared, judged)
    if judged.refused and judged.stop is not None:
        raise judged.stop
    return summary


def forecast(
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    *,
    secrets_checked: bool = False,
    speed: Speed | None = None,
) -> CellForecast:
    """What one cell's calls would use and cost, without making any (a dry run), written to
    ``run_dir/forecast.json``; a cell that cannot run says why in its ``skip_reason``.
    ``speed`` as for :func:`run_cell`."""
    checked = check_cell(raw_cfg, run_dir, secrets_checked=secrets_checked, speed=speed)
    with run_folder_lock(run_dir), contextlib.closing(ExampleStream(checked.cfg)) as examples:
        prepared = prepare_cell(checked, examples)
        if isinstance(prepared, Skipped):
            return skipped_forecast(checked.cfg, run_dir, prepared.reason or "the cell cannot run")
        return forecast_cell(prepared)


def check_cell(
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    *,
    secrets_checked: bool,
    speed: Speed | None = None,
) -> CheckedCell:
    """The cell's config typed and checked (secrets unless ``secrets_checked``, the
    endpoint, the speed switch unless ``speed`` is given), its folder made, its judge's class
    and any reason, known from the config alone, why it cannot run."""
    cfg = typed_config(raw_cfg)
    new_cell_warnings()
    if not secrets_checked:
        source = raw_cfg if isinstance(raw_cfg, DictConfig) else OmegaConf.structured(cfg)
        problem = check_config(source)
        if problem:
            raise ConfigError(problem)
    endpoint_override(cfg.model)  # a base URL that cannot work is refused before anything runs
    speed = read_switch() if speed is None else speed  # so is a switch neither on nor off
    problem = unwritable_problem("run folder", run_dir, "give the run a folder you can write to")
    if problem:
        raise ConfigError(problem)
    run_dir.mkdir(parents=True, exist_ok=True)
    judge_cls = judge_class(cfg.model)
    return CheckedCell(cfg, raw_cfg, run_dir, judge_cls, skip_reason(cfg, judge_cls), speed)


def summarise_cell(
    checked: CheckedCell,
    prepared: PreparedCell | None = None,
    judged: JudgedCell | None = None,
    *,
    skipped: str | None = None,
) -> RunSummary:
    """The cell's ``summary.json``: a skipped cell's, or a judged one's with what its
    preparing and judging gave."""
    parts = prepared.parts if prepared is not None else SummaryParts()
    if judged is not None:
        parts = dataclasses.replace(parts, calls=judged.calls, forecast=judged.forecast)
    return write_cell_summary(
        checked.cfg,
        checked.raw_cfg,
        checked.run_dir,
        skipped=skipped,
        stop=judged.stop if judged is not None else None,
        parts=parts,
    )


def cell_info(cfg: SweepConfig) -> CellInfo:
    """Which cell ``cfg`` runs, as its summary names it."""
    url = endpoint_override(cfg.model)
    return CellInfo(
        dataset=cfg.dataset.name,
        model=cfg.model.name,
        model_id=cfg.model.model_id,
        provider=cfg.model.provider,
        endpoint=None if url is None else redact_text(url),
        modality=cfg.modality.name,
        prompt_id=cfg.prompt.id,
        pricing_sheet=cfg.pricing.date,
        grades=list(cfg.dataset.scale.grades),
        perturb=cfg.perturb.name,
    )


def write_cell_summary(
    cfg: SweepConfig,
    raw_cfg: DictConfig | SweepConfig,
    run_dir: Path,
    *,
    skipped: str | None = None,
    stop: BaseException | None = None,
    parts: SummaryParts | None = None,
) -> RunSummary:
    """Score the cell's rows and write its ``summary.json``: its status from ``skipped``,
    ``stop`` and the runner's limits, beside ``parts`` (see
    :func:`mmjudge.engine.summarise.summarise_run`)."""
    # Tables and statistics load only now, after the last call.
    from mmjudge.engine.summarise import RunEnd, summarise_run

    end = RunEnd(
        skipped=skipped,
        stop=stop,
        max_error_rate=cfg.runner.max_error_rate,
        max_unparseable_rate=cfg.runner.max_unparseable_rate,
    )
    return summarise_run(
        run_dir,
        cell_info(cfg),
        relevant_from=cfg.dataset.scale.relevant_from,
        config=resolved_config(raw_cfg),
        end=end,
        parts=parts,
        pricer=None if skipped else _pricer(cfg),
    )


def _pricer(cfg: SweepConfig) -> CallPricer | None:
    """The cell's prices, for the summary's prompt-cache figures; None where the sheet has
    none for its model (such a cell stopped before any call)."""
    try:
        price = price_for(cfg.pricing, cfg.model)
    except ConfigError:
        return None
    return CallPricer(price, cfg.model, cfg.pricing.batch_discount)
