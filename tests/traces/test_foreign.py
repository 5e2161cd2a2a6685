"""Spans from a real OpenInference instrumentation become tool calls and retrieved documents."""

from __future__ import annotations

from pathlib import Path

from openinference.instrumentation import OITracer, TraceConfig, get_retriever_attributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.ingest.otlp_proto import decode_request
from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore
from spanguard_processor.traces.convert import traces_from_readable_spans
from spanguard_processor.traces.model import RetrievedDocument, ToolCall


def openinference_agent_spans() -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OITracer(provider.get_tracer("oi-app"), config=TraceConfig())

    @tracer.tool
    def lookup_order(order_id: str) -> str:
        return f"order {order_id} shipped"

    @tracer.tool(name="refund")
    def refund(order_id: str) -> str:
        return "refunded"

    def retrieve(query: str) -> list[str]:
        with tracer.start_as_current_span("retrieve", openinference_span_kind="retriever") as span:
            span.set_attributes(
                get_retriever_attributes(
                    documents=[
                        {
                            "id": "faq-2",
                            "score": 0.4,
                            "content": "returns",
                            "metadata": {"group": "faq", "rank": 2},
                        },
                        {
                            "id": "faq-1",
                            "score": 0.8,
                            "content": "shipping",
                            "metadata": {"group": "faq", "rank": 1},
                        },
                        {"id": 17, "score": 0.1, "content": "untagged"},
                    ]
                )
            )
        return ["faq-1", "faq-2"]

    @tracer.agent
    def support_agent(question: str) -> str:
        retrieve(question)
        lookup_order("A1")
        refund("A1")
        return "done"

    support_agent("Where is my order?")
    provider.shutdown()
    return exporter


def test_openinference_tools_and_retriever_documents_are_recognised() -> None:
    (trace,) = traces_from_readable_spans(openinference_agent_spans().get_finished_spans())
    assert trace.trace.tool_calls == (ToolCall("lookup_order"), ToolCall("refund"))
    assert trace.trace.retrieved_documents == (
        RetrievedDocument("faq-1", "faq", 1, 0.8),
        RetrievedDocument("faq-2", "faq", 2, 0.4),
        RetrievedDocument("17", None, 3, 0.1),
    )
    assert trace.input is not None and "Where is my order?" in trace.input
    assert trace.output == "done"
    assert "openinference" in trace.source and "spanguard" not in trace.source
    assert trace.partial is False


def test_openinference_spans_through_otlp_and_the_store_convert_the_same(tmp_path: Path) -> None:
    spans = openinference_agent_spans().get_finished_spans()
    (direct,) = traces_from_readable_spans(spans)
    with SpanStore(tmp_path / "s.db") as store:
        store.put_batches([decode_request(encode_spans(spans))])
        store.release_all()
        (stored,) = stored_agent_traces(store)
    assert stored == direct


def test_openinference_metadata_carries_the_counterfactual_identity() -> None:
    from openinference.instrumentation import using_metadata

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OITracer(provider.get_tracer("oi-app"), config=TraceConfig())

    @tracer.agent
    def support_agent(question: str) -> str:
        return "done"

    identity = {
        "seed_id": "loan",
        "variant_id": "loan::3",
        "repeat": 1,
        "assignments": {"gender": "woman", "age": "60"},
    }
    with using_metadata(identity):
        support_agent("Can I get a loan?")
    support_agent("No identity here")
    provider.shutdown()
    with_identity, without = sorted(
        traces_from_readable_spans(exporter.get_finished_spans()), key=lambda t: t.seed_id is None
    )
    assert (with_identity.seed_id, with_identity.variant_id, with_identity.repeat) == (
        "loan",
        "loan::3",
        1,
    )
    assert dict(with_identity.assignments) == {"age": "60", "gender": "woman"}
    assert (without.seed_id, without.variant_id, dict(without.assignments)) == (None, None, {})
