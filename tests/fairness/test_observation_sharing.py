"""Observations keep one instance of each distinct value (issue 50: read from a store, each
observation held its own copies of its usage totals, metadata, process trace and assignments,
5 KB a record)."""

from __future__ import annotations

from dataclasses import replace

from spanguard_processor.fairness.design.suite import parse_suite
from spanguard_processor.fairness.pipeline import match_to_suite
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, RetrievedDocument


def _trace(index: int, score: float = 0.5, flag: object = 1) -> AgentTrace:
    return AgentTrace(
        trace_id=f"{index:032x}",
        seed_id=f"s{index // 2}",
        variant_id=f"s{index // 2}::{1 + index % 2}",
        assignments={"g": "ab"[index % 2]},
        input="".join(["how do I ", "reset it?"]),  # a new string object each time
        output="".join(["use the ", "link"]),
        metadata={"score": score, "flag": flag},
        trace=ProcessTrace(
            retrieved_documents=(RetrievedDocument("d", "news", 1, score),), escalated=True
        ),
    )


def test_equal_values_are_one_instance_and_unequal_json_is_not() -> None:
    a, b = observation_from_trace(_trace(0)), observation_from_trace(_trace(2))
    assert a.metadata is b.metadata and a.trace is b.trace and a.usage is b.usage
    assert a.assignments is b.assignments
    assert a.prompt is b.prompt and a.response is b.response
    for other in (_trace(4, flag=True), _trace(4, flag=1.0)):  # equal in Python, not in JSON
        assert observation_from_trace(other).metadata is not a.metadata
    negative = observation_from_trace(_trace(6, score=-0.0))
    zero = observation_from_trace(_trace(8, score=0.0))
    assert negative.trace is not zero.trace and negative.metadata is not zero.metadata
    assert negative.record()["response_metadata"]["score"] == 0.0
    assert str(negative.metadata["score"]) == "-0.0"


def test_matched_records_of_a_variant_share_its_assignments() -> None:
    suite = parse_suite(
        {
            "dataset": {
                "prompts": [{"id": "s0", "prompt": "{g}", "attributes": {"g": ["a", "b"]}}]
            },
            "metrics": [{"type": "escalation_parity", "threshold": 0.1}],
        }
    )
    first = _trace(0)
    again = replace(first, repeat=1, trace_id="f" * 32)
    matched = match_to_suite(suite, [observation_from_trace(t) for t in (first, again)])
    a, b = matched.observations
    assert a.variant_id == b.variant_id == "s0::1" and a.id != b.id
    assert a.assignments is b.assignments and a.assignments == {"g": "a"}
