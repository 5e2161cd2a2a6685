"""Spans → agent traces: spanguard's own spans, and the foreign conventions."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard import semconv as sc
from spanguard_processor.ingest.spans import SpanEvent, SpanRecord
from spanguard_processor.traces.convert import (
    trace_from_records,
    traces_from_readable_spans,
    traces_from_records,
)
from spanguard_processor.traces.model import AgentTrace, RetrievedDocument, ToolCall
from tests.agent_app import annotate, documents, in_memory_spans, run_request

TRACE = "ab" * 16


def span(
    span_id: str,
    parent: str = "",
    *,
    name: str = "s",
    start: int = 10,
    end: int = 20,
    attrs: dict[str, object] | None = None,
    events: tuple[SpanEvent, ...] = (),
    trace_id: str = TRACE,
) -> SpanRecord:
    return SpanRecord(
        trace_id,
        span_id * 8 if len(span_id) == 2 else span_id,
        parent,
        name,
        start,
        end,
        attrs or {},
        events,
    )  # type: ignore[arg-type]


def test_sdk_spans_become_one_agent_trace_per_request() -> None:
    traces = traces_from_readable_spans(in_memory_spans(4).get_finished_spans())
    assert [t.request_id for t in traces] == ["req-0000", "req-0001", "req-0002", "req-0003"]
    first = traces[0]
    assert first.seed_id == "seed-0" and first.variant_id == "seed-0::0"
    assert first.assignments == {"gender": "woman"}
    assert first.input == "Question number 0: how do I reset my password?"
    assert first.output == "Answer 0: use the reset link."
    assert first.metadata == {"helpfulness_score": 0.5}
    assert first.trace.tool_calls == (ToolCall("kb_search"),)
    assert first.trace.retrieved_documents == tuple(
        RetrievedDocument(d["id"], d["group"], d["rank"], d["score"])  # type: ignore[arg-type]
        for d in documents(0)
    )
    assert first.trace.plan_steps == ("search", "answer")
    assert first.trace.escalated and first.trace.escalation_reason == "needs a human"
    assert first.trace.friction_points == ("extra identity check",)
    assert first.cost_usd == 0.001  # summed from the chat span; the root has none
    assert first.latency_ms is not None and first.latency_ms > 0
    assert first.partial is False
    assert first.source == ("gen_ai", "openinference", "spanguard")
    assert traces[1].trace.escalated is False and traces[1].trace.friction_points == ()
    # the output validates against the strict model
    assert AgentTrace.from_dict(first.to_dict()) == first


def test_content_capture_off_leaves_text_none() -> None:
    traces = traces_from_readable_spans(in_memory_spans(1, content=False).get_finished_spans())
    assert traces[0].input is None and traces[0].output is None


def test_annotation_span_merges_into_its_request_by_request_id() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    request_id = run_request(tracer, 7)
    annotate(
        tracer,
        request_id,
        **{
            sc.FEEDBACK: "thumbs_down",
            sc.RETRIED: True,
            sc.expect_key("min_chars"): 10,
            sc.expect_key("contains"): ("reset",),
            sc.expect_key("custom"): json.dumps({"k": 1}),
        },
    )
    annotate(tracer, "req-unknown", **{sc.FEEDBACK: 1})
    traces = traces_from_readable_spans(exporter.get_finished_spans())
    assert len(traces) == 1
    (trace,) = traces
    assert trace.feedback == "thumbs_down" and trace.retried is True
    assert trace.expect == {"contains": ["reset"], "custom": {"k": 1}, "min_chars": 10}


def test_root_prefers_the_agent_span_among_parentless_spans() -> None:
    spans = [
        span("01", name="early", start=1),
        span(
            "02",
            name="invoke_agent a",
            start=5,
            attrs={sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.REQUEST_ID: "r"},
        ),
    ]
    assert trace_from_records(spans).request_id == "r"


def test_trace_without_a_parentless_span_is_partial() -> None:
    trace = trace_from_records([span("01", parent="ff" * 8)])
    assert trace.partial is True


def test_root_cost_wins_over_the_sum_of_spans() -> None:
    spans = [
        span("01", attrs={sc.COST_USD: 0.5}),
        span("02", parent="01" * 8, attrs={sc.COST_USD: 0.1}),
        span("03", parent="01" * 8, attrs={sc.LLM_COST_TOTAL: 0.2}),
    ]
    assert trace_from_records(spans).cost_usd == 0.5
    assert trace_from_records([*spans[1:], span("01")]).cost_usd is not None
    assert abs(trace_from_records([span("01"), *spans[1:]]).cost_usd - 0.3) < 1e-12  # type: ignore[operator]


def test_gen_ai_documents_as_a_structured_value() -> None:
    structured = (
        {"id": "b", "group": "g2", "rank": 2, "score": 0.1},
        {"id": "a", "group": "g1", "rank": 1, "score": 0.9},
    )
    spans = [
        span("01"),
        span(
            "02",
            parent="01" * 8,
            attrs={
                sc.GEN_AI_OPERATION_NAME: sc.OP_RETRIEVAL,
                sc.GEN_AI_RETRIEVAL_DOCUMENTS: structured,
            },
        ),
    ]
    docs = trace_from_records(spans).trace.retrieved_documents
    assert docs == (RetrievedDocument("a", "g1", 1, 0.9), RetrievedDocument("b", "g2", 2, 0.1))


def test_openinference_retriever_without_metadata_ranks_by_position() -> None:
    spans = [
        span("01", attrs={sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT}),
        span(
            "02",
            parent="01" * 8,
            attrs={
                sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_RETRIEVER,
                "retrieval.documents.0.document.id": "x",
                "retrieval.documents.0.document.score": 2,
                "retrieval.documents.1.document.id": "y",
            },
        ),
        span(
            "03",
            parent="01" * 8,
            start=30,
            attrs={sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL, sc.TOOL_NAME: "lookup"},
        ),
    ]
    trace = trace_from_records(spans)
    assert trace.trace.retrieved_documents == (
        RetrievedDocument("x", None, 1, 2.0),
        RetrievedDocument("y", None, 2, None),
    )
    assert trace.trace.tool_calls == (ToolCall("lookup"),)
    assert trace.source == ("openinference",)


def test_openllmetry_workflow_and_tools() -> None:
    spans = [
        span(
            "01",
            name="support.workflow",
            attrs={
                sc.TRACELOOP_SPAN_KIND: sc.TRACELOOP_KIND_WORKFLOW,
                sc.TRACELOOP_ENTITY_INPUT: '{"q": "hi"}',
                sc.TRACELOOP_ENTITY_OUTPUT: '"hello"',
            },
        ),
        span(
            "02",
            parent="01" * 8,
            start=12,
            name="lookup.tool",
            attrs={
                sc.TRACELOOP_SPAN_KIND: sc.TRACELOOP_KIND_TOOL,
                sc.TRACELOOP_ENTITY_NAME: "lookup",
            },
        ),
        span(
            "03",
            parent="01" * 8,
            start=11,
            name="search.tool",
            attrs={
                sc.TRACELOOP_SPAN_KIND: sc.TRACELOOP_KIND_TOOL,
                sc.TRACELOOP_ENTITY_NAME: "search",
            },
        ),
    ]
    trace = trace_from_records(spans)
    assert trace.trace.tool_calls == (ToolCall("search"), ToolCall("lookup"))
    # the question and the answer as text, not the JSON they were wrapped in (issue #16)
    assert (trace.input, trace.input_source) == ("hi", "traceloop.entity.input:value")
    assert (trace.output, trace.output_source) == ("hello", "traceloop.entity.output:json")
    assert trace.source == ("openllmetry",)


def test_re_delivered_span_counts_once_and_traces_are_grouped() -> None:
    tool = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: "t"}
    other = "cd" * 16
    spans = [
        span("01"),
        span("02", parent="01" * 8, attrs=tool),
        span("02", parent="01" * 8, attrs=tool),
        span("01", trace_id=other, start=5),
    ]
    traces = traces_from_records(spans)
    assert [t.trace_id for t in traces] == [other, TRACE]
    assert traces[1].trace.tool_calls == (ToolCall("t"),)
