"""Fuzzing the running receivers: hostile bodies get 4xx (or gRPC INVALID_ARGUMENT) with a
message, never a 5xx or a hang, and afterwards the server still serves and the store exports.

Bodies are arbitrary bytes, mutated OTLP protobuf requests and mutated OTLP-JSON documents,
sent with assorted content types and encodings (gzip included), over HTTP and over gRPC.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore

from .corpus import TRIED, otlp_json_documents, otlp_requests
from .servers import EXPORT, PROTO, running
from .strategies import mutated_bytes, mutated_json

pytestmark = pytest.mark.integration

EXAMPLES = 200
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

bodies = (
    st.binary(max_size=300)
    | mutated_bytes(otlp_requests())
    | mutated_json(tuple(json.loads(d) for d in otlp_json_documents())).map(
        lambda doc: json.dumps(doc).encode()
    )
)
media = st.sampled_from(["application/x-protobuf", "application/json", "text/plain", ""])
encodings = st.sampled_from(["identity", "gzip", "gzip-cut", "br"])


def _encode(body: bytes, encoding: str) -> tuple[bytes, dict[str, str]]:
    if encoding == "gzip":
        return gzip.compress(body, mtime=0), {"content-encoding": "gzip"}
    if encoding == "gzip-cut":
        packed = gzip.compress(body, mtime=0)
        return packed[: len(packed) // 2], {"content-encoding": "gzip"}
    if encoding == "br":
        return body, {"content-encoding": "br"}
    return body, {}


def _export_everything(store: Path) -> int:
    with SpanStore(store, readonly=True) as db:
        return sum(1 for _ in stored_agent_traces(db, include_pending=True))


@pytest.mark.slow  # a fuzzed running server, 3.6 s on a loaded run (load ~9)
def test_hostile_bodies_never_break_the_receivers() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "spans.db"
        _fuzz_running_server(store)
        assert _export_everything(store) > 0


def _fuzz_running_server(store: Path) -> None:
    with running(store, max_body_bytes=256 * 1024) as server:
        base = f"http://127.0.0.1:{server.http_port}"
        client = httpx.Client(base_url=base, timeout=10)
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        export = channel.unary_unary(EXPORT)
        statuses: dict[Any, int] = {}

        @FUZZ
        @given(bodies, media, encodings)
        def over_http(body: bytes, content_type: str, encoding: str) -> None:
            TRIED["server: http bodies"] += 1
            payload, headers = _encode(body, encoding)
            reply = client.post(
                "/v1/traces", content=payload, headers={"content-type": content_type, **headers}
            )
            statuses[reply.status_code] = statuses.get(reply.status_code, 0) + 1
            assert reply.status_code in (200, 400, 413, 415), (reply.status_code, reply.content)
            if reply.status_code != 200:
                assert reply.content  # a message saying what was wrong

        @FUZZ
        @given(bodies)
        def over_grpc(body: bytes) -> None:
            TRIED["server: grpc bodies"] += 1
            try:
                ExportTraceServiceResponse.FromString(export(body, timeout=10))
                code = grpc.StatusCode.OK
            except grpc.RpcError as exc:
                code = exc.code()
                assert exc.details()
            statuses[code] = statuses.get(code, 0) + 1
            assert code in (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT), code

        over_http()
        over_grpc()
        # still serving, healthy, and everything it accepted converts
        valid = client.post("/v1/traces", content=otlp_requests()[0], headers=PROTO)
        assert valid.status_code == 200
        assert client.get("/health").json()["status"] == "ok"
        client.close()
        channel.close()
    assert TRIED["server: http bodies"] >= EXAMPLES * 0.9
    assert TRIED["server: grpc bodies"] >= EXAMPLES * 0.9
    assert statuses.get(200, 0) > 0 and statuses.get(400, 0) > 0, statuses
