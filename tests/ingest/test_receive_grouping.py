"""The receive path's grouping reads events and span names for a whole request at once (a
merged parse of its bytes) instead of span by span: it must decide exactly as the span-by-span
reading does — events over the attribute limit are still cut, long events with few attributes
are not mistaken for them, annotation spans are still counted."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard import semconv
from spanguard_processor.collector.limits import Limits, Shaper
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC
from spanguard_processor.ingest.otlp_proto import group_request, parse_request
from tests.agent_app import in_memory_spans

LIMIT = 40


def spans_with(
    event_attributes: int,
    value: str = "v",
    annotation: bool = False,
) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("grouping")
    with tracer.start_as_current_span("root") as root:
        with tracer.start_as_current_span("child") as child:
            attributes: dict[str, Any] = {f"e.{i:03d}": value for i in range(event_attributes)}
            child.add_event("exception", attributes)
        root.add_event("small", {"a": 1})
    if annotation:
        with tracer.start_as_current_span(semconv.SPAN_ANNOTATION):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


CASES = {
    "an event over the limit": spans_with(LIMIT + 10),
    "an event at the limit": spans_with(LIMIT),
    "a long event with few attributes (a stack trace)": spans_with(3, "x" * 5000),
    "a long event over the limit": spans_with(LIMIT + 1, "y" * 300),
    "an annotation span": spans_with(1, annotation=True),
    "an agent's requests": list(in_memory_spans(20).get_finished_spans()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_grouping_from_the_bytes_decides_as_reading_span_by_span(name: str) -> None:
    body = encode_spans(CASES[name]).SerializeToString()
    assert group_request(parse_request(body), LIMIT, body) == group_request(
        parse_request(body), LIMIT
    )


def test_an_event_over_the_limit_is_cut_and_a_long_one_within_it_is_stored_as_received() -> None:
    shaper = Shaper(Limits(max_attributes_per_span=LIMIT))
    over = encode_spans(CASES["an event over the limit"]).SerializeToString()
    batch = PROTOBUF_CODEC.decode(over, None, shaper.shaping)
    assert batch.body != over
    stored = ExportTraceServiceRequest.FromString(batch.body)
    (event,) = [
        event
        for rs in stored.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
        for event in span.events
        if event.name == "exception"
    ]
    assert (len(event.attributes), event.dropped_attributes_count) == (LIMIT, 10)
    long = encode_spans(
        CASES["a long event with few attributes (a stack trace)"]
    ).SerializeToString()
    assert PROTOBUF_CODEC.decode(long, None, shaper.shaping).body is long


def test_annotation_spans_are_counted() -> None:
    body = encode_spans(CASES["an annotation span"]).SerializeToString()
    groups, *_ = group_request(parse_request(body), LIMIT, body)
    assert sum(group.annotations for group in groups) == 1
