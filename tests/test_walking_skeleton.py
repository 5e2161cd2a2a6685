"""End to end in one process: SDK spans → assembly → agent trace → both compatible formats."""

from __future__ import annotations

import json
from pathlib import Path

from fairtrace.traces import TraceValidator
from trace2eval.schema import load_traces

import spanguard
from spanguard.testing import capture_spans
from spanguard_processor.traces.convert import traces_from_readable_spans
from spanguard_processor.traces.formats import to_fairtrace_record, to_trace2eval_row


@spanguard.tool
def kb_search(query: str) -> str:
    return f"policy for {query}"


def test_request_and_tool_spans_become_one_trace_a_record_and_a_row(tmp_path: Path) -> None:
    identity = {"seed_id": "refund", "variant_id": "refund::2", "assignments": {"gender": "woman"}}
    with (
        capture_spans(capture_content=True) as capture,
        spanguard.request("support", input="Can I get a refund?", **identity) as req,
    ):
        kb_search("refunds")
        spanguard.escalate(reason="identity check")
        req.set_output("A colleague will call you.")
    (trace,) = traces_from_readable_spans(capture.readable_spans())

    assert (trace.seed_id, trace.variant_id, dict(trace.assignments)) == (
        "refund",
        "refund::2",
        {"gender": "woman"},
    )
    assert [t.name for t in trace.trace.tool_calls] == ["kb_search"]
    assert trace.trace.escalated and trace.trace.escalation_reason == "identity check"
    assert trace.input == "Can I get a refund?" and not trace.partial

    record = to_fairtrace_record(trace)
    TraceValidator().validate(record["response_metadata"])
    assert record["response_metadata"]["trace"]["tool_calls"] == [{"name": "kb_search"}]

    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(to_trace2eval_row(trace)) + "\n", encoding="utf-8")
    loaded = load_traces(log)
    assert loaded.skipped == [] and loaded.traces[0].output == "A colleague will call you."
