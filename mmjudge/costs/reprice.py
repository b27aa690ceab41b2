"""``python -m mmjudge.costs.reprice RUN_OR_SWEEP_DIR``: what finished runs would have cost under
another price sheet, in batch mode, or at another model's prices.

Re-pricing reads each row's saved ``usage`` and the run's ``summary.json``, never calls a
provider and never rewrites ``judgments.jsonl``; the result goes into
``repriced_<sheet>[_batch|_sync][_as-<model>].json`` next to it (or under ``--out``).

Calls are priced as they were made (through a batch API or not) unless ``--batch`` or
``--sync`` prices every call one way.

Cache hits count like any other row: the figure is the cost of a judgment, not what this
particular run spent.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mmjudge import PROJECT_ROOT
from mmjudge.config import ModelConfig, PricingConfig
from mmjudge.costs.image_tokens import image_tokens
from mmjudge.costs.ledger import batch_factor, cost_of
from mmjudge.costs.sheets import ModelPrice, price_for
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.judges.registry import is_free
from mmjudge.records import Usage
from mmjudge.runs import JUDGMENTS, SUMMARY, RunSummary, iter_rows, read_summary, run_dirs

REPRICE_SCHEMA_VERSION = 1
SHEETS_DIR = PROJECT_ROOT / "conf" / "pricing"
MODELS_DIR = PROJECT_ROOT / "conf" / "model"
DEFAULT_IMAGE_SIZE = 512


class UnknownModelError(ConfigError):
    """``--as-model`` names neither a sheet key nor a model config."""


# --- sheets and models ---------------------------------------------------------------------


def available_sheets() -> list[str]:
    """Names of the dated price sheets under ``conf/pricing/``."""
    return sorted(path.stem for path in SHEETS_DIR.glob("*.yaml"))


def load_sheet(name: str) -> PricingConfig:
    """``conf/pricing/<name>.yaml``, validated against :class:`PricingConfig`."""
    path = SHEETS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(
            f"no price sheet '{name}' in conf/pricing/; available: {', '.join(available_sheets())}"
        )
    try:
        node = OmegaConf.merge(OmegaConf.structured(PricingConfig), OmegaConf.load(path))
        sheet = OmegaConf.to_object(node)
    except OmegaConfBaseException as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"price sheet {path} is not valid: {first}") from None
    assert isinstance(sheet, PricingConfig)
    return sheet


def model_configs() -> list[str]:
    """Names of the judge configs under ``conf/model/``."""
    return sorted(path.stem for path in MODELS_DIR.glob("*.yaml"))


def resolve_model(name: str, sheet: PricingConfig) -> ModelConfig:
    """A model to price at: a ``conf/model/`` name (``gpt4o_mini``) or a sheet key
    (``gpt-4o-mini-2024-07-18``)."""
    path = MODELS_DIR / f"{name}.yaml"
    if path.is_file():
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
        f"({', '.join(model_configs())})"
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


# --- one run -------------------------------------------------------------------------------


def reprice_run(
    run_dir: Path,
    sheet: str | PricingConfig | None = None,
    *,
    batch: bool = False,
    as_model: str | None = None,
    sync: bool = False,
) -> dict[str, Any]:
    """Re-price one run from its saved usage; returns what ``repriced_*.json`` holds.

    ``sheet`` is a sheet name, a loaded sheet, or None for the sheet the run was priced with.
    ``batch`` bills every call at batch prices and ``sync`` every call at list prices; with
    neither, a call is billed the way it was made (the row's ``batch`` flag, else the run's
    ``runner.mode``).
    ``as_model`` prices every call at another model's prices; its image tokens are then
    re-estimated with that model's image rule, assuming every image was the run's
    ``images.size`` square (records keep no image dimensions).
    """
    run_dir = Path(run_dir)
    if batch and sync:
        raise ConfigError("--batch and --sync contradict each other; pick one")
    if not (run_dir / SUMMARY).is_file():
        raise ConfigError(f"{run_dir} has no {SUMMARY}; is it a run directory?")
    summary = read_summary(run_dir)
    if isinstance(sheet, PricingConfig):
        pricing = sheet
    elif sheet or summary.cell.pricing_sheet:
        pricing = load_sheet(sheet or str(summary.cell.pricing_sheet))
    else:
        raise ConfigError(f"{run_dir}/{SUMMARY} names no pricing_sheet; pass --sheet")
    original = summary.model_config()
    target = resolve_model(as_model, pricing) if as_model else original
    price = _price(pricing, target)
    key = target.price_key or target.model_id
    size = _image_size(summary)
    detail = (target if as_model and target.provider != "price-sheet" else original).image_detail
    per_image = image_tokens(price.image_rule, size, size, detail) if as_model else 0
    run_batched = summary.config_part("runner").get("mode") == "batch"

    n = n_usage = n_cached = n_errors = n_long = n_reestimated = n_batched = 0
    old_total = old_image = new_total = new_image = 0.0
    tokens = Usage()
    thresholds = [tier.above_input_tokens for tier in price.tiers]
    records = run_dir / JUDGMENTS
    rows = iter_rows(records) if records.is_file() else iter(())
    for row in rows:
        n += 1
        old_total += float(row.get("cost_usd") or 0.0)
        old_image += float(row.get("image_cost_usd") or 0.0)
        n_cached += bool(row.get("cached"))
        n_errors += bool(row.get("error"))
        usage = Usage.from_dict(row.get("usage"))
        if not usage.input_tokens and not usage.output_tokens:
            continue
        n_usage += 1
        n_images = len(row.get("image_sha256s") or [])
        if as_model and n_images:
            estimate = per_image * n_images
            usage.input_tokens = max(usage.input_tokens - usage.image_tokens, 0) + estimate
            usage.image_tokens = estimate
            n_reestimated += 1
        if thresholds and usage.input_tokens > thresholds[0]:
            n_long += 1
        called_in_batch = bool(row.get("batch", run_batched))
        as_batch = batch or (called_in_batch and not sync)
        n_batched += as_batch
        cost = cost_of(usage, price, batch=as_batch, sheet_batch_discount=pricing.batch_discount)
        new_total += cost.total_usd
        new_image += cost.image_usd
        tokens = tokens + usage

    def per_million(total: float) -> float:
        return total / n * 1e6 if n else 0.0

    factor = batch_factor(price, pricing.batch_discount)
    notes = ["priced from each row's saved usage; no provider was called"]
    if n_cached:
        notes.append(
            "response-cache hits are priced like any other judgment (the cost of a judgment, "
            "not what the run spent)"
        )
    if batch:
        notes.append(f"every call billed at the batch fraction {factor:g} of the list price")
    elif sync:
        notes.append("every call billed at list prices, batched or not")
    elif n_batched:
        notes.append(
            f"calls made through a batch API billed at the batch fraction {factor:g}, as they "
            "were (--sync prices them at list prices)"
        )
    if as_model:
        notes.append(
            f"at {key}'s prices: text and output tokens kept as the run's own judge counted "
            "them (another tokenizer and another answer would differ)"
        )
        if n_reestimated:
            notes.append(
                f"image tokens re-estimated with {key}'s image rule assuming images were "
                f"preprocessed to the run's images.size, {size}x{size} px, detail={detail}: "
                f"{per_image:g} tokens per image"
            )
    if price.self_hosted is not None:
        hosted = price.self_hosted
        notes.append(
            f"{key} is self-hosted: ${hosted.gpu_hour:g}/GPU-hour x {hosted.gpus} GPU(s) at "
            f"{hosted.input_tokens_per_s:g} input / {hosted.output_tokens_per_s:g} output "
            f"tokens/s, utilization {hosted.utilization:g} -> ${price.input:.4f} / "
            f"${price.output:.4f} per million tokens (assumptions from the sheet)"
        )
    if n_long:
        notes.append(
            f"calls above {thresholds[0]} input tokens billed at {key}'s long-context prices "
            "(n_long_context in the JSON)"
        )
    if n and not n_usage:
        notes.append("no row has token usage (a local judge, or every call failed)")

    return {
        "schema_version": REPRICE_SCHEMA_VERSION,
        "run_id": summary.run_id or run_dir.name,
        "dataset": summary.cell.dataset,
        "model": original.name,
        "model_id": original.model_id,
        "provider": original.provider,
        "modality": summary.cell.modality,
        "n_judgments": n,
        "n_with_usage": n_usage,
        "n_cached": n_cached,
        "n_errors": n_errors,
        "original": {
            "sheet": summary.cell.pricing_sheet,
            "total_usd": old_total,
            "usd_per_million": per_million(old_total),
            "image_usd_per_million": per_million(old_image),
            "text_usd_per_million": per_million(old_total - old_image),
        },
        "repriced": {
            "sheet": pricing.date,
            "batch": batch,
            "sync": sync,
            "n_batch_priced": n_batched,
            "as_model": as_model,
            "price_key": key,
            "prices": dataclasses.asdict(price),
            "image_size": size,
            "image_tokens_per_image": per_image if as_model else None,
            "total_usd": new_total,
            "usd_per_million": per_million(new_total),
            "image_usd_per_million": per_million(new_image),
            "text_usd_per_million": per_million(new_total - new_image),
            "tokens": tokens.to_dict(),
            "n_long_context": n_long,
        },
        "notes": notes,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def output_name(
    sheet: str, *, batch: bool = False, as_model: str | None = None, sync: bool = False
) -> str:
    """``repriced_<sheet>[_batch|_sync][_as-<model>].json``, safe as a file name."""
    name = f"repriced_{sheet}"
    if batch:
        name += "_batch"
    elif sync:
        name += "_sync"
    if as_model:
        name += "_as-" + re.sub(r"[^A-Za-z0-9._-]+", "-", as_model).strip("-")
    return name + ".json"


def write_repriced(run_dir: Path, result: dict[str, Any], out: Path | None = None) -> Path:
    """Write one run's re-pricing next to its records, or to ``out/<run_id>/``."""
    folder = Path(out) / str(result["run_id"]) if out is not None else Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    repriced = result["repriced"]
    path = folder / output_name(
        repriced["sheet"],
        batch=repriced["batch"],
        as_model=repriced["as_model"],
        sync=repriced.get("sync", False),
    )
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return path


# --- command line --------------------------------------------------------------------------


def format_table(results: list[tuple[str, dict[str, Any]]]) -> str:
    """One line per run: old → new USD per million judgments, the total and the split."""
    header = (
        f"{'model':<20} {'modality':<8} {'n':>7} {'old $/M':>12}   {'new $/M':>12} "
        f"{'new total $':>12} {'image $/M':>11} {'text $/M':>11}  run"
    )
    lines = [header, "-" * len(header)]
    for label, result in results:
        old, new = result["original"], result["repriced"]
        lines.append(
            f"{result['model']:<20.20} {result['modality'] or '?':<8.8} {result['n_judgments']:>7} "
            f"{old['usd_per_million']:>12,.2f} → {new['usd_per_million']:>12,.2f} "
            f"{new['total_usd']:>12,.6f} {new['image_usd_per_million']:>11,.2f} "
            f"{new['text_usd_per_million']:>11,.2f}  {label}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mmjudge.costs.reprice",
        description=(
            "Re-price finished runs from their saved usage under another price sheet, in "
            "batch mode, or at another model's prices. No provider is called."
        ),
    )
    parser.add_argument("directory", type=Path, help="a run or sweep directory under results/")
    parser.add_argument(
        "--sheet",
        help=f"price sheet in conf/pricing/ ({', '.join(available_sheets())}); "
        "default: the sheet each run was priced with",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--batch", action="store_true", help="bill every call at batch prices")
    mode.add_argument(
        "--sync",
        action="store_true",
        help="bill every call at list prices (default: each call the way it was made)",
    )
    parser.add_argument(
        "--as-model",
        dest="as_model",
        help="price at this model's prices: a sheet key (gpt-4o-mini-2024-07-18) or a "
        "conf/model name (gpt4o_mini)",
    )
    parser.add_argument(
        "--out", type=Path, help="write results to OUT/<run_id>/ instead of each run directory"
    )
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"mmjudge: {args.directory} is not a directory", file=sys.stderr)
        return 2
    try:
        sheet = load_sheet(args.sheet) if args.sheet else None
        if sheet is not None and args.as_model:
            resolve_model(args.as_model, sheet)
        runs = run_dirs(args.directory)
        if not runs:
            raise ConfigError(f"no runs ({SUMMARY}) under {args.directory}")
        done: list[tuple[str, dict[str, Any]]] = []
        skipped: list[str] = []
        written: list[Path] = []
        for run in runs:
            label = str(run.relative_to(args.directory)) if run != args.directory else run.name
            try:
                result = reprice_run(
                    run, sheet, batch=args.batch, as_model=args.as_model, sync=args.sync
                )
            except UnknownModelError:
                raise
            except ConfigError as error:
                if len(runs) == 1:
                    raise
                skipped.append(f"{label}: {error}")
                continue
            written.append(write_repriced(run, result, args.out))
            done.append((label, result))
        if not done:
            raise ConfigError(f"no run could be re-priced; {skipped[0]}")
    except MMJudgeError as error:
        print(f"mmjudge: {error}", file=sys.stderr)
        return 2
    sheets = sorted({result["repriced"]["sheet"] for _, result in done})
    title = f"Re-priced under sheet {', '.join(sheets)}"
    if args.batch:
        title += ", batch"
    elif args.sync:
        title += ", list prices"
    if args.as_model:
        title += f", at {done[0][1]['repriced']['price_key']}'s prices"
    print(title + " (USD per million judgments)")
    print(format_table(done))
    notes: list[str] = []
    for _, result in done:
        for note in result["notes"]:
            if note not in notes:
                notes.append(note)
    for note in notes:
        print(f"note: {note}")
    for line in skipped:
        print(f"skipped {line}")
    print(f"wrote {len(written)} file(s) named {written[0].name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
