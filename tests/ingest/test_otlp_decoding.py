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
from tests.agent_app import in_memory_spans


def otlp_json(request: object) -> dict[str, object]:
    """Protobuf's canonical JSON, with ids turned into OTLP-JSON's hex (as collectors write)."""

    def fix(node: object) -> object:
        if isinstance(node, dict):
            return {
                k: base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId")
                else fix(v)
                for k, v in node.items()
            }
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
    base = {
        "traceId": "AB" * 16,
        "spanId": "cd" * 8,
        "name": "s",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": 2,
    }
    base.update(span)
    return {"resourceSpans": [{"scopeSpans": [{"spans": [base]}]}]}


def test_uppercase_hex_ids_are_normalised() -> None:
    (span,) = decode_document(_doc()).spans
    assert span.trace_id == "ab" * 16 and span.start_ns == 1


@pytest.mark.parametrize(
    ("span", "field"),
    [
        (
            {"startTimeUnixNano": "soon"},
            "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano",
        ),
        ({"name": 5}, "resourceSpans[0].scopeSpans[0].spans[0].name"),
    ],
)
def test_malformed_fields_are_named(span: dict[str, object], field: str) -> None:
    with pytest.raises(TraceFormatError) as caught:
        decode_document(_doc(**span))
    assert caught.value.field == field


@pytest.mark.parametrize(
    "ids",
    [
        {"traceId": "00" * 16},
        {"spanId": "xyz"},
        {"spanId": None},
        {"parentSpanId": "12"},
        {"traceId": base64.b64encode(bytes(range(16))).decode()},  # base64, not hex
    ],
)
def test_bad_ids_are_rejected_not_guessed(ids: dict[str, object]) -> None:
    batch = decode_document(_doc(**ids))
    assert batch.rejected == 1 and not batch.spans and batch.error
