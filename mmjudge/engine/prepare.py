"""The cell's preparing stage: the dataset surveyed (every item checked before a paid call,
the judge's SDK warmed meanwhile), the test bank, the judge and what every call shares."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from mmjudge.config import PromptConfig
from mmjudge.costs.output_tokens import SAMPLE_IMAGES, SAMPLE_TEXT, output_tokens
from mmjudge.costs.sheets import price_for
from mmjudge.data.schema import dataset_root
from mmjudge.data.survey import (
    DatasetSurvey,
    check_html_fields,
    check_images,
    unserved,
)
from mmjudge.engine.examples import ExampleStream
from mmjudge.engine.response_cache import RequestKeys, ResponseCache
from mmjudge.engine.stages import CheckedCell, PreparedCell, Skipped
from mmjudge.engine.work import CellContext, build_work, image_pool
from mmjudge.images import ImageCache
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.cut_points import CutPoints
from mmjudge.judges.distilled_folder import Training, manifest_path
from mmjudge.locations import resolve_path
from mmjudge.speed.sdk_warmup import sdk_warmer
from mmjudge.speed.survey_child import survey_while
from mmjudge.store import (
    BankInfo,
    Grading,
    ScaleCuts,
    SummaryParts,
    TrainedOn,
)
from mmjudge.testbank import grading as bank_grading
from mmjudge.testbank.bank import Bank
from mmjudge.testbank.derive import describe


def prepare_cell(checked: CheckedCell, examples: ExampleStream) -> PreparedCell | Skipped:
    """The cell ready to judge, or why it cannot run: the dataset surveyed
    (:func:`survey_or_skip`), then the price, the bank, the judge (and its key: a skipped
    cell needs neither) and the output tokens the forecast assumes."""
    cfg, judge_cls, run_dir = checked.cfg, checked.judge_cls, checked.run_dir
    cache_path = resolve_path(cfg.paths.response_cache)
    read = cfg.runner.cache and judge_cls.cacheable
    cached = functools.partial(answers_in_cache, cache_path) if read else None
    sdk = judge_cls.described(cfg.model.provider).sdk
    warm = sdk_warmer(sdk, cfg, cached, checked.speed)
    counts, reason = survey_or_skip(checked, examples, warm)
    if reason is not None or counts is None:
        return Skipped(reason)
    price = price_for(cfg.pricing, cfg.model)
    bank = bank_grading.load_cell_bank(cfg)
    judge = None if cfg.runner.dry_run else judge_cls(cfg.model)
    grading = judge.check_scale(list(cfg.dataset.scale.grades)) if judge is not None else None
    training = judge.training() if judge is not None else None
    parts = SummaryParts(
        grading=grading_block(grading) if grading else None,
        trained_on=None if training is None else trained_on_block(training),
        testbank=None if bank is None else bank_info(bank, cfg.prompt, cfg.dataset.scale.grades),
        n_items=counts.items,
    )
    context = CellContext(
        cfg=cfg,
        run_id=run_dir.name,
        run_dir=run_dir,
        resume_setting=checked.resume_setting,
        judge=judge,
        price=price,
        image_settings=cfg.images,
        image_cache=ImageCache(resolve_path(cfg.paths.image_cache)),
        speed=checked.speed,
        bank=bank,
        usage_per_call=judge_cls.usage_per_call(cfg.model),
    )
    context.output = output_tokens(
        cfg, cached_output_tokens(context, examples, judge_cls, cache_path)
    )
    return PreparedCell(
        context=context, run_dir=run_dir, examples=examples, n_items=counts.items, parts=parts
    )


def answers_in_cache(path: Path) -> int:
    """Answers the response cache at ``path`` holds (0 where there is none yet)."""
    if not path.exists():
        return 0
    cache = ResponseCache(path)
    try:
        return len(cache)
    finally:
        cache.close()


def grading_block(cuts: Mapping[str, CutPoints]) -> Grading:
    """What ``summary.json`` records of a local judge's cut points, per modality
    (:meth:`~mmjudge.judges.base.JudgeAPI.check_scale`)."""
    return Grading(
        {
            modality: ScaleCuts(cut_points=[round(v, 6) for v in cut.values], source=cut.source)
            for modality, cut in cuts.items()
        }
    )


def trained_on_block(training: Training) -> TrainedOn:
    """What ``summary.json`` records of a trained judge: its provenance and every item it
    learnt from (narrowed to the cell's own items when the run is summarised)."""
    manifest, held = training.manifest, training.manifest.held_out
    people = held.student_vs_people
    return TrainedOn(
        manifest=str(manifest_path(training.folder)),
        source=manifest.source,
        teacher=manifest.teacher_name,
        dataset=manifest.dataset,
        base=manifest.base,
        seed=manifest.seed,
        epochs_done=manifest.epochs_done,
        n_trained=len(manifest.trained_items),
        held_out_vs_teacher=held.student_vs_source.text(),
        held_out_vs_people=None if people is None else people.text(),
        items=list(manifest.trained_items),
    )


def bank_info(bank: Bank, prompt: PromptConfig, grades: Sequence[int]) -> BankInfo:
    """What ``summary.json`` records about the bank a cell graded against."""
    return BankInfo(
        kind=bank.kind,
        version=bank.version,
        path=str(bank.path) if bank.path else None,
        queries=len(bank.entries),
        entries=bank.n_entries,
        calls=prompt.bank_calls,
        spans=prompt.spans,
        derivation=describe(prompt, grades),
    )


def survey_or_skip(
    checked: CheckedCell,
    examples: ExampleStream,
    warm: Callable[[], None] | None,
) -> tuple[DatasetSurvey | None, str | None]:
    """The dataset's counts, or why the cell cannot run.

    The whole dataset is validated here, before the first paid call: a bad line fails, so
    does an image that is not there for a cell that shows images, and a modality the dataset
    cannot serve at all skips the cell. The examples are streamed again
    for the calls, so memory stays flat however large the dataset is. ``warm`` (the judge's
    SDK import) runs meanwhile, on another core where it can
    (:mod:`~mmjudge.speed.survey_child`).
    """
    cfg = checked.cfg
    if checked.skipped is not None:  # known from the config alone
        return None, checked.skipped
    # Where the check reads the items as the loader gives them, its child goes on to prepare
    # them for the calls (mmjudge/speed/feed.py).
    reads_prepared = examples.check_reads_prepared()
    feed = examples.take_feed if cfg.runner.mode == "sync" and not reads_prepared else None
    items_path = dataset_root(cfg.dataset) / cfg.dataset.items
    counts = survey_while(examples.survey, examples, items_path, warm, feed, checked.speed)
    check_html_fields(counts, cfg.dataset)
    check_images(counts, cfg.modality)  # before unserved: missing is not absent
    return counts, unserved(counts, cfg.modality, cfg.dataset)


def cached_output_tokens(
    context: CellContext, examples: ExampleStream, judge_cls: type[JudgeAPI], path: Path
) -> Iterator[int]:
    """Output tokens of the answers to a sample of this cell's first requests that are in
    the response cache at ``path`` (none when the cache is off or the judge's answers are not
    cached)."""
    cfg = context.cfg
    if not (cfg.runner.cache and judge_cls.cacheable and path.exists()):
        return
    limit = SAMPLE_IMAGES if cfg.modality.include_image else SAMPLE_TEXT
    sample = examples.head(limit)
    keys = RequestKeys(cfg.model)
    cache = ResponseCache(path)
    try:
        with image_pool(context) as pool:
            wanted = [
                keys(item.request)
                for item in build_work(context, sample, set(), pool)
                if item.request is not None
            ]
        found = cache.get_many(wanted)
        for key in wanted:
            hit = found.get(key)
            if hit is not None:
                yield hit.usage.output_tokens
    finally:
        cache.close()
