"""Panels and cascades from saved records: aggregators, costs, virtual runs, sweeps."""

from __future__ import annotations

import math
import os
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from mmjudge import metrics
from mmjudge.data.qrels import read_qrels
from mmjudge.ensembles import cascades
from mmjudge.ensembles import defaults as default_ensembles
from mmjudge.ensembles import panels as panel_builder
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import aggregate
from mmjudge.studies.judge_files import align
from tests.fake_runs import make_run, read_rows, read_summary
from tests.helpers import run_sweep

NAN = math.nan
LLMJUDGE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmjudge"

# members × items; the comment gives the tied grades where there is a tie
MATRIX = np.array(
    [
        [2, 0, 1, NAN, 0, 0, 1],
        [2, 2, 2, NAN, 1, 0, NAN],
        [1, NAN, NAN, NAN, 2, 1, NAN],
    ]
)
#       no tie  {0,2}  {1,2}  nobody  {0,1,2}  no tie  one vote
EXPECTED = {
    "majority": [2, 1, 2, NAN, 1, 0, 1],
    "majority-mean": [2, 1, 2, NAN, 1, 0, 1],
    "majority-max": [2, 2, 2, NAN, 2, 0, 1],
    "majority-min": [2, 0, 1, NAN, 0, 0, 1],
    "mean": [2, 1, 2, NAN, 1, 0, 1],  # 5/3, 1, 1.5, -, 1, 1/3, 1
}


@pytest.mark.parametrize("how", sorted(EXPECTED))
def test_aggregators_by_hand(how: str) -> None:
    got = aggregate.aggregate(MATRIX, how, grades=[0, 1, 2])
    np.testing.assert_array_equal(got, EXPECTED[how])


def test_random_tie_break_is_seeded_and_picks_a_tied_grade() -> None:
    got = aggregate.aggregate(MATRIX, "majority-random", grades=[0, 1, 2], seed=3)
    assert got[0] == 2 and got[5] == 0 and got[6] == 1 and math.isnan(got[3])
    assert got[1] in (0, 2) and got[2] in (1, 2) and got[4] in (0, 1, 2)
    again = aggregate.aggregate(MATRIX, "majority-random", grades=[0, 1, 2], seed=3)
    np.testing.assert_array_equal(got, again)
    # many {0, 2} ties: both grades drawn, about half each, never the untied grade 1
    ties = np.array([[0.0] * 400, [2.0] * 400])
    drawn = aggregate.aggregate(ties, "majority-random", grades=[0, 1, 2], seed=0)
    assert set(drawn.tolist()) == {0.0, 2.0} and 150 < (drawn == 2).sum() < 250
    other = aggregate.aggregate(ties, "majority-random", grades=[0, 1, 2], seed=1)
    assert not np.array_equal(drawn, other)


def test_rounding_is_half_up_onto_the_scale() -> None:
    np.testing.assert_array_equal(
        aggregate.round_to_scale([0.5, 1.5, 2.4, 0.49, NAN], [0, 1, 2]), [1, 2, 2, 0, NAN]
    )
    # a scale with a gap: the nearest grade, halves upwards
    np.testing.assert_array_equal(aggregate.round_to_scale([2.0, 1.9, 2.6], [0, 1, 3]), [3, 1, 3])
    # a tie between grades 1 and 3 on that scale: mean 2, halfway, goes up
    tied = np.array([[1.0], [3.0]])
    assert aggregate.aggregate(tied, "majority", grades=[0, 1, 3])[0] == 3


def test_labels_off_the_scale_count_as_none_and_unknown_aggregator_fails() -> None:
    got = aggregate.aggregate(np.array([[7.0, 1.0], [7.0, NAN]]), "majority", grades=[0, 1, 2])
    assert math.isnan(got[0]) and got[1] == 1
    with pytest.raises(ValueError, match="unknown aggregator"):
        aggregate.aggregate(MATRIX, "median")


def test_default_scale_is_every_whole_number_seen() -> None:
    # grades 0 and 3 tie; the scale 0..3 makes the mean 1.5 round to 2
    assert aggregate.aggregate(np.array([[0.0], [3.0]]), "majority")[0] == 2


# --------------------------------------------------------------------------- virtual runs

KEYS = [("q1", "a"), ("q1", "b"), ("q2", "c"), ("q2", "d")]
HUMAN = {
    ("q1", "a"): {"x": 2, "y": 2},
    ("q1", "b"): {"x": 0, "y": 1},
    ("q2", "c"): {"x": 1, "y": 1},
    ("q2", "d"): {"x": 0, "y": 0},
}


def three_members(tmp_path: Path) -> list[Path]:
    a = make_run(
        tmp_path,
        "a",
        {KEYS[0]: 2, KEYS[1]: 0, KEYS[2]: 1, KEYS[3]: None},
        HUMAN,
        model="small",
        cost={KEYS[0]: 0.1, KEYS[1]: 0.2, KEYS[2]: 0.3, KEYS[3]: 0.4},
        image_cost=0.05,
        latency=1.0,
        image_hashes={KEYS[0]: ["img1"]},
    )
    b = make_run(
        tmp_path,
        "b",
        {KEYS[0]: 2, KEYS[1]: 2, KEYS[2]: None, KEYS[3]: None},
        HUMAN,
        model="medium",
        cost=1.0,
        latency=3.0,
        errors={KEYS[3]: "HTTP 500 after retries"},
        image_hashes={KEYS[0]: ["img1", "img2"]},
    )
    # c never saw the last item
    c = make_run(
        tmp_path,
        "c",
        {KEYS[0]: 1, KEYS[1]: 1, KEYS[2]: 1},
        HUMAN,
        model="large",
        cost=10.0,
        latency=2.0,
    )
    return [a, b, c]


def test_panel_virtual_run_labels_costs_and_summary(tmp_path: Path) -> None:
    members = three_members(tmp_path)
    out = tmp_path / "sweep" / "ensembles" / "p"
    summary = panel_builder.build_panel(members, out, how="majority-max").to_json()
    rows = {(r["query_id"], r["result_id"]): r for r in read_rows(out)}
    assert list(rows) == KEYS
    # votes: (2,2,1) → 2; (0,2,1) → three-way tie → max 2; (1,-,1) → 1; (-,-,absent) → none
    assert [rows[k]["label"] for k in KEYS] == [2, 2, 1, None]
    assert rows[KEYS[3]]["parse_error"] == "no member gave a parseable grade"
    assert rows[KEYS[3]]["error"] is None
    # cost: every member that judged the item, unparseable and failed calls included
    assert rows[KEYS[0]]["cost_usd"] == pytest.approx(0.1 + 1.0 + 10.0)
    assert rows[KEYS[3]]["cost_usd"] == pytest.approx(0.4 + 1.0)
    assert rows[KEYS[0]]["image_cost_usd"] == pytest.approx(0.05)
    assert rows[KEYS[0]]["input_tokens"] == 300 and rows[KEYS[3]]["output_tokens"] == 20
    assert rows[KEYS[0]]["usage"]["image_tokens"] == 15
    assert rows[KEYS[0]]["latency_s"] == 3.0
    assert rows[KEYS[0]]["image_sha256s"] == ["img1", "img2"]
    assert rows[KEYS[0]]["explanation"] == "majority-max of small=2, medium=2, large=1"
    assert rows[KEYS[0]]["provider"] == "panel" and rows[KEYS[0]]["human_labels"] == HUMAN[KEYS[0]]
    assert rows[KEYS[0]]["model"] == "panel:majority-max(small+medium+large)"

    on_disk = read_summary(out)
    assert {k: v for k, v in on_disk.items() if k != "metrics"} == {
        k: v for k, v in summary.items() if k != "metrics"
    }
    assert summary["kind"] == "panel" and summary["aggregator"] == "majority-max"
    assert summary["provider"] == "panel" and summary["status"] == "complete"
    assert [m["run_id"] for m in summary["members"]] == ["a", "b", "c"]
    assert summary["members"][0]["run_dir"] == os.path.relpath(members[0], out)
    assert summary["n_judgments"] == 4 and summary["n_unparseable"] == 1
    total = 0.1 + 0.2 + 0.3 + 0.4 + 4 * 1.0 + 3 * 10.0
    assert summary["cost"]["total_usd"] == pytest.approx(total)
    assert summary["cost"]["usd_per_million"] == pytest.approx(total / 4 * 1e6)
    assert summary["cost"]["image_usd_per_million"] == pytest.approx(0.05 * 4 / 4 * 1e6)
    assert summary["cost"]["spent_usd"] == 0.0
    consensus = [2, 0, 1]  # lower median of each item's grades
    assert summary["metrics"]["kappa"] == pytest.approx(
        cohen_kappa_score(consensus, [2, 2, 1], labels=[0, 1, 2])
    )
    for key in ("schema_version", "dataset", "modality", "prompt_id", "grades", "packages"):
        assert key in summary


def test_panel_of_one_model_over_prompts_is_named_by_prompt(tmp_path: Path) -> None:
    labels = dict.fromkeys(KEYS, 1)
    a = make_run(tmp_path, "a", labels, HUMAN, model="gpt", prompt_id="default")
    b = make_run(tmp_path, "b", labels, HUMAN, model="gpt", prompt_id="terse")
    summary = panel_builder.build_panel([a, b], tmp_path / "p").to_json()
    assert summary["model"] == "panel:majority(gpt: default+terse)"
    assert summary["prompt_id"] == "default+terse"


def test_panel_where_every_member_failed_is_an_error_row(tmp_path: Path) -> None:
    errors = {KEYS[0]: "timeout"}
    labels = {KEYS[0]: None, KEYS[1]: 1}
    a = make_run(tmp_path, "a", labels, HUMAN, errors=errors)
    b = make_run(tmp_path, "b", labels, HUMAN, errors=errors, model="n")
    summary = panel_builder.build_panel([a, b], tmp_path / "p").to_json()
    row = read_rows(tmp_path / "p")[0]
    assert row["label"] is None and row["error"].startswith("no member answered (timeout")
    assert summary["n_errors"] == 1 and summary["n_unparseable"] == 0


def test_members_must_share_dataset_and_scale(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a", {KEYS[0]: 1}, HUMAN)
    b = make_run(tmp_path, "b", {KEYS[0]: 1}, HUMAN, dataset="other")
    c = make_run(tmp_path, "c", {KEYS[0]: 1}, HUMAN, grades=(0, 1, 2, 3))
    with pytest.raises(MMJudgeError, match="share one dataset"):
        panel_builder.build_panel([a, b], tmp_path / "p")
    with pytest.raises(MMJudgeError, match="different grade scales"):
        panel_builder.build_panel([a, c], tmp_path / "p")
    with pytest.raises(MMJudgeError, match="at least two"):
        panel_builder.build_panel([a], tmp_path / "p")


# --------------------------------------------------------------------------- cascades


def cascade_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    cheap = make_run(
        tmp_path,
        "cheap",
        {KEYS[0]: 2, KEYS[1]: 1, KEYS[2]: None, KEYS[3]: 0},
        HUMAN,
        model="cheap",
        cost=0.01,
        image_cost=0.004,
        latency=1.0,
        raw_output={
            KEYS[0]: "2\nconfidence: 5",
            KEYS[1]: "1\nconfidence: 2",
            KEYS[2]: "unsure",
            KEYS[3]: "0\nconfidence: 4",
        },
    )
    other = make_run(
        tmp_path,
        "cheap2",
        {KEYS[0]: 1, KEYS[1]: 1, KEYS[2]: 1, KEYS[3]: 0},
        HUMAN,
        model="cheap",
        prompt_id="terse",
        cost=0.02,
    )
    dear = make_run(
        tmp_path,
        "dear",
        {KEYS[0]: 2, KEYS[1]: 0, KEYS[2]: 1, KEYS[3]: None},
        HUMAN,
        model="dear",
        cost=1.0,
        image_cost=0.5,
        latency=4.0,
    )
    return cheap, other, dear


@pytest.mark.parametrize(
    ("rules", "escalated", "labels"),
    [
        (["middle"], [False, True, False, False], [2, 0, None, 0]),
        (["unparseable"], [False, False, True, False], [2, 1, 1, 0]),
        (["middle", "unparseable"], [False, True, True, False], [2, 0, 1, 0]),
        # stated confidence below 4 or none: items 1 and 2
        (["confidence"], [False, True, True, False], [2, 0, 1, 0]),
    ],
)
def test_cascade_rules_costs_and_escalation_rate(
    tmp_path: Path, rules: list[str], escalated: list[bool], labels: list[int | None]
) -> None:
    cheap, _, dear = cascade_runs(tmp_path)
    out = tmp_path / "cascade"
    summary = cascades.build_cascade(cheap, dear, out, rules=rules).to_json()
    rows = read_rows(out)
    assert [r["label"] for r in rows] == labels
    for row, up in zip(rows, escalated, strict=True):
        assert row["cost_usd"] == pytest.approx(0.01 + (1.0 if up else 0.0))
        assert row["image_cost_usd"] == pytest.approx(0.004 + (0.5 if up else 0.0))
        assert row["latency_s"] == pytest.approx(1.0 + (4.0 if up else 0.0))
        assert row["explanation"].startswith("escalated" if up else "kept cheap")
        assert row["provider"] == "cascade"
    assert summary["kind"] == "cascade" and summary["rules"] == rules
    assert summary["n_escalated"] == sum(escalated)
    assert summary["escalation_rate"] == pytest.approx(sum(escalated) / 4)
    total = 4 * 0.01 + sum(escalated) * 1.0
    assert summary["cost"]["total_usd"] == pytest.approx(total)
    assert [m["role"] for m in summary["members"]] == ["cheap", "expensive"]
    assert summary["model"] == f"cascade:{'+'.join(rules)}(cheap→dear)"


def test_escalated_item_without_expensive_label_keeps_the_cheap_one(tmp_path: Path) -> None:
    cheap = make_run(tmp_path, "c", {KEYS[3]: 1}, HUMAN, cost=0.01)
    dear = make_run(tmp_path, "d", {KEYS[3]: None}, HUMAN, model="d", cost=1.0)
    summary = cascades.build_cascade(cheap, dear, tmp_path / "x", rules=["middle"]).to_json()
    row = read_rows(tmp_path / "x")[0]
    assert row["label"] == 1 and row["cost_usd"] == pytest.approx(1.01)
    assert summary["escalation_rate"] == 1.0


def test_disagree_rule_needs_and_uses_two_cheap_runs(tmp_path: Path) -> None:
    cheap, other, dear = cascade_runs(tmp_path)
    with pytest.raises(MMJudgeError, match="second cheap run"):
        cascades.build_cascade(cheap, dear, tmp_path / "x", rules=["disagree"])
    summary = cascades.build_cascade(
        [cheap, other], dear, tmp_path / "y", rules=["disagree"]
    ).to_json()
    rows = read_rows(tmp_path / "y")
    # cheap labels (2,1), (1,1), (-,1), (0,0): only the first item has two that differ;
    # the third has no first cheap label and takes the second's
    assert [r["label"] for r in rows] == [2, 1, 1, 0]
    assert summary["n_escalated"] == 1
    assert rows[0]["cost_usd"] == pytest.approx(0.01 + 0.02 + 1.0)
    assert rows[1]["cost_usd"] == pytest.approx(0.03)
    assert summary["model"] == "cascade:disagree(cheap/default+cheap/terse→dear/default)"


def test_confidence_rule_needs_stated_confidences_and_rules_are_checked(tmp_path: Path) -> None:
    _, other, dear = cascade_runs(tmp_path)
    with pytest.raises(MMJudgeError, match="prompt=confidence"):
        cascades.build_cascade(other, dear, tmp_path / "x", rules=["confidence"])
    with pytest.raises(MMJudgeError, match="unknown cascade rule"):
        cascades.build_cascade(other, dear, tmp_path / "x", rules=["bored"])


# --------------------------------------------------------------------------- after a sweep


def test_default_ensembles_of_a_sweep(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    labels = {KEYS[0]: 2, KEYS[1]: 0, KEYS[2]: 1, KEYS[3]: 0}
    for model, price in (("m1", 0.001), ("m2", 0.01), ("m3", 0.1)):
        make_run(sweep, f"{model}.default", labels, HUMAN, model=model, cost=price)
    for model in ("m1", "m2"):
        make_run(sweep, f"{model}.terse", labels, HUMAN, model=model, prompt_id="terse")
    make_run(sweep, "m1.mm", labels, HUMAN, model="m1", modality="mm")  # alone in its group
    built = default_ensembles.build_default_ensembles(sweep)
    names = sorted(p.name for p in built)
    assert names == [
        "cascade.toy.text.m1-to-m2",
        "cascade.toy.text.m1-to-m3",
        "cascade.toy.text.m2-to-m3",
        "panel.toy.text.default.models",
        "panel.toy.text.m1.prompts",
        "panel.toy.text.m2.prompts",
    ]
    assert all(p.parent == sweep / "ensembles" for p in built)
    kinds = {p.name: read_summary(p) for p in built}
    assert kinds["panel.toy.text.m1.prompts"]["kind"] == "panel"
    assert kinds["panel.toy.text.default.models"]["model"] == "panel:majority(m1+m2+m3)"
    cascade = kinds["cascade.toy.text.m1-to-m3"]
    assert cascade["kind"] == "cascade" and cascade["rules"] == ["middle", "unparseable"]
    assert cascade["escalation_rate"] == 0.25  # the one grade-1 item
    assert [m["run_id"] for m in cascade["members"]] == ["m1.default", "m3.default"]
    # running it again does not take the ensembles for members
    assert sorted(p.name for p in default_ensembles.build_default_ensembles(sweep)) == names


def sweep(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_sweep(
        tmp_path, "-m", "model=lexical", "modality=text", "prompt=default,terse", *args
    )


@pytest.mark.slow
def test_sweep_builds_a_panel_over_its_prompts(tmp_path: Path) -> None:
    result = sweep(tmp_path)
    assert result.returncode == 0, result.stderr
    (sweep_dir,) = (tmp_path / "results" / "sweeps").iterdir()
    (panel_dir,) = (sweep_dir / "ensembles").iterdir()
    summary = read_summary(panel_dir)
    assert summary["kind"] == "panel" and summary["aggregator"] == "majority"
    assert {m["prompt_id"] for m in summary["members"]} == {"default", "terse"}
    assert summary["n_judgments"] == 240 and summary["model"].startswith("panel:majority(")
    assert "ensembles: 1" in result.stderr


@pytest.mark.slow
def test_sweep_ensembles_can_be_switched_off(tmp_path: Path) -> None:
    result = sweep(tmp_path, "hydra.callbacks.sweep_report.ensembles=false", "report.build=false")
    assert result.returncode == 0, result.stderr
    (sweep_dir,) = (tmp_path / "results" / "sweeps").iterdir()
    assert not (sweep_dir / "ensembles").exists()


# --------------------------------------------------------------------------- real labels


@pytest.fixture
def llmjudge() -> tuple[Path, list[Path]]:
    human = LLMJUDGE / "test_qrels_human.txt"
    runs = sorted((LLMJUDGE / "runs").glob("*.txt"))
    if not human.is_file() or not runs:
        pytest.skip(f"LLMJudge qrels not found under {LLMJUDGE} (shared data is not checked out)")
    return human, runs


def reference_panel(votes: list[float], how: str) -> float:
    """The aggregators written out plainly, one item at a time (grades off the 0-3 scale,
    which one of the files has, count as no vote)."""
    given = [v for v in votes if v in (0, 1, 2, 3)]
    if not given:
        return NAN
    if how == "mean":
        return float(math.floor(sum(given) / len(given) + 0.5))
    counts = Counter(given)
    top = max(counts.values())
    tied = sorted(g for g, c in counts.items() if c == top)
    if how == "majority-max":
        return tied[-1]
    if how == "majority-min":
        return tied[0]
    return float(math.floor(sum(tied) / len(tied) + 0.5))


def test_llmjudge_panels_of_seven_runs(llmjudge) -> None:
    human_path, run_paths = llmjudge
    alignment = align(read_qrels(human_path), {p.stem: read_qrels(p) for p in run_paths})
    assert alignment.judges.shape == (7, 4423)
    grades = [0, 1, 2, 3]
    singles = [cohen_kappa_score(alignment.human, row) for row in alignment.judges]
    for how in ("majority", "majority-max", "majority-min", "mean"):
        got = aggregate.aggregate(alignment.judges, how, grades)
        expected = [reference_panel(list(col), how) for col in alignment.judges.T]
        np.testing.assert_array_equal(got, expected)
        kappa = metrics.cohen_kappa(alignment.human, got)
        assert kappa == pytest.approx(cohen_kappa_score(alignment.human, got))
        assert 0.2 < kappa < 0.35
    majority = metrics.cohen_kappa(alignment.human, aggregate.aggregate(alignment.judges))
    # on these files the majority of seven judges is at least as good as the best single one
    assert majority >= max(singles) - 0.01
    drawn = aggregate.aggregate(alignment.judges, "majority-random", grades, seed=0)
    low = aggregate.aggregate(alignment.judges, "majority-min", grades)
    high = aggregate.aggregate(alignment.judges, "majority-max", grades)
    assert ((drawn >= low) & (drawn <= high)).all() and (drawn != low).any()
    assert (drawn != high).any()
