"""A tiny agent instrumented with plain OpenTelemetry and the keys of ``docs/attributes.md``.

The processor's tests (and ``bench/``) use it to make requests' spans without the spanguard SDK,
so that they hold the processor to the contract rather than to the SDK's code: every span,
attribute and event here is what the contract says the SDK emits. Shared by several test
folders (tests/collector, tests/store, tests/ingest, tests/inputs, tests/traces,
tests/reliability), so it sits at the top of tests/.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from spanguard import semconv as sc

GROUPS = ("policy", "news", "forum")


def documents(index: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"doc-{index}-{rank}",
            "group": GROUPS[(index + rank) % 3],
            "rank": rank,
            "score": round(1.0 / rank, 3),
        }
        for rank in (1, 2)
    ]


def run_request(tracer: Tracer, index: int, *, content: bool = True) -> str:
    """One agent request: root, plan, retrieval, tool call, chat; returns its request id."""
    request_id = f"req-{index:04d}"
    seed = f"seed-{index // 2}"
    attributes: dict[str, object] = {
        sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT,
        sc.GEN_AI_AGENT_NAME: "support",
        sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_AGENT,
        sc.REQUEST_ID: request_id,
        sc.SEED_ID: seed,
        sc.VARIANT_ID: f"{seed}::{index % 2}",
        sc.assignment_key("gender"): ("woman", "man")[index % 2],
        sc.REPEAT: 0,
        sc.metadata_key("helpfulness_score"): 0.5,
    }
    if content:
        attributes[sc.INPUT_VALUE] = f"Question number {index}: how do I reset my password?"
    with tracer.start_as_current_span(
        sc.span_name(sc.OP_INVOKE_AGENT, "support"), attributes=attributes
    ) as root:  # type: ignore[arg-type]
        with tracer.start_as_current_span(
            sc.SPAN_PLAN, attributes={sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_CHAIN}
        ) as plan:
            plan.add_event(sc.EVENT_PLAN_STEP, {sc.PLAN_STEP: "search"})
            plan.add_event(sc.EVENT_PLAN_STEP, {sc.PLAN_STEP: "answer"})
        docs = documents(index)
        retrieval: dict[str, object] = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_RETRIEVAL,
            sc.GEN_AI_DATA_SOURCE_ID: "kb",
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_RETRIEVER,
            sc.GEN_AI_RETRIEVAL_DOCUMENTS: json.dumps(docs),
        }
        for i, doc in enumerate(docs):
            retrieval[sc.retrieval_document_key(i, sc.DOCUMENT_ID)] = doc["id"]
            retrieval[sc.retrieval_document_key(i, sc.DOCUMENT_SCORE)] = doc["score"]
            retrieval[sc.retrieval_document_key(i, sc.DOCUMENT_METADATA)] = json.dumps(
                {"group": doc["group"], "rank": doc["rank"]}
            )
        with tracer.start_as_current_span(
            sc.span_name(sc.OP_RETRIEVAL, "kb"), attributes=retrieval
        ):  # type: ignore[arg-type]
            pass
        tool = {
            sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL,
            sc.GEN_AI_TOOL_NAME: "kb_search",
            sc.GEN_AI_TOOL_CALL_ID: f"call-{index}",
            sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_TOOL,
            sc.TOOL_NAME: "kb_search",
        }
        with tracer.start_as_current_span(
            sc.span_name(sc.OP_EXECUTE_TOOL, "kb_search"), attributes=tool
        ):
            pass
        with tracer.start_as_current_span(
            sc.span_name(sc.OP_CHAT, "gpt-x"),
            attributes={
                sc.GEN_AI_OPERATION_NAME: sc.OP_CHAT,
                sc.GEN_AI_REQUEST_MODEL: "gpt-x",
                sc.COST_USD: 0.001,
                sc.OPENINFERENCE_SPAN_KIND: sc.OI_KIND_LLM,
            },
        ):
            pass
        if index % 3 == 0:
            root.add_event(sc.EVENT_FRICTION, {sc.FRICTION_POINT: "extra identity check"})
        if index % 5 == 0:
            root.add_event(sc.EVENT_ESCALATION, {sc.ESCALATION_REASON: "needs a human"})
        if content:
            root.set_attribute(sc.OUTPUT_VALUE, f"Answer {index}: use the reset link.")
    return request_id


def annotate(tracer: Tracer, request_id: str, **attributes: object) -> None:
    """A later ``spanguard.annotate`` span in its own trace."""
    from opentelemetry import context

    token = context.attach(context.Context())  # a fresh trace, not a child of anything
    try:
        with tracer.start_as_current_span(
            sc.SPAN_ANNOTATION, attributes={sc.REQUEST_ID: request_id, **attributes}
        ):  # type: ignore[dict-item]
            pass
    finally:
        context.detach(token)


SPANS_PER_REQUEST = 5


@contextmanager
def provider_with(exporter: SpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider
    finally:
        provider.shutdown()


def in_memory_spans(count: int, *, content: bool = True) -> InMemorySpanExporter:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test-agent")
    for index in range(count):
        run_request(tracer, index, content=content)
    return exporter


@dataclass(frozen=True)
class EncodedRequest:
    """One agent request as the OTel SDK's own OTLP exporter code serializes it."""

    body: bytes  # an ExportTraceServiceRequest
    span_ids: frozenset[tuple[str, str]]  # (trace id, span id) in hex, for every span in it


@cache
def encoded_requests(count: int) -> tuple[EncodedRequest, ...]:
    """``count`` agent requests (:func:`run_request`), one OTLP request each; built once."""
    exporter = InMemorySpanExporter()
    with provider_with(exporter) as provider:
        tracer = provider.get_tracer("test-agent")
        out = []
        for index in range(count):
            exporter.clear()
            run_request(tracer, index)
            spans = exporter.get_finished_spans()
            ids = frozenset(
                (format(s.context.trace_id, "032x"), format(s.context.span_id, "016x"))
                for s in spans
            )
            out.append(EncodedRequest(bytes(encode_spans(spans).SerializeToString()), ids))
    return tuple(out)
