"""Grouping from a request's bytes (``ingest/otlp_columns.py``) must answer exactly as reading
span by span does, or not at all: on requests as exporters write them it answers (else the
fast path would never run), and on hostile or unusual encodings — a field repeated (protobuf
lets the last one win), missing, moved, packed, or of another wire type; names of 2- and
3-byte lengths; bad or repeated ids; traces sharing their first 8 bytes; spans over the
attribute limit — the result of ``group_request`` is the one of the exact reading."""

from __future__ import annotations

import random

import pytest
from google.protobuf.message import DecodeError
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from spanguard import semconv
from spanguard_processor.ingest.otlp_columns import (
    COLUMNS_MIN_SPANS,
    group_frames,
    merged_span,
    span_frames,
)
from spanguard_processor.ingest.otlp_proto import group_request, parse_request
from tests.agent_app import in_memory_spans

LIMIT = 16
ANNOTATION = semconv.SPAN_ANNOTATION.encode()


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _request(frames: list[bytes]) -> bytes:
    """An ExportTraceServiceRequest of one resource and one scope holding these spans."""
    scope = _field(1, _field(1, b"scope")) + b"".join(_field(2, frame) for frame in frames)
    return _field(1, _field(1, b"") + _field(2, scope))


def _canonical_frames(requests: int = 48) -> list[bytes]:
    body = encode_spans(in_memory_spans(requests).get_finished_spans()).SerializeToString()
    return list(span_frames(body))


FRAMES = _canonical_frames()
RNG_IDS = random.Random(7)


def _exact(body: bytes) -> tuple:
    return group_request(parse_request(body), LIMIT)


def _fast(body: bytes) -> tuple:
    return group_request(parse_request(body), LIMIT, body)


def _other_id(size: int) -> bytes:
    return bytes(RNG_IDS.randrange(1, 256) for _ in range(size))


def _attributes(count: int, value: bytes = b"v") -> bytes:
    return b"".join(
        _field(9, KeyValue(key=f"k{i}", value={"bytes_value": value}).SerializeToString())
        for i in range(count)
    )


MUTATIONS = {
    "trace id repeated": lambda f: f + _field(1, _other_id(16)),
    "span id repeated": lambda f: f + _field(2, _other_id(8)),
    "parent repeated": lambda f: f + _field(4, _other_id(8)),
    "parent added at the end": lambda f: f + _field(4, _other_id(8)),
    # an earlier start than any: it must become the trace's start, or be ignored as protobuf does
    "start repeated": lambda f: f + b"\x39" + (1).to_bytes(8, "little"),
    "start packed": lambda f: f + _field(7, (1).to_bytes(8, "little")),
    "start as a varint": lambda f: f + b"\x38\x05",
    "trace id missing": lambda f: f[18:],
    "trace id moved to the end": lambda f: f[18:] + f[:18],
    "trace state": lambda f: f[:28] + _field(3, b"k=v") + f[28:],
    "empty parent field": lambda f: f + b"\x22\x00",
    "zero parent": lambda f: f[:28] + _field(4, bytes(8)) + f[28:],
    "zero trace id": lambda f: _field(1, bytes(16)) + f[18:],
    "zero span id": lambda f: f[:18] + _field(2, bytes(8)) + f[28:],
    "name of a 2-byte length": lambda f: f + _field(5, b"n" * 300),
    "many attributes": lambda f: f + _attributes(LIMIT + 1),
    "attributes at the limit": lambda f: f + _attributes(LIMIT),
    "many tag bytes, few attributes": lambda f: f + _attributes(2, b"J" * 400),
    "negative kind": lambda f: f + b"\x30" + _varint((1 << 64) - 1),
    "same trace as the first": lambda f: FRAMES[0][:18] + f[18:],
    "first 8 bytes of the first trace": lambda f: FRAMES[0][:10] + _other_id(8) + f[18:],
    "an annotation span": lambda f: _renamed(f, ANNOTATION),
    "a name like an annotation's": lambda f: _renamed(f, ANNOTATION[:8] + b"x" * 10),
    "a name ending like an annotation's": lambda f: _renamed(f, b"x" * 8 + ANNOTATION[8:]),
    "an annotation's name repeated at the end": lambda f: f + _field(5, ANNOTATION),
}


def _renamed(frame: bytes, name: bytes) -> bytes:
    """The span with its name replaced by ``name``: in place when it is laid out as exporters
    write it (a frame changed otherwise gets a second name field, which protobuf lets win)."""
    at = 38 if frame[28] == 0x22 else 28
    if frame[at] != 0x2A or frame[at + 1] >= 0x80:
        return frame + _field(5, name)
    return _prefixed(frame, name)


def _prefixed(frame: bytes, name: bytes) -> bytes:
    """The span with its name replaced by ``name`` (in place, canonical order kept)."""
    at = 38 if frame[28] == 0x22 else 28
    assert frame[at] == 0x2A
    size = frame[at + 1]
    assert size < 0x80
    return frame[:at] + _field(5, name) + frame[at + 2 + size :]


def test_requests_as_exporters_write_them_are_grouped_from_their_bytes() -> None:
    body = _request(FRAMES)
    assert len(FRAMES) >= COLUMNS_MIN_SPANS
    grouped = group_frames(span_frames(body), merged_span(body), LIMIT)
    assert grouped is not None
    assert grouped == _exact(body)[0]
    assert _fast(body) == _exact(body)


def test_spans_of_traces_apart_or_together_are_grouped_from_their_bytes() -> None:
    apart = FRAMES[0::2] + FRAMES[1::2]  # most traces split in two
    for frames in (FRAMES, apart, sorted(FRAMES, key=lambda frame: frame[2:18])):
        heads = [
            frame[2:18]
            for i, frame in enumerate(frames)
            if not i or frame[2:18] != frames[i - 1][2:18]
        ]
        assert (len(set(heads)) < len(heads)) == (frames is apart)
        body = _request(frames)
        grouped = group_frames(span_frames(body), merged_span(body), LIMIT)
        assert grouped is not None
        assert grouped == _exact(body)[0]


def test_annotation_spans_are_counted_and_their_name_elsewhere_is_no_annotation() -> None:
    noted = [
        _prefixed(frame, ANNOTATION) if i % 7 == 3 else frame for i, frame in enumerate(FRAMES)
    ]
    body = _request(noted)
    assert group_frames(span_frames(body), merged_span(body), LIMIT) is None  # left to
    exact = _exact(body)  # the exact reading, which counts them per trace
    assert sum(group.annotations for group in exact[0]) == len(FRAMES[3::7])
    assert _fast(body) == exact
    # the name as an attribute's value, or a name of its length and first bytes: no annotation
    valued = [
        frame
        + _field(
            9, KeyValue(key="k", value={"string_value": ANNOTATION.decode()}).SerializeToString()
        )
        for frame in FRAMES
    ]
    for frames in (valued, [_prefixed(frame, ANNOTATION[:-1] + b"x") for frame in FRAMES]):
        body = _request(frames)
        assert ANNOTATION[:8] in body
        grouped = group_frames(span_frames(body), merged_span(body), LIMIT)
        if frames is valued:
            assert grouped == _exact(body)[0]
        assert _fast(body) == _exact(body)


@pytest.mark.parametrize("name", [b"", b"n" * 200, b"n" * 20_000])
def test_names_of_every_length_are_read_past(name: bytes) -> None:
    frames = [_prefixed(frame, name) if i % 3 == 0 else frame for i, frame in enumerate(FRAMES)]
    body = _request(frames)
    assert group_frames(span_frames(body), merged_span(body), LIMIT) == _exact(body)[0]


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_span_encoded_otherwise_is_grouped_as_the_exact_reading_does(mutation: str) -> None:
    frames = list(FRAMES)
    frames[5] = MUTATIONS[mutation](frames[5])
    body = _request(frames)
    assert _fast(body) == _exact(body)


def test_a_span_sent_twice_is_kept_once() -> None:
    body = _request(FRAMES + FRAMES[3:4])
    assert _fast(body) == _exact(body)
    groups = _fast(body)[0]
    assert sum(len(group.span_ids) // 8 for group in groups) == len(FRAMES)


@pytest.mark.slow  # 150 random mixes, 3.6 s on a loaded run (load ~9)
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, len(FRAMES) - 1), st.sampled_from(sorted(MUTATIONS))), max_size=4
    ),
    st.permutations(range(len(FRAMES))),
)
def test_any_mix_of_encodings_is_grouped_as_the_exact_reading_does(
    changes: list[tuple[int, str]], order: list[int]
) -> None:
    frames = [FRAMES[i] for i in order]
    for index, mutation in changes:
        frames[index] = MUTATIONS[mutation](frames[index])
    body = _request(frames)
    try:
        ExportTraceServiceRequest.FromString(body)
    except DecodeError:  # e.g. a trace id cut twice: not a request any more
        assume(False)
    assert _fast(body) == _exact(body)
