"""``summary.json``: what a run did, what it cost, and how well the judge agreed with humans."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from mmjudge import PROJECT_ROOT, __version__
from mmjudge.config import SweepConfig
from mmjudge.errors import (
    BudgetExceeded,
    ConfigError,
    CredentialError,
    DatasetError,
    Interrupted,
)
from mmjudge.keyguard import key_envs_of, redact, redact_text
from mmjudge.providers.registry import endpoint_override
from mmjudge.results import JUDGMENTS, SUMMARY, annotators, load_judgments
from mmjudge.status import (
    EXIT_CONFIG,
    FAILED,
    INTERRUPTED,
    SKIPPED,
    STOPPED_BY_BUDGET,
    cell_status,
    exit_code,
)

SUMMARY_SCHEMA_VERSION = 1
PACKAGES = ("mmjudge", "hydra-core", "openai", "anthropic", "pillow", "pandas", "numpy", "tiktoken")


def package_versions() -> dict[str, str]:
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = __version__ if name == "mmjudge" else "not installed"
    return versions


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def resolved_config(raw_cfg: DictConfig | SweepConfig) -> dict[str, Any]:
    """The cell's resolved config (Hydra's own settings left out), redacted by path and value.

    A config holding a key is refused before the run starts (:mod:`mmjudge.keyguard`); the
    redaction is the second line of defence, for whatever a later change lets through.
    """
    node = OmegaConf.structured(raw_cfg) if isinstance(raw_cfg, SweepConfig) else raw_cfg
    container = OmegaConf.to_container(node, resolve=True)
    assert isinstance(container, dict)
    container.pop("hydra", None)
    clean = redact(container, key_envs=key_envs_of(container))
    return {str(k): v for k, v in clean.items()}


def endpoint(cfg: SweepConfig) -> str | None:
    """Where the calls went when not to the provider's public endpoint (``model.base_url``, or
    ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``), with any credential in the URL redacted."""
    url = endpoint_override(cfg.model)
    return None if url is None else redact_text(url)


def cost_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Dollars: total, spent in this run (cache hits are free), and per million judgments.

    ``resent_usd`` estimates what requests lost in flight by a stopped process cost: the
    provider billed them, and each is priced as the request sent again in its place. It is
    part of ``spent_usd`` but not of ``total_usd`` and the per-million figures, which price
    the judgments themselves.
    """
    n = len(frame)
    if not n:
        return dict.fromkeys(COST_KEYS, 0.0) | {"resent_requests": 0}
    total = float(frame["cost_usd"].sum())
    image = float(frame["image_cost_usd"].sum())
    resent_usd = float((frame["cost_usd"] * frame["resent"]).sum())
    spent = float(frame.loc[~frame["cached"], "cost_usd"].sum()) + resent_usd
    per_million = total / n * 1e6
    image_per_million = image / n * 1e6
    return {
        "total_usd": total,
        "spent_usd": spent,
        "usd_per_million": per_million,
        "image_usd_per_million": image_per_million,
        "text_usd_per_million": per_million - image_per_million,
        "resent_requests": int(frame["resent"].sum()),
        "resent_usd": resent_usd,
    }


COST_KEYS = (
    "total_usd",
    "spent_usd",
    "usd_per_million",
    "image_usd_per_million",
    "text_usd_per_million",
    "resent_usd",
)


def error_summary(frame: pd.DataFrame) -> dict[str, Any]:
    """Failed rows by kind (the error's leading name) and the first error message."""
    if frame.empty:
        return {"by_kind": {}, "first": None}
    errors = frame["error"].dropna().astype(str)
    kinds = errors.map(lambda text: text.split(":", 1)[0].strip() or "error")
    counts = {str(k): int(v) for k, v in kinds.value_counts().sort_index().items()}
    return {"by_kind": counts, "first": errors.iloc[0] if len(errors) else None}


def _status_fields(
    cfg: SweepConfig,
    n: int,
    n_errors: int,
    skipped: str | None,
    status: str | None,
    stop: BaseException | None,
) -> dict[str, Any]:
    state, reason = _status(cfg, n, n_errors, skipped, status, stop)
    return {
        "status": state,
        "status_reason": reason or None,
        "exit_code": _exit_code(state, stop),
        "stopped_because": str(stop) if stop is not None else None,
    }


def _exit_code(state: str, stop: BaseException | None) -> int:
    if isinstance(stop, (ConfigError, CredentialError, DatasetError)):
        return EXIT_CONFIG  # a setting found wrong as the calls were about to start
    return exit_code(state, getattr(stop, "signal_number", None))


def _status(
    cfg: SweepConfig,
    n: int,
    n_errors: int,
    skipped: str | None,
    status: str | None,
    stop: BaseException | None,
) -> tuple[str, str]:
    """The cell's status and why (see :mod:`mmjudge.status`)."""
    if skipped:
        return SKIPPED, skipped
    if status:
        return status, str(stop or "")
    if isinstance(stop, Interrupted):
        return INTERRUPTED, str(stop)
    if isinstance(stop, BudgetExceeded):
        return STOPPED_BY_BUDGET, str(stop)
    if stop is not None:
        return FAILED, str(stop)
    return cell_status(n, n_errors, cfg.runner.max_error_rate)


def agreement(frame: pd.DataFrame, grades: list[int], relevant_from: int) -> dict[str, Any]:
    """The judge against the annotators' consensus (:func:`mmjudge.scoring.agreement_summary`:
    κ with intervals, α, accuracy...), with the human–human ceiling. Answered rows only; an
    item written twice (a resumed run) counts once, its last row, as in the report."""
    from mmjudge import scoring

    names = annotators(frame)
    if not names or frame.empty:
        return {"n": 0}
    frame = frame.drop_duplicates(["query_id", "result_id"], keep="last")
    human = {name: frame[f"human:{name}"].to_numpy(dtype=float, na_value=np.nan) for name in names}
    judge = frame["label"].to_numpy(dtype=float, na_value=np.nan)
    return scoring.agreement_summary(
        judge,
        human,
        grades=grades,
        query_ids=frame["query_id"].astype(str).to_numpy(),
        relevant_from=relevant_from,
    )


def write_summary(
    run_dir: Path,
    cfg: SweepConfig,
    raw_cfg: DictConfig | SweepConfig,
    *,
    stats: Any = None,
    skipped: str | None = None,
    status: str | None = None,
    stop: BaseException | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Compute the run's summary from its saved records and write ``summary.json``.

    ``stop`` is the error that ended the run early (an interruption, the budget, the
    circuit breaker, a rejected key); without one the status follows from the rows.
    """
    frame = load_judgments(run_dir / JUDGMENTS)
    grades = list(cfg.dataset.scale.grades)
    n = len(frame)
    n_errors = int(frame["error"].notna().sum()) if n else 0
    n_unparseable = int((frame["error"].isna() & frame["label"].isna()).sum()) if n else 0
    answered = frame[frame["error"].isna()] if n else frame
    summary: dict[str, Any] = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "run_id": run_dir.name,
        **_status_fields(cfg, n, n_errors, skipped, status, stop),
        "skip_reason": skipped,
        "dataset": cfg.dataset.name,
        "model": cfg.model.name,
        "model_id": cfg.model.model_id,
        "provider": cfg.model.provider,
        "endpoint": endpoint(cfg),
        "modality": cfg.modality.name,
        "prompt_id": cfg.prompt.id,
        "pricing_sheet": cfg.pricing.date,
        "grades": grades,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "n_judgments": n,
        "n_errors": n_errors,
        "n_unparseable": n_unparseable,
        "n_truncated": int(frame["truncated"].sum()) if n else 0,
        "errors": error_summary(frame),
        "metrics": agreement(answered, grades, cfg.dataset.scale.relevant_from),
        "cost": cost_summary(frame),
        "tokens": {
            "mean_input": float(answered["input_tokens"].mean()) if len(answered) else 0.0,
            "mean_output": float(answered["output_tokens"].mean()) if len(answered) else 0.0,
            "mean_image": float(answered["image_tokens"].mean()) if len(answered) else 0.0,
        },
        "latency_s": {
            "p50": float(answered["latency_s"].quantile(0.5)) if len(answered) else 0.0,
            "p95": float(answered["latency_s"].quantile(0.95)) if len(answered) else 0.0,
        },
        "calls": _stats(stats),
        "config": resolved_config(raw_cfg),
        "packages": package_versions(),
        "git_commit": git_commit(),
    }
    if extra:
        summary.update(extra)
    tmp = run_dir / (SUMMARY + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2, default=_jsonable) + "\n", encoding="utf-8")
    os.replace(tmp, run_dir / SUMMARY)
    return summary


def _stats(stats: Any) -> dict[str, Any]:
    if stats is None:
        return {}
    return {
        "api_calls": stats.calls,
        "cache_hits": stats.cache_hits,
        "retries": stats.retries,
        "failures": stats.failures,
        "spent_usd": stats.spent_usd,
        "stopped_by_budget": stats.stopped_by_budget,
        "errors_by_kind": dict(stats.errors_by_kind),
        "resent": stats.resent,
        "resent_usd": stats.resent_usd,
        "abandoned_in_flight": stats.abandoned,
        "answered_by_another_process": stats.from_other_process,
        **({"batch": dict(stats.batch)} if stats.batch else {}),
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to summary.json")
