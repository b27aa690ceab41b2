"""``forecast.json`` read into a :class:`CellForecast` and written back key for key."""

from __future__ import annotations

from pathlib import Path

from mmjudge.store.forecast_file import CellForecast, TextCut, read_forecast, write_forecast
from tests.fake_runs import DRY_RUN_FORECAST

WRITTEN = DRY_RUN_FORECAST


def test_the_file_round_trips_in_its_layout(tmp_path: Path) -> None:
    planned = CellForecast.from_dict(WRITTEN)
    assert planned.to_dict() == WRITTEN  # an unperturbed cell's file keeps its keys
    assert planned.text_cut == TextCut(2000, 1, 30)
    write_forecast(tmp_path, planned)
    assert read_forecast(tmp_path) == planned


def test_older_files_read_with_defaults() -> None:
    old = {k: WRITTEN[k] for k in ("dataset", "model", "modality", "forecast")}
    planned = CellForecast.from_dict(old)
    assert planned.batch == planned.sync and planned.batch_discount == 1.0
    assert (planned.model_id, planned.prompt_id) == ("gpt4o_mini", "default")
    assert planned.text_cut is None


def test_the_line_names_a_perturbed_cell() -> None:
    planned = CellForecast.from_dict({**WRITTEN, "perturb": "inject"})
    assert planned.to_dict()["perturb"] == "inject"
    assert planned.line().startswith("demo_fashion × gpt4o_mini × text × inject: forecast 3 calls")
    assert "batch API $0.25" in planned.line()
    assert "text cut to dataset.max_text_tokens=2000 in 1 items" in planned.line()


def test_dollars_per_million_are_per_judgment_when_a_call_makes_several() -> None:
    from mmjudge.records import Forecast

    total = Forecast()
    total.add(Forecast(calls=1, usd=0.005, judgments=5))  # one call about five results
    total.add(Forecast(calls=1, usd=0.002))  # a lone result, sent alone
    assert (total.calls, total.judgments, total.judged) == (2, 6, 6)
    assert total.usd_per_million == 0.007 / 6 * 1e6
    assert total.to_dict()["judgments"] == 6
    single = Forecast(calls=3, usd=0.003)
    assert single.judged == 3 and single.usd_per_million == 1000.0
    assert "judgments" not in single.to_dict()  # one judgment per call: the keys it had
    round_trip = CellForecast.from_dict({**WRITTEN, "forecast": total.to_dict()})
    assert round_trip.sync.judgments == 6 and " calls for 6 judgments, " in round_trip.line()
