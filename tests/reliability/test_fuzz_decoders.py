"""Fuzzing the OTLP decoders: any body either decodes or raises TraceFormatError, never crashes.

Accepted spans are also decoded back (the conversion path reads them later) and assembled into
an agent trace, so a body that slips through ingest cannot crash ``traces export`` afterwards.
Each test counts the inputs it tried (printed under "fuzz inputs tried") and checks the count.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanguard.exceptions import TraceFormatError
from spanguard_processor.ingest.batches import decode_batch
from spanguard_processor.ingest.otlp_columns import count_spans
from spanguard_processor.ingest.otlp_json import decode_document
from spanguard_processor.ingest.otlp_proto import decode_request, parse_request
from spanguard_processor.ingest.spans import DecodedBatch
from spanguard_processor.traces.convert import trace_from_records

from .corpus import TRIED, otlp_json_documents, otlp_requests
from .strategies import json_values, mutated_bytes, mutated_json

EXAMPLES = 250
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _convert(batch: DecodedBatch) -> None:
    """Decode and assemble what was accepted; only TraceFormatError may come out."""
    record = decode_batch(batch.fmt, batch.body)
    records = [record(span.position) for span in batch.spans]
    by_trace: dict[str, list[Any]] = {}
    for record in records:
        by_trace.setdefault(record.trace_id, []).append(record)
    for spans in by_trace.values():
        trace_from_records(spans, [], partial=False).to_dict()


def _proto(body: bytes) -> None:
    try:
        counted: int | None = count_spans(body, 1 << 30)
    except TraceFormatError as exc:
        assert str(exc)
        counted = None
    try:
        batch = decode_request(parse_request(body))
    except TraceFormatError as exc:
        assert str(exc)
        return
    # admission counts spans off the wire format: whatever parses is counted, and exactly
    assert counted == len(batch.spans) + batch.rejected, (counted, body)
    assert batch.rejected >= 0 and (batch.error is not None) == (batch.rejected > 0)
    _convert(batch)


def _json(document: Any) -> None:
    try:
        batch = decode_document(document)
    except TraceFormatError as exc:
        assert str(exc)
        return
    _convert(batch)


@FUZZ
@given(st.binary(max_size=512))
def test_random_bytes_never_crash_the_protobuf_decoder(body: bytes) -> None:
    TRIED["otlp protobuf: random bytes"] += 1
    _proto(body)


@FUZZ
@given(mutated_bytes(otlp_requests()))
def test_mutated_requests_never_crash_the_protobuf_decoder(body: bytes) -> None:
    TRIED["otlp protobuf: mutated requests"] += 1
    _proto(body)


@pytest.mark.slow
@FUZZ
@given(json_values)
def test_arbitrary_json_never_crashes_the_otlp_json_decoder(document: Any) -> None:
    TRIED["otlp json: arbitrary documents"] += 1
    _json(document)


@pytest.mark.slow
@FUZZ
@given(mutated_json(tuple(json.loads(d) for d in otlp_json_documents())))
def test_mutated_documents_never_crash_the_otlp_json_decoder(document: Any) -> None:
    TRIED["otlp json: mutated documents"] += 1
    _json(document)


@FUZZ
@given(mutated_bytes(tuple(d.encode() for d in otlp_json_documents())))
def test_mutated_json_text_never_crashes_the_http_json_path(body: bytes) -> None:
    TRIED["otlp json: mutated text"] += 1
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return
    _json(document)


@pytest.mark.slow  # it counts the examples of the slow fuzz tests above: it runs with them
def test_every_decoder_fuzz_test_tried_its_inputs() -> None:
    # Runs after the fuzz tests above (file order): each must have tried all its examples.
    names = [
        "otlp protobuf: random bytes",
        "otlp protobuf: mutated requests",
        "otlp json: arbitrary documents",
        "otlp json: mutated documents",
        "otlp json: mutated text",
    ]
    for name in names:
        assert TRIED[name] >= EXAMPLES * 0.9, (name, TRIED[name])
