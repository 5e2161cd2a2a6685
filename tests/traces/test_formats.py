"""Converted records must be accepted, unchanged, by the real fairtrace and trace2eval."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fairtrace.traces import TraceValidator, normalize_metadata
from trace2eval.schema import load_traces

from spanguard.exceptions import TraceFormatError
from spanguard_processor.traces.formats import (
    from_fairtrace_record,
    to_fairtrace_record,
    to_trace2eval_row,
)
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, RetrievedDocument

from .test_model import full_trace


def test_fairtrace_record_passes_the_real_trace_validation_unchanged() -> None:
    record = to_fairtrace_record(full_trace())
    metadata = record["response_metadata"]
    TraceValidator().validate(metadata)
    trace = metadata["trace"]
    assert trace["tool_calls"] == [{"name": "kb_search"}, {"name": "credit_check"}]
    assert trace["escalated"] is True
    assert trace["escalation_reason"] == "identity check"
    normalized = normalize_metadata(metadata)["trace"]
    assert normalized["retrieved_documents"] == [{"group": "policy", "rank": 1}]
    assert metadata["helpfulness_score"] == 0.7
    assert record["id"] == "loan::2" and record["seed_id"] == "loan"
    assert record["assignments"] == {"age": "60", "gender": "woman"}


def test_fairtrace_record_round_trips() -> None:
    trace = full_trace()
    assert from_fairtrace_record(to_fairtrace_record(trace)) == trace


def test_content_free_trace_round_trips_with_none_text() -> None:
    trace = replace(full_trace(), input=None, output=None, seed_id=None)
    record = to_fairtrace_record(trace)
    assert record["prompt"] == "" and record["response"] == ""
    assert from_fairtrace_record(record) == trace


def test_ungrouped_documents_stay_out_of_fairtrace_trace_but_round_trip() -> None:
    process = ProcessTrace(
        retrieved_documents=(
            RetrievedDocument("d1", None, 1, 0.5),
            RetrievedDocument("d2", "news", 2, None),
        )
    )
    trace = replace(full_trace(), trace=process)
    record = to_fairtrace_record(trace)
    TraceValidator().validate(record["response_metadata"])
    assert [d["id"] for d in record["response_metadata"]["trace"]["retrieved_documents"]] == ["d2"]
    assert from_fairtrace_record(record) == trace


def test_from_fairtrace_record_rejects_foreign_records() -> None:
    with pytest.raises(TraceFormatError, match=r"response_metadata\.spanguard"):
        from_fairtrace_record({"id": "x", "response_metadata": {}})


def test_trace2eval_rows_load_in_the_real_trace2eval_without_skips(tmp_path: Path) -> None:
    traces = [
        full_trace(),
        replace(
            full_trace(),
            trace_id="b" * 32,
            request_id=None,
            output=None,
            feedback=None,
            latency_ms=None,
            cost_usd=None,
            retried=False,
            expect=None,
        ),
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(to_trace2eval_row(t)) + "\n" for t in traces))
    loaded = load_traces(log)
    assert loaded.skipped == []
    first, second = loaded.traces
    assert (first.id, first.input, first.output) == ("req-1", "Can I get a loan?", "Let me check.")
    assert first.latency_ms == 812.5 and first.cost_usd == 0.0031
    assert (
        first.is_negative
        and first.retried
        and first.expect == {"min_chars": 5, "contains": ["loan"]}
    )
    assert (second.id, second.output, second.expect) == ("b" * 32, "", None)


def test_trace2eval_build_accepts_converted_rows(tmp_path: Path) -> None:
    rows = [
        to_trace2eval_row(replace(full_trace(), trace_id=f"{i:032x}", request_id=f"r{i}"))
        for i in range(3)
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    result = subprocess.run(
        [sys.executable, "-m", "trace2eval", "build", str(log), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "skipped" not in (result.stdout + result.stderr).lower()
        or "0 skipped" in (result.stdout + result.stderr).lower()
    )
    assert (tmp_path / "out" / "cases.jsonl").exists()


def test_trace2eval_row_needs_input_text() -> None:
    with pytest.raises(TraceFormatError, match="content capture on") as info:
        to_trace2eval_row(replace(full_trace(), input=None))
    assert info.value.field == "input"


def test_agent_trace_without_input_round_trips_as_dict() -> None:
    trace = AgentTrace(trace_id="c" * 32)
    assert AgentTrace.from_dict(json.loads(json.dumps(trace.to_dict()))) == trace
