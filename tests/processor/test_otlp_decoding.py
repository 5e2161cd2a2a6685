"""OTLP protobuf and OTLP-JSON decode to the same records; hex ids are read as hex."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from spanguard.exceptions import TraceFormatError
from spanguard_processor.ingest.batches import decode_batch
from spanguard_processor.ingest.otlp_json import decode_document
from spanguard_processor.ingest.otlp_proto import decode_request

from .agent_app import in_memory_spans


def otlp_json(request: object) -> dict[str, object]:
    """Protobuf's canonical JSON, with ids turned into OTLP-JSON's hex (as collectors write)."""
    def fix(node: object) -> object:
        if isinstance(node, dict):
            return {k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId")
                    else fix(v) for k, v in node.items()}
        if isinstance(node, list):
            return [fix(v) for v in node]
        return node
    return fix(MessageToDict(request))  # type: ignore[arg-type, return-value]


def test_json_and_protobuf_give_identical_records() -> None:
    spans = in_memory_spans(2).get_finished_spans()
    request = encode_spans(spans)
    proto = decode_request(request)
    doc = otlp_json(request)
    from_json = decode_document(doc, json.dumps(doc).encode())
    assert [s for s in proto.spans] == [s for s in from_json.spans]
    proto_at = decode_batch(proto.fmt, proto.body)
    json_at = decode_batch(from_json.fmt, from_json.body)
    for span in proto.spans:
        assert proto_at(span.position) == json_at(span.position)
    expected = {format(s.get_span_context().span_id, "016x") for s in spans}  # type: ignore[union-attr]
    assert {s.span_id for s in proto.spans} == expected


def _doc(**span: object) -> dict[str, object]:
    base = {"traceId": "AB" * 16, "spanId": "cd" * 8, "name": "s",
            "startTimeUnixNano": "1", "endTimeUnixNano": 2}
    base.update(span)
    return {"resourceSpans": [{"scopeSpans": [{"spans": [base]}]}]}


def test_uppercase_hex_ids_are_normalised() -> None:
    (span,) = decode_document(_doc()).spans
    assert span.trace_id == "ab" * 16 and span.start_ns == 1


@pytest.mark.parametrize(("span", "field"), [
    ({"startTimeUnixNano": "soon"}, "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano"),
    ({"name": 5}, "resourceSpans[0].scopeSpans[0].spans[0].name"),
])
def test_malformed_fields_are_named(span: dict[str, object], field: str) -> None:
    with pytest.raises(TraceFormatError) as caught:
        decode_document(_doc(**span))
    assert caught.value.field == field


@pytest.mark.parametrize("ids", [
    {"traceId": "00" * 16}, {"spanId": "xyz"}, {"spanId": None}, {"parentSpanId": "12"},
    {"traceId": base64.b64encode(bytes(range(16))).decode()},  # base64, not hex
])
def test_bad_ids_are_rejected_not_guessed(ids: dict[str, object]) -> None:
    batch = decode_document(_doc(**ids))
    assert batch.rejected == 1 and not batch.spans and batch.error


def test_grouping_skips_span_names_only_when_no_annotation_can_be_in_the_body() -> None:
    """group_request reads span names only if the annotation name occurs in the body; the
    groups (annotation counts included) are the same as reading every name."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from spanguard import semconv
    from spanguard_processor.ingest.otlp_proto import group_request, parse_request

    recorded = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(recorded))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("agent"), \
            tracer.start_as_current_span(semconv.SPAN_ANNOTATION):
        pass
    exported = list(in_memory_spans(3).get_finished_spans())
    annotated = [*exported, *recorded.get_finished_spans()]
    for spans, notes in ((exported, 0), (annotated, 1)):
        body = encode_spans(spans).SerializeToString()
        request = parse_request(body)
        with_names = group_request(request, 128)
        assert group_request(request, 128, body) == with_names
        assert sum(group.annotations for group in with_names[0]) == notes
