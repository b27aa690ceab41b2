"""Re-pricing: what finished runs would have cost under
another price sheet, in batch mode, or at another model's prices.

Re-pricing reads each row's saved ``usage`` and the run's ``summary.json``, never calls a
provider and never rewrites ``judgments.jsonl``; the result goes into
``repriced_<sheet>[_batch|_sync][_as-<model>].json`` next to it (or elsewhere).

Calls are priced as they were made (through a batch API or not) unless asked to price every
call one way.

Cache hits count like any other row: the figure is the cost of a judgment, not what this
particular run spent.

A run judged with ``runner.samples`` above 1 keeps its repeats in ``samples.jsonl``; each
repeat was a paid call, priced by the run's ledger like its first answer, so each is
re-priced the same way: totals and per-million figures cover every call (a judgment's cost
with its repeats), and the repeats' own share is kept apart (``repeats``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mmjudge.config import ModelConfig, PricingConfig
from mmjudge.costs.image_tokens import image_tokens
from mmjudge.costs.ledger import batch_factor, cost_of
from mmjudge.costs.sheets import ModelPrice, price_for
from mmjudge.errors import ConfigError
from mmjudge.judges.registry import is_free
from mmjudge.locations import CONFIG_DIR
from mmjudge.records import Usage
from mmjudge.store import JUDGMENTS, SAMPLES, SUMMARY, RunSummary, iter_rows, read_summary
from mmjudge.store.repriced_file import PriceFigures, RepriceBasis, Repricing

DEFAULT_IMAGE_SIZE = 512


class UnknownModelError(ConfigError):
    """``--as-model`` names neither a sheet key nor a model config."""


def group_files(group: str, config_dirs: Sequence[Path] = ()) -> dict[str, Path]:
    """The configs of one group (``pricing``, ``model``) by name: the shipped ones, and those
    in the user's config folders (as ``--config-dir`` gives them), which win on a clash."""
    found: dict[str, Path] = {}
    for folder in [CONFIG_DIR, *config_dirs]:
        for path in sorted((Path(folder) / group).glob("*.yaml")):
            found[path.stem] = path
    return found


def available_sheets(config_dirs: Sequence[Path] = ()) -> list[str]:
    """Names of the dated price sheets: shipped, and under ``pricing/`` of the user's folders."""
    return sorted(group_files("pricing", config_dirs))


def load_sheet(name: str, config_dirs: Sequence[Path] = ()) -> PricingConfig:
    """The price sheet ``name`` (``pricing/<name>.yaml``), validated against
    :class:`PricingConfig`."""
    path = group_files("pricing", config_dirs).get(name)
    if path is None:
        raise ConfigError(
            f"no price sheet '{name}' (shipped, or in pricing/ of a --config-dir folder); "
            f"available: {', '.join(available_sheets(config_dirs))}"
        )
    try:
        node = OmegaConf.merge(OmegaConf.structured(PricingConfig), OmegaConf.load(path))
        sheet = OmegaConf.to_object(node)
    except OmegaConfBaseException as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"price sheet {path} is not valid: {first}") from None
    assert isinstance(sheet, PricingConfig)
    return sheet


def model_configs(config_dirs: Sequence[Path] = ()) -> list[str]:
    """Names of the judge configs: shipped, and under ``model/`` of the user's folders."""
    return sorted(group_files("model", config_dirs))


def resolve_model(name: str, sheet: PricingConfig, config_dirs: Sequence[Path] = ()) -> ModelConfig:
    """A model to price at: a model config name (``gpt4o_mini``) or a sheet key
    (``gpt-4o-mini-2024-07-18``)."""
    path = group_files("model", config_dirs).get(name)
    if path is not None:
        try:
            node = OmegaConf.merge(OmegaConf.structured(ModelConfig), OmegaConf.load(path))
            model = OmegaConf.to_object(node)
        except OmegaConfBaseException as error:
            raise ConfigError(f"model config {path} is not valid: {error}") from None
        assert isinstance(model, ModelConfig)
        return model
    if name in sheet.models:
        return ModelConfig(name=name, provider="price-sheet", model_id=name)
    raise UnknownModelError(
        f"--as-model '{name}' is neither a key of the {sheet.date} sheet "
        f"({', '.join(sorted(sheet.models))}) nor a model config "
        f"({', '.join(model_configs(config_dirs))})"
    )


def _price(sheet: PricingConfig, model: ModelConfig) -> ModelPrice:
    key = model.price_key or model.model_id
    if key not in sheet.models and not is_free(model):
        raise ConfigError(
            f"model '{model.name}' ({key}) has no price in the {sheet.date} sheet; priced "
            f"there: {', '.join(sorted(sheet.models))}"
        )
    return price_for(sheet, model)


def _image_size(summary: RunSummary) -> int:
    return int(summary.config_part("images").get("size") or DEFAULT_IMAGE_SIZE)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How the calls of one run are re-priced: the sheet, the model priced at, and the rules."""

    pricing: PricingConfig
    price: ModelPrice
    key: str
    """The price key of the model priced at."""
    size: int
    """The run's ``images.size`` (assumed for every image when re-estimating)."""
    detail: str
    per_image: int
    """Image tokens per image at the target's image rule (0 unless ``as_model``)."""
    run_batched: bool
    batch: bool
    sync: bool
    as_model: str | None

    @property
    def long_from(self) -> int | None:
        """Input tokens above which long-context prices apply, if the model has any."""
        return self.price.tiers[0].above_input_tokens if self.price.tiers else None


@dataclasses.dataclass
class _Tally:
    """What the rows of one run add up to, as saved and as re-priced."""

    n: int = 0
    """Judgments (first answers); repeats are counted in ``n_repeats``."""
    n_repeats: int = 0
    n_usage: int = 0
    n_cached: int = 0
    n_errors: int = 0
    n_long: int = 0
    n_reestimated: int = 0
    n_batched: int = 0
    old_total: float = 0.0
    old_image: float = 0.0
    new_total: float = 0.0
    new_image: float = 0.0
    old_repeats: float = 0.0
    new_repeats: float = 0.0
    tokens: Usage = dataclasses.field(default_factory=Usage)

    def add(self, row: dict[str, Any], plan: _Plan, *, repeat: bool = False) -> tuple[float, float]:
        """Count one saved row (a repeat: a row of ``samples.jsonl``) and add its cost at
        the plan's prices; returns the row's (new cost, new image cost)."""
        old = float(row.get("cost_usd") or 0.0)
        self.old_total += old
        self.old_image += float(row.get("image_cost_usd") or 0.0)
        if repeat:
            self.n_repeats += 1
            self.old_repeats += old
        else:
            self.n += 1
            self.n_cached += bool(row.get("cached"))
            self.n_errors += bool(row.get("error"))
        usage = Usage.from_dict(row.get("usage"))
        if not usage.input_tokens and not usage.output_tokens:
            return 0.0, 0.0
        self.n_usage += 1
        n_images = len(row.get("image_sha256s") or [])
        if plan.as_model and n_images:
            estimate = plan.per_image * n_images
            usage.input_tokens = max(usage.input_tokens - usage.image_tokens, 0) + estimate
            usage.image_tokens = estimate
            self.n_reestimated += 1
        if plan.long_from is not None and usage.input_tokens > plan.long_from:
            self.n_long += 1
        called_in_batch = bool(row.get("batch", plan.run_batched))
        as_batch = plan.batch or (called_in_batch and not plan.sync)
        self.n_batched += as_batch
        cost = cost_of(
            usage, plan.price, batch=as_batch, sheet_batch_discount=plan.pricing.batch_discount
        )
        self.new_total += cost.total_usd
        self.new_image += cost.image_usd
        self.new_repeats += cost.total_usd if repeat else 0.0
        self.tokens = self.tokens + usage
        return cost.total_usd, cost.image_usd

    def per_million(self, total: float) -> float:
        return total / self.n * 1e6 if self.n else 0.0


def reprice_run(
    run_dir: Path,
    sheet: str | PricingConfig | None = None,
    *,
    batch: bool = False,
    as_model: str | None = None,
    sync: bool = False,
    config_dirs: Sequence[Path] = (),
) -> Repricing:
    """Re-price one run from its saved usage: what ``repriced_*.json`` holds
    (:func:`mmjudge.store.repriced_file.write_repriced` writes it).

    ``sheet`` is a sheet name, a loaded sheet, or None for the sheet the run was priced with.
    ``batch`` bills every call at batch prices and ``sync`` every call at list prices; with
    neither, a call is billed the way it was made (the row's ``batch`` flag, else the run's
    ``runner.mode``).
    ``as_model`` prices every call at another model's prices; its image tokens are then
    re-estimated with that model's image rule, assuming every image was the run's
    ``images.size`` square (records keep no image dimensions).
    ``config_dirs`` are the user's config folders searched for sheets and models (as
    ``--config-dir``), besides the shipped ones.
    """
    run_dir = Path(run_dir)
    if batch and sync:
        raise ConfigError("--batch and --sync contradict each other; pick one")
    if not (run_dir / SUMMARY).is_file():
        raise ConfigError(f"{run_dir} has no {SUMMARY}; is it a run directory?")
    summary = read_summary(run_dir)
    if summary.ensemble is not None:
        return _reprice_ensemble(
            run_dir, summary, sheet, batch=batch, as_model=as_model, sync=sync, dirs=config_dirs
        )
    plan = _plan(
        run_dir, summary, sheet, batch=batch, as_model=as_model, sync=sync, dirs=config_dirs
    )
    tally = _Tally()
    records, repeats = run_dir / JUDGMENTS, run_dir / SAMPLES
    for row in iter_rows(records) if records.is_file() else iter(()):
        tally.add(row, plan)
    for row in iter_rows(repeats) if repeats.is_file() else iter(()):
        tally.add(row, plan, repeat=True)
    return _result(run_dir, summary, plan, tally)


def _member_costs(
    member_dir: Path, sheet: str | PricingConfig | None, **how: Any
) -> tuple[dict[tuple[str, str], tuple[float, float, float]], _Plan]:
    """A member run's rows re-priced: (old cost, new cost, new image cost) by item."""
    summary = read_summary(member_dir)
    plan = _plan(member_dir, summary, sheet, **how)
    costs: dict[tuple[str, str], tuple[float, float, float]] = {}
    records = member_dir / JUDGMENTS
    for row in iter_rows(records) if records.is_file() else iter(()):
        new, image = _Tally().add(row, plan)
        key = (str(row.get("query_id")), str(row.get("result_id")))
        costs[key] = (float(row.get("cost_usd") or 0.0), new, image)
    return costs, plan


def _reprice_ensemble(
    run_dir: Path,
    summary: RunSummary,
    sheet: str | PricingConfig | None,
    **how: Any,
) -> Repricing:
    """A panel or cascade re-priced through its members: each item costs what the members
    that paid for it cost under the new prices. A panel's members all pay; a cascade's pay in
    order until one settles the item, so the members paid are the first ones whose saved
    costs add up to the item's saved cost."""
    assert summary.ensemble is not None
    members = [
        _member_costs((run_dir / m.run_dir).resolve(), sheet, **how)
        for m in summary.ensemble.members
    ]
    if not members:
        raise ConfigError(f"{run_dir}/{SUMMARY} lists no members to re-price it by")
    tally = _Tally()
    for row in iter_rows(run_dir / JUDGMENTS) if (run_dir / JUDGMENTS).is_file() else iter(()):
        tally.n += 1
        tally.n_cached += bool(row.get("cached"))
        tally.n_errors += bool(row.get("error"))
        old = float(row.get("cost_usd") or 0.0)
        tally.old_total += old
        tally.old_image += float(row.get("image_cost_usd") or 0.0)
        key = (str(row.get("query_id")), str(row.get("result_id")))
        paid = [costs[key] for costs, _ in members if key in costs]
        spent = new = image = 0.0
        for member_old, member_new, member_image in paid:
            spent, new, image = spent + member_old, new + member_new, image + member_image
            if math.isclose(spent, old, rel_tol=1e-9, abs_tol=1e-12):
                break
        tally.new_total += new
        tally.new_image += image
        tally.n_usage += bool(Usage.from_dict(row.get("usage")).input_tokens)
        tally.tokens = tally.tokens + Usage.from_dict(row.get("usage"))
    plan = members[0][1]
    keys = sorted({member_plan.key for _, member_plan in members})
    plan = dataclasses.replace(plan, key=", ".join(keys), as_model=how.get("as_model"))
    note = (
        f"a {summary.kind} re-priced through its {len(members)} members: each item at the "
        "prices of the members that paid for it"
    )
    return _result(run_dir, summary, plan, tally, extra_notes=(note,))


def _plan(
    run_dir: Path,
    summary: RunSummary,
    sheet: str | PricingConfig | None,
    *,
    batch: bool,
    as_model: str | None,
    sync: bool,
    dirs: Sequence[Path],
) -> _Plan:
    """The sheet (given, or the run's own), the model priced at, and its image estimate."""
    if isinstance(sheet, PricingConfig):
        pricing = sheet
    elif sheet or summary.cell.pricing_sheet:
        pricing = load_sheet(sheet or str(summary.cell.pricing_sheet), dirs)
    else:
        raise ConfigError(f"{run_dir}/{SUMMARY} names no pricing_sheet; pass --sheet")
    original = summary.model_config()
    target = resolve_model(as_model, pricing, dirs) if as_model else original
    price = _price(pricing, target)
    size = _image_size(summary)
    detail = (target if as_model and target.provider != "price-sheet" else original).image_detail
    return _Plan(
        pricing=pricing,
        price=price,
        key=target.price_key or target.model_id,
        size=size,
        detail=detail,
        per_image=image_tokens(price.image_rule, size, size, detail) if as_model else 0,
        run_batched=summary.config_part("runner").get("mode") == "batch",
        batch=batch,
        sync=sync,
        as_model=as_model,
    )


def _billing_notes(plan: _Plan, tally: _Tally) -> list[str]:
    """How calls were billed: cache hits, batch or list prices."""
    factor = batch_factor(plan.price, plan.pricing.batch_discount)
    notes = ["priced from each row's saved usage; no provider was called"]
    if tally.n_cached:
        notes.append(
            "response-cache hits are priced like any other judgment (the cost of a judgment, "
            "not what the run spent)"
        )
    if plan.batch:
        notes.append(f"every call billed at the batch fraction {factor:g} of the list price")
    elif plan.sync:
        notes.append("every call billed at list prices, batched or not")
    elif tally.n_batched:
        notes.append(
            f"calls made through a batch API billed at the batch fraction {factor:g}, as they "
            "were (--sync prices them at list prices)"
        )
    return notes


def _price_notes(plan: _Plan, tally: _Tally) -> list[str]:
    """What the prices assume: another model's, a self-hosted judge's, long-context tiers."""
    key, price, notes = plan.key, plan.price, []
    if plan.as_model:
        notes.append(
            f"at {key}'s prices: text and output tokens kept as the run's own judge counted "
            "them (another tokenizer and another answer would differ)"
        )
        if tally.n_reestimated:
            notes.append(
                f"image tokens re-estimated with {key}'s image rule assuming images were "
                f"preprocessed to the run's images.size, {plan.size}x{plan.size} px, "
                f"detail={plan.detail}: {plan.per_image:g} tokens per image"
            )
    if price.self_hosted is not None:
        hosted = price.self_hosted
        notes.append(
            f"{key} is self-hosted: ${hosted.gpu_hour:g}/GPU-hour x {hosted.gpus} GPU(s) at "
            f"{hosted.input_tokens_per_s:g} input / {hosted.output_tokens_per_s:g} output "
            f"tokens/s, utilization {hosted.utilization:g} -> ${price.input:.4f} / "
            f"${price.output:.4f} per million tokens (assumptions from the sheet)"
        )
    if tally.n_long:
        notes.append(
            f"calls above {plan.long_from} input tokens billed at {key}'s long-context prices "
            "(n_long_context in the JSON)"
        )
    if tally.n_repeats:
        notes.append(
            f"{tally.n_repeats} repeat calls (runner.samples, samples.jsonl) priced like the "
            "first answers: totals and per-million figures include them"
        )
    if tally.n and not tally.n_usage:
        notes.append("no row has token usage (a local judge, or every call failed)")
    return notes


def _result(
    run_dir: Path,
    summary: RunSummary,
    plan: _Plan,
    tally: _Tally,
    *,
    extra_notes: tuple[str, ...] = (),
) -> Repricing:
    """What ``repriced_*.json`` holds."""
    original = summary.model_config()
    per_million = tally.per_million
    return Repricing(
        run_id=summary.run_id or run_dir.name,
        dataset=summary.cell.dataset,
        model=original.name,
        model_id=original.model_id,
        provider=original.provider,
        modality=summary.cell.modality,
        n_judgments=tally.n,
        n_with_usage=tally.n_usage,
        n_cached=tally.n_cached,
        n_errors=tally.n_errors,
        n_repeats=tally.n_repeats,
        original=PriceFigures(
            sheet=summary.cell.pricing_sheet,
            total_usd=tally.old_total,
            usd_per_million=per_million(tally.old_total),
            image_usd_per_million=per_million(tally.old_image),
            text_usd_per_million=per_million(tally.old_total - tally.old_image),
            repeats_usd=tally.old_repeats,
        ),
        repriced=PriceFigures(
            sheet=plan.pricing.date,
            total_usd=tally.new_total,
            usd_per_million=per_million(tally.new_total),
            image_usd_per_million=per_million(tally.new_image),
            text_usd_per_million=per_million(tally.new_total - tally.new_image),
            repeats_usd=tally.new_repeats,
        ),
        basis=RepriceBasis(
            batch=plan.batch,
            sync=plan.sync,
            n_batch_priced=tally.n_batched,
            as_model=plan.as_model,
            price_key=plan.key,
            prices=_as_json(dataclasses.asdict(plan.price)),
            image_size=plan.size,
            image_tokens_per_image=plan.per_image if plan.as_model else None,
            tokens=tally.tokens,
            n_long_context=tally.n_long,
        ),
        notes=(*_billing_notes(plan, tally), *_price_notes(plan, tally), *extra_notes),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _as_json(value: Any) -> Any:
    """``value`` with its tuples as lists: the sheet's entry as the file holds it, so that the
    record read back equals the one written."""
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_json(item) for item in value]
    return value
