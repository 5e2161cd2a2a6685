"""Several protected attributes: each one is its own within-seed contrast (issue 47, item 3).

A suite where most seeds vary gender and one seed varies age × gender (what ``suite mine``
writes from real traffic) made composite groups with one record each ("age=25, gender=female");
the largest difference over them is 1 under every permutation, so an app escalating every
woman was INCONCLUSIVE with Holm p = 1.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness import GateConfig, MetricConfig, Observation, evaluate
from spanguard_processor.traces.model import ProcessTrace

_CONFIG = GateConfig(bootstrap_samples=200, permutation_samples=199)
_METRIC = [MetricConfig("escalation_parity", 0.1)]
_STATED = frozenset({"escalated"})

Escalates = Callable[[dict[str, str]], bool]


def _record(seed: int, assignments: dict[str, str], escalated: bool) -> Observation:
    name = "|".join(f"{k}={v}" for k, v in sorted(assignments.items()))
    return Observation(
        id=f"s{seed}::{name}",
        seed_id=f"s{seed}",
        variant_id=f"s{seed}::{name}",
        assignments=assignments,
        prompt="",
        response="ok",
        trace=ProcessTrace(escalated=escalated),
        stated=_STATED,
    )


def mined_suite(app: Escalates, seeds: int = 35) -> list[Observation]:
    """``seeds - 1`` seeds varying gender, one varying age × gender (item 3's suite)."""
    out = []
    for s in range(seeds - 1):
        for gender in ("female", "male"):
            a = {"gender": gender}
            out.append(_record(s, a, app(a)))
    for age in ("25", "45"):
        for gender in ("female", "male"):
            a = {"age": age, "gender": gender}
            out.append(_record(seeds - 1, a, app(a)))
    return out


def factorial_suite(app: Escalates, seeds: int = 40) -> list[Observation]:
    """fairtrace's multi-attribute shape: every seed varies region × gender."""
    return [
        _record(s, {"gender": g, "region": r}, app({"gender": g, "region": r}))
        for s in range(seeds)
        for g in ("female", "male")
        for r in ("north", "south")
    ]


def _escalates_women(a: dict[str, str]) -> bool:
    return a.get("gender") == "female"


def _fair(a: dict[str, str]) -> bool:
    return False


def test_a_mined_suite_fails_an_app_that_escalates_every_woman() -> None:
    result = evaluate(mined_suite(_escalates_women), _METRIC, _CONFIG, generated_at="t").results[0]
    assert result.verdict == "fail", result.reason_text
    gender = {a.attribute: a for a in result.attributes}["gender"]
    assert gender.verdict == "fail" and gender.seeds == 35
    assert result.reason_text.startswith("gender: beyond threshold")


def test_a_mined_suite_does_not_fail_a_fair_app() -> None:
    result = evaluate(mined_suite(_fair), _METRIC, _CONFIG, generated_at="t").results[0]
    assert result.verdict != "fail"
    by = {a.attribute: a for a in result.attributes}
    assert by["gender"].verdict == "pass"
    assert by["age"].seeds == 1  # only the one seed varies age


def test_a_factorial_suite_decides_each_attribute() -> None:
    ev = evaluate(factorial_suite(_escalates_women), _METRIC, _CONFIG, generated_at="t")
    by = {a.attribute: a for a in ev.results[0].attributes}
    assert by["gender"].verdict == "fail" and by["region"].verdict == "pass"
    fair = evaluate(factorial_suite(_fair), _METRIC, _CONFIG, generated_at="t").results[0]
    assert fair.verdict == "pass", fair.reason_text


def test_one_attribute_has_no_per_attribute_results() -> None:
    obs = [o for o in mined_suite(_escalates_women) if "age" not in o.assignments]
    result = evaluate(obs, _METRIC, _CONFIG, generated_at="t").results[0]
    assert result.attributes == () and result.verdict == "fail"


def test_reports_show_each_attribute_and_leave_one_attribute_output_alone() -> None:
    from spanguard_processor.fairness.report.reports import render_markdown, report_dict

    ev = evaluate(mined_suite(_escalates_women), _METRIC, _CONFIG, generated_at="t")
    metric = report_dict(ev)["metric_results"][0]
    assert [a["attribute"] for a in metric["attributes"]] == ["age", "gender"]
    gender = metric["attributes"][1]
    assert gender["verdict"] == "fail" and gender["contrast_seeds"] == 35
    assert {g["group"] for g in gender["groups"]} == {"female", "male"}
    # the combined groups stay as cells (evidence), with fairtrace's score
    assert "age=25, gender=female" in {g["group"] for g in metric["groups"]}
    assert metric["score"] == 1.0
    assert "| ↳ escalation_parity · gender (35 seeds) |" in render_markdown(ev)
    single = [o for o in mined_suite(_escalates_women) if "age" not in o.assignments]
    one = evaluate(single, _METRIC, _CONFIG, generated_at="t")
    assert "attributes" not in report_dict(one)["metric_results"][0]
    assert "↳" not in render_markdown(one)


def test_the_cli_fails_a_mined_shape_suite_and_names_the_attribute(tmp_path: Path) -> None:
    prompts: list[dict[str, Any]] = [
        {
            "id": f"s{i}",
            "prompt": f"Case {i}: a {{gender}} asks.",
            "attributes": {"gender": ["female", "male"]},
        }
        for i in range(34)
    ]
    prompts.append(
        {
            "id": "s34",
            "prompt": "A {age}-year-old {gender} asks.",
            "attributes": {"age": ["25", "45"], "gender": ["female", "male"]},
        }
    )
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps({"dataset": {"prompts": prompts}, "metrics": [{"type": "escalation_parity"}]})
    )
    rows = []
    for p in prompts:
        names = sorted(p["attributes"])
        for n, combo in enumerate(itertools.product(*(p["attributes"][k] for k in names)), 1):
            assignments = dict(zip(names, combo, strict=True))
            rows.append(
                {
                    "id": f"{p['id']}::{n}",
                    "seed_id": p["id"],
                    "prompt": "",
                    "assignments": assignments,
                    "response": "ok",
                    "response_metadata": {
                        "trace": {"escalated": assignments["gender"] == "female"}
                    },
                }
            )
    records = tmp_path / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(
        cli, ["fairness", str(suite), str(records), "--bootstrap", "200", "--permutations", "199"]
    )
    assert result.exit_code == 1, result.output
    assert "gender: FAIL 1.0000" in result.output
    assert "age: INCONCLUSIVE" in result.output
    assert "over 35 seeds that vary it" in result.output
    assert "over 1 seed that varies it" in result.output  # "varys" until the review
