from __future__ import annotations

import math
from typing import Any

import pytest

from spanguard.exceptions import TraceFormatError
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, RetrievedDocument, ToolCall


def full_trace() -> AgentTrace:
    return AgentTrace(
        trace_id="0af7651916cd43dd8448eb211c80319c",
        request_id="req-1",
        seed_id="loan",
        variant_id="loan::2",
        assignments={"gender": "woman", "age": "60"},
        repeat=1,
        input="Can I get a loan?",
        output="Let me check.",
        latency_ms=812.5,
        cost_usd=0.0031,
        feedback="negative",
        retried=True,
        expect={"min_chars": 5, "contains": ["loan"]},
        metadata={"helpfulness_score": 0.7},
        trace=ProcessTrace(
            tool_calls=(ToolCall("kb_search"), ToolCall("credit_check")),
            retrieved_documents=(RetrievedDocument("doc-9", "policy", 1, 0.93),),
            plan_steps=("look up policy", "answer"),
            escalated=True,
            escalation_reason="identity check",
            friction_points=("extra id",),
        ),
        partial=False,
        source=("spanguard",),
    )


def test_round_trip_is_exact() -> None:
    trace = full_trace()
    assert AgentTrace.from_dict(trace.to_dict()) == trace


def test_to_dict_key_order_is_fixed_and_assignments_sorted() -> None:
    data = full_trace().to_dict()
    assert list(data)[:4] == ["trace_id", "request_id", "seed_id", "variant_id"]
    assert list(data["assignments"]) == ["age", "gender"]


def test_minimal_trace_gets_defaults() -> None:
    trace = AgentTrace.from_dict({"trace_id": "abc"})
    assert trace.trace == ProcessTrace()
    assert trace.key == "abc"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({}, "trace_id", "is required and missing."),
        ({"trace_id": ""}, "trace_id", "must not be empty."),
        ({"trace_id": "a", "colour": 1}, "colour", "unknown field"),
        ({"trace_id": "a", "latency_ms": "fast"}, "latency_ms", "expected a number, got a string."),
        (
            {"trace_id": "a", "latency_ms": ""},
            "latency_ms",
            "expected a number, got an empty string.",
        ),
        ({"trace_id": "a", "trace": []}, "trace", "expected an object, got an empty list."),
        ({"trace_id": "a", "latency_ms": math.nan}, "latency_ms", "must be a finite number."),
        ({"trace_id": "a", "retried": 1}, "retried", "expected true or false"),
        ({"trace_id": "a", "assignments": {"g": 1}}, "assignments.g", "must be a string"),
        (
            {"trace_id": "a", "trace": {"tool_calls": ["kb"]}},
            "trace.tool_calls[0]",
            "expected an object, got a string.",
        ),
        (
            {"trace_id": "a", "trace": {"tool_calls": [{"name": " "}]}},
            "trace.tool_calls[0].name",
            "must not be empty.",
        ),
        (
            {"trace_id": "a", "trace": {"retrieved_documents": [{"group": "x", "rank": 0}]}},
            "trace.retrieved_documents[0].rank",
            "expected a positive integer, got the number 0.",
        ),
        (
            {"trace_id": "a", "trace": {"retrieved_documents": [{"group": "x", "rank": True}]}},
            "trace.retrieved_documents[0].rank",
            "expected a positive integer, got a boolean.",
        ),
        (
            {"trace_id": "a", "trace": {"plan_steps": [1]}},
            "trace.plan_steps[0]",
            "expected a string",
        ),
        ({"trace_id": "a", "trace": {"escalated": "yes"}}, "trace.escalated", "true or false"),
        ({"trace_id": "a", "feedback": [1]}, "feedback", "expected a string, number"),
    ],
)
def test_invalid_traces_name_the_field(data: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(TraceFormatError) as info:
        AgentTrace.from_dict(data)
    assert info.value.field == field
    assert message in str(info.value)
    assert str(info.value).startswith(f"field '{field}': ")
