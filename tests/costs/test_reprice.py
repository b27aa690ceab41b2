"""Re-pricing saved runs (other sheet, batch, another model's prices), GPU-hour pricing and
long-context tiers, all checked against figures worked out by hand."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mmjudge.cli.reprice import main
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.reprice import load_sheet, reprice_run
from mmjudge.costs.sheets import gpu_hour_price, price_from_entry
from mmjudge.errors import ConfigError
from mmjudge.records import Usage
from mmjudge.store.repriced_file import output_name, read_repriced, write_repriced
from tests.helpers import REPO_ROOT

# --- a run directory written by hand ---------------------------------------------------------
#
# gpt-4o-2024-08-06 judged four multimodal items under the 2024-08-16 sheet ($2.50 in, $10
# out, no cached price yet), one 512-px image per item at low detail (85 tokens):
#
#   row  input  cached  output  image  2024 cost (µ$)           2026 cost (µ$)
#   1      974       0      10     85  974·2.5 + 10·10 = 2535    2535
#   2     1000       0      20     85  2500 + 200 = 2700         2700 (a response-cache hit)
#   3        —       —       —      —  failed call: 0            0
#   4     2000    1024       5     85  2000·2.5 + 50 = 5050      976·2.5 + 1024·1.25 + 50 = 3770

ROWS: list[dict[str, Any]] = [
    {"q": "q1", "usage": (974, 0, 10, 85), "cost": 2535e-6, "cached": False, "error": None},
    {"q": "q2", "usage": (1000, 0, 20, 85), "cost": 2700e-6, "cached": True, "error": None},
    {"q": "q3", "usage": None, "cost": 0.0, "cached": False, "error": "provider error: 500"},
    {"q": "q4", "usage": (2000, 1024, 5, 85), "cost": 5050e-6, "cached": False, "error": None},
]
N = len(ROWS)


def write_run(
    run_dir: Path, model: dict[str, Any] | None = None, size: int = 512, mode: str = "sync"
) -> Path:
    run_dir.mkdir(parents=True)
    model = model or {
        "name": "gpt4o_0806",
        "provider": "openai",
        "model_id": "gpt-4o-2024-08-06",
        "image_detail": "low",
        "price_key": None,
    }
    lines = []
    for spec in ROWS:
        usage: dict[str, int] = {}
        if spec["usage"]:
            tokens_in, cached, tokens_out, image = spec["usage"]
            usage = {
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "cached_input_tokens": cached,
                "cache_write_tokens": 0,
                "reasoning_tokens": 0,
                "image_tokens": image,
            }
        row = {
            "run_id": run_dir.name,
            "dataset": "demo",
            "query_id": spec["q"],
            "result_id": "r1",
            "modality": "mm",
            "provider": model["provider"],
            "model": model["name"],
            "prompt_id": "default",
            "prompt_hash": None,
            "image_sha256s": ["0" * 64],
            "raw_output": None if spec["error"] else "1",
            "label": None if spec["error"] else 1,
            "explanation": None,
            "parse_error": None,
            "human_labels": {"a": 1},
            "input_tokens": usage.get("input_tokens", 0),
            "output_tokens": usage.get("output_tokens", 0),
            "cost_usd": spec["cost"],
            "latency_s": 0.1,
            "cached": spec["cached"],
            "error": spec["error"],
            "timestamp": "2024-08-16T00:00:00+00:00",
            "usage": usage,
            "image_cost_usd": 85 * 2.5e-6 if usage else 0.0,
            "schema_version": 1,
        }
        lines.append(json.dumps(row))
    (run_dir / "judgments.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = {
        "schema_version": 1,
        "run_id": run_dir.name,
        "dataset": "demo",
        "model": model["name"],
        "model_id": model["model_id"],
        "provider": model["provider"],
        "modality": "mm",
        "pricing_sheet": "2024-08-16",
        "n_judgments": N,
        "config": {
            "model": model,
            "images": {"size": size, "fit": "pad"},
            "runner": {"mode": mode},
        },
    }
    (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return run_dir


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "sweep" / "demo.gpt4o_0806.mm.default")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- reprice_run ----------------------------------------------------------------------------


def test_same_sheet_reproduces_the_recorded_costs(run: Path) -> None:
    result = reprice_run(run)
    assert result.original.total_usd == pytest.approx(10285e-6)
    assert result.repriced.total_usd == pytest.approx(10285e-6)
    # Per million judgments counts every row, the failed one included (as summary.json does).
    assert result.repriced.usd_per_million == pytest.approx(10285e-6 / N * 1e6)
    assert result.n_judgments == N
    assert result.n_with_usage == 3
    assert result.n_cached == 1
    assert result.n_errors == 1


def test_repeats_of_runner_samples_are_priced_like_every_call(run: Path) -> None:
    # Rows 1, 2 and 4 asked again as sample 1 (the run paid 2535 + 2700 + 5050 µ$ for them)
    rows = [json.loads(line) for line in (run / "judgments.jsonl").open(encoding="utf-8")]
    repeats = [dict(row, sample=1, cached=False) for row in rows if not row["error"]]
    lines = "".join(json.dumps(row) + "\n" for row in repeats)
    (run / "samples.jsonl").write_text(lines, encoding="utf-8")
    result = reprice_run(run)
    assert result.n_judgments == N and result.n_repeats == 3
    assert result.original.total_usd == pytest.approx(2 * 10285e-6)
    assert result.repriced.total_usd == pytest.approx(2 * 10285e-6)
    assert result.repriced.repeats_usd == pytest.approx(10285e-6)
    assert result.repriced.usd_per_million == pytest.approx(2 * 10285e-6 / N * 1e6)
    assert any("3 repeat calls" in note for note in result.notes)
    newer = reprice_run(run, "2026-10-31")  # row 4's cached tokens cheaper in both samples
    assert newer.repriced.total_usd == pytest.approx(2 * (2535 + 2700 + 3770) * 1e-6)
    assert newer.repriced.repeats_usd == pytest.approx((2535 + 2700 + 3770) * 1e-6)


def test_other_sheet_prices_cached_tokens(run: Path) -> None:
    result = reprice_run(run, "2026-10-31")
    total = (2535 + 2700 + 3770) * 1e-6
    image = 3 * 85 * 2.5e-6
    new = result.repriced
    assert new.sheet == "2026-10-31"
    assert new.total_usd == pytest.approx(total)
    assert new.usd_per_million == pytest.approx(2251.25)
    assert new.image_usd_per_million == pytest.approx(image / N * 1e6)
    assert new.text_usd_per_million == pytest.approx((total - image) / N * 1e6)
    assert result.original.usd_per_million == pytest.approx(2571.25)
    assert result.basis.tokens.cached_input_tokens == 1024


def test_cache_hits_count_like_any_other_row(run: Path) -> None:
    result = reprice_run(run, "2026-10-31")
    # Row 2 was a response-cache hit; its $2,700 per million is in the total all the same.
    assert result.repriced.total_usd == pytest.approx(9005e-6)
    assert any("cache hits" in note for note in result.notes)


def test_batch_halves_every_call(run: Path) -> None:
    result = reprice_run(run, "2026-10-31", batch=True)
    assert result.repriced.usd_per_million == pytest.approx(2251.25 / 2)
    assert result.repriced.image_usd_per_million == pytest.approx(3 * 212.5 / N / 2)


def test_a_batch_run_is_priced_as_it_was_billed(tmp_path: Path) -> None:
    run = write_run(tmp_path / "batched", mode="batch")
    as_made = reprice_run(run, "2026-10-31")
    assert as_made.repriced.usd_per_million == pytest.approx(2251.25 / 2)
    assert as_made.basis.n_batch_priced == 3
    listed = reprice_run(run, "2026-10-31", sync=True)
    assert listed.repriced.usd_per_million == pytest.approx(2251.25)
    assert listed.basis.n_batch_priced == 0
    with pytest.raises(ConfigError, match="contradict"):
        reprice_run(run, "2026-10-31", batch=True, sync=True)


def test_as_another_model_reestimates_image_tokens(run: Path) -> None:
    # gpt-4o-mini bills a low-detail image as 2833 tokens, so each row swaps 85 for 2833:
    #   row 1: (974 − 85 + 2833)·0.15 + 10·0.6 = 564.3 µ$
    #   row 2: (1000 − 85 + 2833)·0.15 + 20·0.6 = 574.2 µ$
    #   row 4: (2000 − 85 + 2833)·0.15 + 5·0.6 = 715.2 µ$ (no cached price in 2024)
    result = reprice_run(run, "2024-08-16", as_model="gpt-4o-mini-2024-07-18")
    new = result.repriced
    assert result.basis.price_key == "gpt-4o-mini-2024-07-18"
    assert result.basis.image_tokens_per_image == 2833
    assert new.total_usd == pytest.approx((564.3 + 574.2 + 715.2) * 1e-6)
    assert new.usd_per_million == pytest.approx(463.425)
    assert new.image_usd_per_million == pytest.approx(3 * 2833 * 0.15 / N)
    assert result.basis.tokens.image_tokens == 3 * 2833
    assert any("512x512 px" in note for note in result.notes)


def test_as_model_accepts_a_model_config_name(run: Path) -> None:
    by_key = reprice_run(run, "2024-08-16", as_model="gpt-4o-mini-2024-07-18")
    by_config = reprice_run(run, "2024-08-16", as_model="gpt4o_mini")
    assert by_config.repriced.total_usd == pytest.approx(by_key.repriced.total_usd)


def test_image_size_comes_from_the_run_config(tmp_path: Path) -> None:
    run = write_run(tmp_path / "big", size=1024)
    # Anthropic's 2024 rule: ⌈1024·1024/750⌉ = 1,399 tokens (under its ~1,600-token cap).
    result = reprice_run(run, "2024-08-16", as_model="claude-3-haiku-20240307")
    assert result.basis.image_tokens_per_image == 1399
    assert result.basis.tokens.image_tokens == 3 * 1399
    assert result.basis.image_size == 1024


def test_as_a_self_hosted_judge(run: Path) -> None:
    # $2.50 per GPU-hour at 2,500 tokens/s → 2.5 / 9,000,000 dollars per token, input and
    # output alike; 512 px is 19 × 19 = 361 patch tokens. Batch mode does not discount it.
    per_token = 2.5 / (3600 * 2500)
    tokens = (974 - 85 + 361 + 10) + (1000 - 85 + 361 + 20) + (2000 - 85 + 361 + 5)
    for batch in (False, True):
        result = reprice_run(run, "2026-10-31", batch=batch, as_model="self-hosted-gpu")
        assert result.repriced.total_usd == pytest.approx(tokens * per_token)
        assert result.basis.image_tokens_per_image == 361
    assert any("self-hosted" in note for note in result.notes)


def test_model_missing_from_the_sheet_names_the_priced_ones(tmp_path: Path) -> None:
    model = {"name": "gpt41", "provider": "openai", "model_id": "gpt-4.1-2025-04-14"}
    run = write_run(tmp_path / "gpt41", model=model)
    with pytest.raises(ConfigError, match=r"gpt-4.1-2025-04-14.*2024-08-16 sheet.*gpt-4o"):
        reprice_run(run, "2024-08-16")


def test_missing_sheet_names_the_sheets(run: Path) -> None:
    with pytest.raises(ConfigError, match=r"no price sheet '1999-01-01'.*2024-08-16, 2026-10-31"):
        reprice_run(run, "1999-01-01")


def test_sheets_load_and_validate() -> None:
    sheet = load_sheet("2026-10-31")
    assert sheet.date == "2026-10-31"
    assert "self-hosted-gpu" in sheet.models


def test_output_names() -> None:
    assert output_name("2024-08-16") == "repriced_2024-08-16.json"
    assert output_name("2024-08-16", batch=True) == "repriced_2024-08-16_batch.json"
    assert output_name("2024-08-16", sync=True) == "repriced_2024-08-16_sync.json"
    assert (
        output_name("2026-10-31", batch=True, as_model="Qwen/Qwen2.5-VL-7B-Instruct")
        == "repriced_2026-10-31_batch_as-Qwen-Qwen2.5-VL-7B-Instruct.json"
    )


def test_write_next_to_the_run_or_under_out(run: Path, tmp_path: Path) -> None:
    result = reprice_run(run, "2026-10-31", batch=True)
    assert write_repriced(run, result) == run / "repriced_2026-10-31_batch.json"
    moved = write_repriced(run, result, tmp_path / "out")
    assert moved == tmp_path / "out" / run.name / "repriced_2026-10-31_batch.json"
    assert json.loads(moved.read_text())["repriced"]["batch"] is True
    assert read_repriced(moved) == result  # read back whole


# --- the command line -----------------------------------------------------------------------


def test_cli_reprices_a_sweep_and_leaves_records_alone(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = digest(run / "judgments.jsonl")
    sweep = run.parent
    code = main([str(sweep), "--sheet", "2026-10-31", "--batch", "--as-model", "gpt4o_mini"])
    out = capsys.readouterr().out
    assert code == 0
    assert digest(run / "judgments.jsonl") == before
    written = run / "repriced_2026-10-31_batch_as-gpt4o_mini.json"
    assert written.is_file()
    data = json.loads(written.read_text())
    lines = out.splitlines()
    assert lines[0].startswith("Re-priced under sheet 2026-10-31, batch, at gpt-4o-mini")
    row = next(line for line in lines if line.startswith("gpt4o_0806"))
    assert "mm" in row and f"{N}" in row and "2,571.25 →" in row
    assert f"{data['repriced']['usd_per_million']:,.2f}" in row
    assert "512x512 px" in out
    assert "wrote 1 file(s)" in out


def test_cli_errors_are_one_line_with_exit_code_2(
    run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [
        (["--sheet", "2023-01-01"], "2024-08-16, 2026-10-31"),
        (["--as-model", "gpt-9"], "gpt4o_mini"),
    ]
    for extra, named in cases:
        assert main([str(run), *extra]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("mmjudge reprice: ") and "\n" not in err and named in err
    assert main([str(run / "nowhere")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_cli_reports_a_run_it_cannot_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = {"name": "gpt41", "provider": "openai", "model_id": "gpt-4.1-2025-04-14"}
    write_run(tmp_path / "sweep" / "a", model=model)
    write_run(tmp_path / "sweep" / "b")
    assert main([str(tmp_path / "sweep"), "--sheet", "2024-08-16"]) == 0
    out = capsys.readouterr().out
    assert "skipped a:" in out and "gpt-4.1-2025-04-14" in out
    assert (tmp_path / "sweep" / "b" / "repriced_2024-08-16.json").is_file()
    assert not (tmp_path / "sweep" / "a" / "repriced_2024-08-16.json").exists()


@pytest.mark.slow
def test_module_entry_point_imports_no_provider_sdk(run: Path) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['mmjudge', 'reprice', {str(run)!r}, '--sheet', '2026-10-31']\n"
        "try:\n"
        "    runpy.run_module('mmjudge', run_name='__main__')\n"
        "except SystemExit as stop:\n"
        "    assert stop.code == 0, stop.code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('openai', 'anthropic'))\n"
        "print('SDKS', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "SDKS []" in done.stdout
    assert "gpt4o_0806" in done.stdout


# --- GPU-hour pricing -----------------------------------------------------------------------


def test_gpu_hour_formula() -> None:
    # $2.50 an hour buys 3600 s × 2500 tokens/s = 9M tokens → $0.2778 per million.
    assert gpu_hour_price(2.5, 1, 2500) == pytest.approx(2.5 / 9)
    # Two GPUs cost twice as much an hour; half the time busy doubles the price again.
    assert gpu_hour_price(2.5, 2, 2500, utilization=0.5) == pytest.approx(4 * 2.5 / 9)
    with pytest.raises(ValueError):
        gpu_hour_price(2.5, 1, 0)


def test_self_hosted_entry_with_separate_throughputs() -> None:
    entry = {
        "gpu_hour": 3.6,
        "gpus": 2,
        "input_tokens_per_s": 8000,
        "output_tokens_per_s": 1000,
        "note": "assumption",
    }
    price = price_from_entry("mine", entry)
    # 7.2 dollars an hour; 8000·3600 = 28.8M input tokens → $0.25/M; 3.6M output → $2/M.
    assert price.input == pytest.approx(0.25)
    assert price.output == pytest.approx(2.0)
    assert price.batch_discount is None  # the sheet's applies
    assert price.self_hosted is not None and price.self_hosted.gpus == 2
    usage = Usage(input_tokens=1000, output_tokens=40)
    assert cost_of(usage, price).total_usd == pytest.approx((250 + 80) * 1e-6)
    batch = cost_of(usage, price, batch=True, sheet_batch_discount=0.5)
    assert batch.total_usd == pytest.approx((250 + 80) * 0.5e-6)


def test_a_judge_that_reads_no_tokens_is_priced_per_judgment_from_its_gpu_hour() -> None:
    """A trained local judge is timed in judgments: $1.20 an hour for two GPUs at 150
    judgments a second, busy 80% of the time: 2.40 / (3600 × 150 × 0.8) dollars a judgment,
    $5.5556 a million; charged once per call, no batch discount."""
    entry = {"gpu_hour": 1.2, "gpus": 2, "judgments_per_s": 150, "utilization": 0.8}
    price = price_from_entry("my-gpu-box", entry)
    assert price.per_judgment == pytest.approx(2.4 / (3600 * 150 * 0.8) * 1e6)
    assert price.input == price.output == 0.0 and price.self_hosted is None
    one = cost_of(Usage(), price)
    assert one.total_usd == pytest.approx(2.4 / (3600 * 150 * 0.8))
    batch = cost_of(Usage(), price, batch=True, sheet_batch_discount=0.5)
    assert batch.total_usd == one.total_usd


def test_a_self_hosted_batch_takes_its_sheets_discount_unless_it_sets_one() -> None:
    from mmjudge.costs.ledger import batch_factor

    starter = yaml.safe_load((REPO_ROOT / "mmjudge/starter/pricing/my_prices.yaml").read_text())
    price = price_from_entry("my-qwen-server", starter["models"]["my-qwen-server"])
    assert batch_factor(price, starter["batch_discount"]) == 0.5
    shipped = load_sheet("2026-10-31")
    hosted = price_from_entry("self-hosted-gpu", shipped.models["self-hosted-gpu"])
    assert batch_factor(hosted, shipped.batch_discount) == 1.0


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"gpu_hour": 2.5, "input": 1.0, "throughput_tokens_per_s": 10}, "both gpu_hour"),
        ({"gpu_hour": 2.5}, "throughput_tokens_per_s"),
        ({"gpu_hour": 2.5, "throughput_tokens_per_s": 10, "gpus": 0}, "gpus"),
        ({"gpu_hour": 2.5, "throughput_tokens_per_s": 10, "utilization": 2}, "utilization"),
        ({"input": 1.0, "output": 2.0, "gpus": 1}, "without gpu_hour"),
        ({"input": 1.0, "output": 2.0, "judgments_per_s": 9}, "without gpu_hour"),
        ({"gpu_hour": 2.5, "judgments_per_s": 9, "throughput_tokens_per_s": 9}, "keep one"),
        ({"gpu_hour": 2.5, "judgments_per_s": 0}, "judgments_per_s must be greater than 0"),
        ({"gpu_hour": 2.5, "judgments_per_s": 9, "gpus": 0}, "gpus"),
        ({"input": 1.0}, "needs input and output"),
        ({"input": 1.0, "output": 2.0, "tiers": [{"input": 2.0, "output": 4.0}]}, "above_input"),
        ({"input": 1.0, "output": 2.0, "tiers": [{"above_input_tokens": 5, "x": 1}]}, "unknown"),
    ],
)
def test_bad_entries_fail_in_one_line(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        price_from_entry("mine", entry, "2026-10-31")


# --- long-context tiers ---------------------------------------------------------------------


def test_tier_bills_the_whole_call_once_input_passes_the_threshold() -> None:
    price = price_from_entry(
        "gpt-5.4-2026-03-05", load_sheet("2026-10-31").models["gpt-5.4-2026-03-05"]
    )
    at_threshold = Usage(input_tokens=272_000, cached_input_tokens=100_000, output_tokens=1000)
    above = Usage(input_tokens=300_000, cached_input_tokens=100_000, output_tokens=1000)
    # At 272,000 tokens the base prices hold: 172k·2.50 + 100k·0.25 + 1k·15.
    assert cost_of(at_threshold, price).total_usd == pytest.approx(0.47)
    # Above it every token pays the tier: 200k·5 + 100k·0.50 + 1k·22.50.
    assert cost_of(above, price).total_usd == pytest.approx(1.0725)
    assert cost_of(above, price, batch=True).total_usd == pytest.approx(1.0725 / 2)


def test_tier_scales_cache_prices_it_does_not_list() -> None:
    entry = {
        "input": 3.0,
        "output": 15.0,
        "cache_write": 3.75,
        "cache_read": 0.3,
        "tiers": [
            {"above_input_tokens": 500_000, "input": 9.0, "output": 30.0},
            {"above_input_tokens": 200_000, "input": 6.0, "output": 22.5, "cache_read": 0.5},
        ],
    }
    price = price_from_entry("long", entry)
    assert [tier.above_input_tokens for tier in price.tiers] == [200_000, 500_000]
    middle = price.at(300_000)
    assert (middle.input, middle.output) == (6.0, 22.5)
    assert middle.cache_write == pytest.approx(7.5)  # 3.75 × 6/3
    assert middle.cache_read == 0.5  # listed by the tier
    top = price.at(600_000)
    assert top.input == 9.0
    assert (top.cache_write, top.cache_read) == pytest.approx((11.25, 0.9))
    assert price.at(200_000) is price
    usage = Usage(input_tokens=300_000, cache_write_tokens=100_000, cached_input_tokens=50_000)
    usage.image_tokens = 1000
    cost = cost_of(usage, price)
    assert cost.total_usd == pytest.approx((150_000 * 6.0 + 100_000 * 7.5 + 50_000 * 0.5) / 1e6)
    assert cost.image_usd == pytest.approx(1000 * 6.0 / 1e6)


def test_reprice_counts_long_context_calls(tmp_path: Path) -> None:
    run = write_run(tmp_path / "long")
    lines = (run / "judgments.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["usage"]["input_tokens"] = 300_000
    lines[0] = json.dumps(row)
    (run / "judgments.jsonl").write_text("\n".join(lines) + "\n")
    result = reprice_run(run, "2026-10-31", as_model="gpt-5.4-2026-03-05")
    assert result.basis.n_long_context == 1
    assert any("long-context" in note for note in result.notes)


def test_cli_notes_name_their_runs_and_model_names_are_not_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_name = "gpt4o_0806_with_a_long_config_name"
    write_run(
        tmp_path / "sweep" / "priced",
        model={
            "name": long_name,
            "provider": "openai",
            "model_id": "gpt-4o-2024-08-06",
            "image_detail": "low",
            "price_key": None,
        },
    )
    local = write_run(
        tmp_path / "sweep" / "local",
        model={"name": "lexical", "provider": "lexical", "model_id": "bm25"},
    )
    rows = [json.loads(line) for line in (local / "judgments.jsonl").read_text().splitlines()]
    for row in rows:
        row.update(usage={}, cost_usd=0.0, image_cost_usd=0.0)
    (local / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main([str(tmp_path / "sweep")]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith(long_name + " ") for line in out.splitlines())
    [note] = [line for line in out.splitlines() if "no row has token usage" in line]
    assert note.endswith("— local")


def test_a_panel_is_repriced_through_its_members(tmp_path: Path) -> None:
    from mmjudge.ensembles.panels import build_panel

    members = []
    for name in ("a", "b", "c"):
        member = write_run(tmp_path / "sweep" / name)
        summary = json.loads((member / "summary.json").read_text())
        summary["grades"] = [0, 1, 2]
        (member / "summary.json").write_text(json.dumps(summary))
        members.append(member)
    panel = tmp_path / "sweep" / "ensembles" / "panel"
    build_panel(members, panel)
    same = reprice_run(panel)
    assert same.original.total_usd == pytest.approx(3 * 10285e-6)
    assert same.repriced.total_usd == pytest.approx(3 * 10285e-6)
    other = reprice_run(panel, "2026-10-31")  # each member's 2026 cost, see ROWS
    assert other.repriced.total_usd == pytest.approx(3 * (2535 + 2700 + 3770) * 1e-6)
    assert other.n_judgments == N
