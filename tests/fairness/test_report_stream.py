"""report.json is written a record at a time (issue 50: a run of millions of records must not
hold the whole text, nor every record's dict, in memory) and stays byte-identical to the one
``json.dumps`` of the whole report wrote."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from spanguard_processor.fairness import MetricConfig, evaluate, observation_from_record
from spanguard_processor.fairness.report.evidence_report import ReportOptions
from spanguard_processor.fairness.report.reports import json_chunks, report_dict, write_reports

from .conftest import FAST


def _evaluation(records: int):  # type: ignore[no-untyped-def]
    obs = [
        observation_from_record(
            {
                "id": f"s{s}::{g}",
                "seed_id": f"s{s}",
                "prompt": f'p {g} «ü»\n"q"',
                "assignments": {"g": g},
                "response": "" if s % 3 == 0 else f"answer {s} {g}",
                "response_metadata": {
                    "trace": {"escalated": (s + (g == "b")) % 2 == 0, "tool_calls": []},
                    "score": float("nan") if s == 1 else s / 7,
                    "nested": {"empty": {}, "list": [], "t": [1, [2, {}]]},
                },
            }
        )
        for s in range(records // 2)
        for g in ("a", "b")
    ]
    return evaluate(obs, [MetricConfig("escalation_parity", 0.1)], FAST, generated_at="t")


@pytest.mark.parametrize("redact", [False, True])
def test_streamed_report_json_is_the_whole_dump(tmp_path: Path, redact: bool) -> None:
    ev = _evaluation(12)
    options = ReportOptions(redact=redact)
    whole = json.dumps(report_dict(ev, options), indent=2, allow_nan=False, default=str) + "\n"
    assert b"".join(json_chunks(ev, options)) == whole.encode("utf-8")
    write_reports(ev, tmp_path, options)
    assert (tmp_path / "report.json").read_bytes() == whole.encode("utf-8")
    assert len(json.loads(whole)["scenario_results"]) == 12


def test_streamed_report_json_of_one_record_and_of_none() -> None:
    ev = _evaluation(2)
    for case in (replace(ev, observations=ev.observations[:1]), replace(ev, observations=())):
        whole = json.dumps(report_dict(case), indent=2, allow_nan=False, default=str) + "\n"
        assert b"".join(json_chunks(case)) == whole.encode("utf-8")


def test_the_trend_is_spliced_into_report_json_as_a_whole_rewrite_would_write_it(
    tmp_path: Path,
) -> None:
    from spanguard_processor.fairness.report.history import add_trend

    ev = _evaluation(12)
    write_reports(ev, tmp_path)
    report = tmp_path / "report.json"
    trend = {"previous_runs": 2, "metrics": [{"metric": "m", "scores": [0.1, float("inf")]}]}
    trend["metrics"][0]["scores"][1] = 0.25  # json.dumps(allow_nan=False): finite only
    data = json.loads(report.read_text(encoding="utf-8"))
    data["spanguard"]["trend"] = trend
    expected = json.dumps(data, indent=2, allow_nan=False) + "\n"
    add_trend(report, trend)
    assert report.read_text(encoding="utf-8") == expected
    trend["previous_runs"] = 3  # a report that has a trend already: replaced, not added twice
    data["spanguard"]["trend"] = trend
    add_trend(report, trend)
    assert report.read_text(encoding="utf-8") == json.dumps(data, indent=2) + "\n"
