"""Contract C2: every repeat of a case is scored and kept in the run file ``check`` reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanguard.exceptions import CaseFormatError
from spanguard_processor.regression.case import Case, Evidence
from spanguard_processor.regression.gate.runfile import load_run, run_file
from spanguard_processor.regression.run.outputs import Outputs
from spanguard_processor.regression.run.repeats import AppFailure, Repeat
from spanguard_processor.regression.run.run import load_cases, run_cases, score_repeats
from spanguard_processor.traces.model import ProcessTrace, ToolCall

#: A case in contract C1's shape: one stable property (also an assertion), one rate.
CASE = {
    "id": "case-loan",
    "input": "approve a loan of 5000?",
    "checks": [{"type": "not_fallback"}],
    "trace_checks": [{"type": "tools_include", "value": ["credit_bureau"]}],
    "properties": [
        {"check": {"type": "escalated", "value": False}, "held": 23, "of": 24, "stable": False},
        {
            "check": {"type": "tools_include", "value": ["credit_bureau"]},
            "held": 24,
            "of": 24,
            "stable": True,
        },
    ],
}


def _run(tools: tuple[str, ...], escalated: bool, latency: float) -> Evidence:
    process = ProcessTrace(tool_calls=tuple(ToolCall(t) for t in tools), escalated=escalated)
    return Evidence("approved, rate 5%", process, latency, 0.002)


def test_score_repeats_keeps_every_repeat_and_its_properties(tmp_path: Path) -> None:
    case = Case.from_dict(CASE)
    assert [p.stable for p in case.properties] == [False, True]
    runs = [
        _run(("credit_bureau",), False, 100.0),
        AppFailure.of(TimeoutError("upstream timed out")),
        _run(("credit_bureau",), True, 120.0),
        _run((), False, 90.0),
    ]
    result = score_repeats([case], {"case-loan": runs})
    repeats = result.repeats["case-loan"]
    assert [r.outcome for r in repeats] == ["pass", "error", "pass", "fail"]
    assert [r.properties for r in repeats] == [
        (True, True),
        (),
        (False, True),
        (True, False),
    ]
    assert repeats[1].error == AppFailure("TimeoutError", "upstream timed out")
    assert repeats[3].failed_checks == ("tools_include",)
    assert [r.tool_count for r in repeats] == [1, None, 1, 0]
    assert result.app_errors == 1
    # The first run that did not raise gives the case's outcome (trace2eval's metrics).
    assert result.case_results == {"case-loan": "pass"}
    path = tmp_path / "run.json"
    path.write_text(result.to_json(), encoding="utf-8")
    back = load_run(path)
    assert back.repeats["case-loan"] == repeats
    assert back.properties["case-loan"] == case.properties


def test_a_case_without_any_successful_call_is_missing() -> None:
    case = Case.from_dict(CASE)
    result = score_repeats([case], {"case-loan": [AppFailure("ValueError", "bad")]})
    assert result.case_results == {"case-loan": "missing"}
    assert result.metrics.missing == 1
    assert [r.outcome for r in result.repeats["case-loan"]] == ["error"]


def test_recorded_requests_matching_one_case_are_its_repeats() -> None:
    case = Case.from_dict(
        {**CASE, "source_trace_id": "t1", "duplicate_trace_ids": ["t2", "t3"], "input": "q"}
    )
    outputs = Outputs()
    for key, tools in (("t1", ["credit_bureau"]), ("t2", []), ("t3", ["credit_bureau"])):
        trace = {"tool_calls": [{"name": t} for t in tools]}
        outputs.add(key, {"output": "approved", "trace": trace})
    outputs.add("other", {"output": "unrelated", "input": "something else"})
    result = run_cases([case], outputs)
    assert [r.outcome for r in result.repeats["case-loan"]] == ["pass", "fail", "pass"]
    # The metrics stay trace2eval's: the case is scored on the record its source id finds.
    assert result.metrics.passed == 1


def test_an_old_run_file_without_repeats_still_loads(tmp_path: Path) -> None:
    case = Case.from_dict(CASE)
    payload = json.loads(score_repeats([case], {"case-loan": [_run((), False, 1.0)]}).to_json())
    del payload["repeats"], payload["properties"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    assert load_run(path).repeats == {}


def test_bad_properties_name_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "properties": [{"held": 1}]}) + "\n", encoding="utf-8")
    with pytest.raises(CaseFormatError) as info:
        load_cases(path)
    assert "cases.jsonl:1: field 'properties'" in str(info.value)


def test_repeat_round_trips() -> None:
    repeat = Repeat("pass", (), (True, None), 1.5, None, 2, 3, ("a", "b"), False, None)
    assert Repeat.from_dict(json.loads(json.dumps(repeat.to_dict()))) == repeat


def test_run_file_in_memory_equals_the_file_read_back(tmp_path: Path) -> None:
    case = Case.from_dict(CASE)
    result = score_repeats([case], {"case-loan": [_run(("credit_bureau",), False, 5.0)] * 2})
    path = tmp_path / "run.json"
    path.write_text(result.to_json(), encoding="utf-8")
    read = load_run(path)
    assert run_file(result, read.path) == read
