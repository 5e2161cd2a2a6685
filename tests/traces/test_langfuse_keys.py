"""Langfuse's keys read as what they stand for, with the real Langfuse SDK in process (issue 40):
observation types (agent, tool, retriever, event), metadata and trace metadata."""

from __future__ import annotations

import json

from langfuse import Langfuse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.traces.convert import traces_from_readable_spans


def test_langfuse_retriever_event_and_metadata_are_read() -> None:
    exporter = InMemorySpanExporter()
    client = Langfuse(
        public_key="pk-lf-keys",
        secret_key="sk-lf-keys",
        base_url="http://127.0.0.1:9",
        tracer_provider=TracerProvider(),
        span_exporter=exporter,
    )
    with client.start_as_current_observation(
        as_type="agent",
        name="support turn",
        input="Where is my order?",
        metadata={"helpfulness_score": 0.8},
    ) as root:
        with client.start_as_current_observation(as_type="retriever", name="kb") as kb:
            kb.update(output=[{"id": "d1", "group": "orders", "rank": 1}])
        client.create_event(name="escalation", metadata={"reason": "angry customer"})
        client.create_event(name="page view")
        root.update(output="It ships tomorrow.")
    client.flush()
    client.shutdown()
    (trace,) = traces_from_readable_spans(exporter.get_finished_spans())
    assert (trace.input, trace.output) == ("Where is my order?", "It ships tomorrow.")
    assert [(d.id, d.group, d.rank) for d in trace.trace.retrieved_documents] == [
        ("d1", "orders", 1)
    ]
    assert trace.trace.escalated
    assert trace.trace.escalation_reason == "angry customer"
    assert trace.metadata == {"helpfulness_score": 0.8}
    # an event that names none of spanguard's signals stays noted, not read
    assert [(n.key, n.span) for n in trace.unread] == [
        ("langfuse.observation.type=event", "page view")
    ]
    assert json.loads(json.dumps(trace.to_dict()))["source"] == ["langfuse"]
