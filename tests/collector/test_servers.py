"""Both receivers, in process on 127.0.0.1 port 0, fed by the real OTel SDK exporters."""

from __future__ import annotations

import gzip
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from spanguard_processor.collector.limits import Limits
from spanguard_processor.collector.server import ProcessorServer, ServerConfig
from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore
from tests.agent_app import SPANS_PER_REQUEST, in_memory_spans

pytestmark = pytest.mark.integration
PROTO = {"content-type": "application/x-protobuf"}
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ProcessorServer]:
    config = ServerConfig(
        store=tmp_path / "spans.db",
        grpc_port=0,
        http_port=0,
        wait_duration=0.05,
        max_body_bytes=64 * 1024,
    )
    running = ProcessorServer(config).start()
    yield running
    running.stop()


def url(server: ProcessorServer) -> str:
    return f"http://127.0.0.1:{server.http_port}"


def stored(path: Path) -> list[str]:
    with SpanStore(path, readonly=True) as store:
        return [span_id for _, span_id in store.span_ids()]


def test_sdk_exporters_over_http_and_grpc_store_every_span_and_assemble(tmp_path: Path) -> None:
    # traces stay in flight until stop() flushes them, so the retry below is a duplicate
    # however slow the machine is
    server = ProcessorServer(
        ServerConfig(store=tmp_path / "spans.db", grpc_port=0, http_port=0, wait_duration=60)
    ).start()
    spans = in_memory_spans(6).get_finished_spans()
    http = HttpExporter(endpoint=url(server) + "/v1/traces")
    assert http.export(spans[:15]) == SpanExportResult.SUCCESS
    grpc_exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.grpc_port}", insecure=True)
    assert grpc_exporter.export(spans[15:]) == SpanExportResult.SUCCESS
    assert http.export(spans[:5]) == SpanExportResult.SUCCESS  # an exporter retry
    http.shutdown()
    grpc_exporter.shutdown()
    # duplicates are counted when the writer indexes what it stored, idle 50 ms after the last
    deadline = time.monotonic() + 10
    while True:
        health = httpx.get(url(server) + "/health").json()
        if health["spans_duplicated"] or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert health["status"] == "ok" and health["spans_duplicated"] == 5
    server.stop()
    assert len(stored(tmp_path / "spans.db")) == 6 * SPANS_PER_REQUEST
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        traces = list(stored_agent_traces(store))
    assert sorted(t.request_id or "" for t in traces) == [f"req-{i:04d}" for i in range(6)]
    assert all(not t.partial and t.trace.tool_calls for t in traces)


def test_json_and_gzip_bodies_are_accepted(server: ProcessorServer) -> None:
    line = (
        Path(__file__).parents[1] / "data" / "otel" / "python_otlp_json_file_exporter.jsonl"
    ).read_bytes()
    first = line.splitlines()[0]
    reply = httpx.post(
        url(server) + "/v1/traces", content=first, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200 and reply.json() == {}
    body = gzip.compress(encode_spans(in_memory_spans(1).get_finished_spans()).SerializeToString())
    reply = httpx.post(
        url(server) + "/v1/traces", content=body, headers={**PROTO, "content-encoding": "gzip"}
    )
    assert reply.status_code == 200
    assert ExportTraceServiceResponse.FromString(reply.content).partial_success.rejected_spans == 0


def test_every_gzip_member_is_decompressed_and_stored(
    server: ProcessorServer, tmp_path: Path
) -> None:
    # gzip(A) + gzip(B) is one valid gzip stream (RFC 1952: a file may hold several members);
    # the protobuf bodies concatenated are one valid request holding the spans of both.
    first, second = (
        encode_spans(in_memory_spans(1).get_finished_spans()).SerializeToString() for _ in range(2)
    )
    body = gzip.compress(first) + gzip.compress(second)
    reply = httpx.post(
        url(server) + "/v1/traces", content=body, headers={**PROTO, "content-encoding": "gzip"}
    )
    assert reply.status_code == 200
    server.stop()
    assert len(stored(tmp_path / "spans.db")) == 2 * SPANS_PER_REQUEST


@pytest.mark.parametrize(
    ("headers", "body", "status", "message"),
    [
        ({"content-type": "text/plain"}, b"hello", 415, "content type 'text/plain'"),
        ({**PROTO, "content-encoding": "br"}, b"x", 415, "content encoding 'br'"),
        (PROTO, b"\xff\xff\xff garbage", 400, "not a valid OTLP protobuf"),
        ({"content-type": "application/json"}, b"{not json", 400, "not valid JSON"),
        (
            {"content-type": "application/json"},
            b'{"resourceSpans": "\xff\xfe"}',
            400,
            "not valid JSON",
        ),
        ({"content-type": "application/json"}, b'{"spans": []}', 400, "resourceSpans"),
        (PROTO, b"\x00" * (70 * 1024), 413, "the limit is 65536"),
        (
            {**PROTO, "content-encoding": "gzip"},
            gzip.compress(b"\x00" * (8 * 1024 * 1024)),
            413,
            "decompressed body exceeds",
        ),
        ({**PROTO, "content-encoding": "gzip"}, b"\x1f\x8b\x08\x00 broken", 400, "gzip"),
        (
            {**PROTO, "content-encoding": "gzip"},
            gzip.compress(b"") + b"trailing garbage",
            400,
            "after the gzip data",
        ),
        (
            {**PROTO, "content-encoding": "gzip"},
            gzip.compress(b"\x00" * 40_000) * 2,
            413,
            "decompressed body exceeds",
        ),
    ],
)
def test_bad_requests_get_the_right_status_and_the_server_keeps_serving(
    server: ProcessorServer,
    tmp_path: Path,
    headers: dict[str, str],
    body: bytes,
    status: int,
    message: str,
) -> None:
    spans = in_memory_spans(1).get_finished_spans()
    good = encode_spans(spans).SerializeToString()
    assert httpx.post(url(server) + "/v1/traces", content=good, headers=PROTO).status_code == 200
    reply = httpx.post(url(server) + "/v1/traces", content=body, headers=headers)
    assert reply.status_code == status
    text = (
        reply.text
        if "json" in reply.headers["content-type"]
        else reply.content.decode("utf-8", "replace")
    )
    assert message in text
    assert httpx.post(url(server) + "/v1/traces", content=good, headers=PROTO).status_code == 200
    server.stop()
    assert len(stored(tmp_path / "spans.db")) == SPANS_PER_REQUEST


def _request_with_bad_ids(keep_good: bool) -> bytes:
    request = encode_spans(in_memory_spans(1).get_finished_spans())
    spans = request.resource_spans[0].scope_spans[0].spans
    spans[0].span_id = b""
    spans[1].trace_id = b"\x01\x02"
    if not keep_good:
        for span in spans[2:]:
            span.span_id = b"\x00" * 8
    return bytes(request.SerializeToString())


def test_spans_without_ids_are_rejected_by_partial_success(
    server: ProcessorServer, tmp_path: Path
) -> None:
    reply = httpx.post(
        url(server) + "/v1/traces", content=_request_with_bad_ids(True), headers=PROTO
    )
    assert reply.status_code == 200
    partial = ExportTraceServiceResponse.FromString(reply.content).partial_success
    assert partial.rejected_spans == 2 and "invalid trace_id" in partial.error_message
    reply = httpx.post(
        url(server) + "/v1/traces", content=_request_with_bad_ids(False), headers=PROTO
    )
    assert reply.status_code == 400
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "traceId": "ab" * 16}]}]}]}
    reply = httpx.post(
        url(server) + "/v1/traces",
        content=json.dumps(doc),
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 400 and "spanId" in reply.json()["message"]
    server.stop()
    assert len(stored(tmp_path / "spans.db")) == SPANS_PER_REQUEST - 2


def test_grpc_garbage_is_invalid_argument_and_bad_ids_partial_success(
    server: ProcessorServer,
) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        export = channel.unary_unary(EXPORT)
        with pytest.raises(grpc.RpcError) as caught:
            export(b"\xff\xff\xff garbage", timeout=5)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid OTLP protobuf" in (caught.value.details() or "")
        with pytest.raises(grpc.RpcError) as caught:
            export(_request_with_bad_ids(False), timeout=5)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        reply = ExportTraceServiceResponse.FromString(
            export(_request_with_bad_ids(True), timeout=5)
        )
        assert reply.partial_success.rejected_spans == 2
        empty = ExportTraceServiceResponse.FromString(
            export(ExportTraceServiceRequest().SerializeToString(), timeout=5)
        )
        assert empty.partial_success.rejected_spans == 0
        too_big = b"\x0a" + b"\xff" * 5 + b"\x00" * (80 * 1024)
        with pytest.raises(grpc.RpcError) as caught:
            export(too_big, timeout=5)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_a_start_time_beyond_sqlites_integers_does_not_stop_the_writer(
    server: ProcessorServer, tmp_path: Path
) -> None:
    """OTLP times are unsigned 64-bit; SQLite's integers end at 2**63 - 1. A span starting at
    2**64 - 1 used to fail the commit that indexed it (OverflowError), and with it the writer:
    every later request got 503."""
    request = encode_spans(in_memory_spans(1).get_finished_spans())
    for span in request.resource_spans[0].scope_spans[0].spans:  # the trace's earliest too
        span.start_time_unix_nano = 2**64 - 1
    hostile = bytes(request.SerializeToString())
    assert httpx.post(url(server) + "/v1/traces", content=hostile, headers=PROTO).status_code == 200
    time.sleep(0.2)  # past the writer's index commit
    later = bytes(
        encode_spans(
            in_memory_spans(2).get_finished_spans()[SPANS_PER_REQUEST:]
        ).SerializeToString()
    )
    assert httpx.post(url(server) + "/v1/traces", content=later, headers=PROTO).status_code == 200
    assert httpx.get(url(server) + "/health").json()["status"] == "ok"
    server.stop()
    assert len(stored(tmp_path / "spans.db")) == 2 * SPANS_PER_REQUEST


def _answers(
    server: ProcessorServer, body: bytes
) -> tuple[tuple[int, str, int], tuple[str, str, int]]:
    """(HTTP status, message, rejected spans) and (gRPC code, details, rejected spans)."""
    reply = httpx.post(url(server) + "/v1/traces", content=body, headers=PROTO, timeout=10)
    if reply.status_code == 200:
        http = (
            200,
            "",
            ExportTraceServiceResponse.FromString(reply.content).partial_success.rejected_spans,
        )
    else:
        http = (reply.status_code, status_pb2.Status.FromString(reply.content).message, 0)
    with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        try:
            answer = channel.unary_unary(EXPORT)(body, timeout=10)
            rpc = (
                "OK",
                "",
                ExportTraceServiceResponse.FromString(answer).partial_success.rejected_spans,
            )
        except grpc.RpcError as exc:
            rpc = (exc.code().name, exc.details() or "", 0)
    return http, rpc


def test_both_receivers_answer_the_same_request_alike(tmp_path: Path) -> None:
    config = ServerConfig(
        store=tmp_path / "spans.db",
        grpc_port=0,
        http_port=0,
        wait_duration=0.05,
        limits=Limits(max_pending_spans=8),
    )
    too_many = encode_spans(in_memory_spans(2).get_finished_spans()).SerializeToString()
    server = ProcessorServer(config).start()
    try:
        garbage = _answers(server, b"\xff\xff\xff garbage")
        all_bad = _answers(server, _request_with_bad_ids(False))
        some_bad = _answers(server, _request_with_bad_ids(True))
        over = _answers(server, too_many)
    finally:
        server.stop()
    assert garbage[0][:1] == (400,) and garbage[1][0] == "INVALID_ARGUMENT"
    assert garbage[0][1].removeprefix("the body ") == garbage[1][1].removeprefix("the request ")
    assert "not a valid OTLP protobuf" in garbage[1][1]
    assert all_bad == ((400, all_bad[1][1], 0), ("INVALID_ARGUMENT", all_bad[1][1], 0))
    assert all_bad[1][1].startswith("every span was rejected: span ")
    assert some_bad == ((200, "", 2), ("OK", "", 2))
    assert over == ((413, over[1][1], 0), ("RESOURCE_EXHAUSTED", over[1][1], 0))
    assert "more than 8 spans" in over[1][1]


def _invalid_utf8_request() -> bytes:
    request = encode_spans(in_memory_spans(1).get_finished_spans())
    request.resource_spans[0].scope_spans[0].spans[0].name = "QQQQQQ"
    body = bytes(request.SerializeToString())
    assert body.count(b"QQQQQQ") == 1
    return body.replace(b"QQQQQQ", b"\xff\xfe\xfdQQQ")


def test_invalid_utf8_in_protobuf_strings_is_rejected(server: ProcessorServer) -> None:
    reply = httpx.post(url(server) + "/v1/traces", content=_invalid_utf8_request(), headers=PROTO)
    assert reply.status_code == 400
    with (
        grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
        pytest.raises(grpc.RpcError) as caught,
    ):
        channel.unary_unary(EXPORT)(_invalid_utf8_request(), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_late_span_merges_into_the_released_trace(server: ProcessorServer, tmp_path: Path) -> None:
    spans = in_memory_spans(1).get_finished_spans()
    tool = next(s for s in spans if s.name.startswith("execute_tool"))
    early = [s for s in spans if s is not tool]
    http = HttpExporter(endpoint=url(server) + "/v1/traces")
    assert http.export(early) == SpanExportResult.SUCCESS
    # wait until the release is durable in the store (release marks ride on the next commit,
    # so /health may count the release a moment before a reader sees it); 30 s for busy hosts
    released: list[object] = []
    deadline = time.monotonic() + 30
    while not released and time.monotonic() < deadline:
        threading.Event().wait(0.05)
        with SpanStore(tmp_path / "spans.db", readonly=True) as store:
            released = list(stored_agent_traces(store))
    (before,) = released
    assert before.trace.tool_calls == () and not before.partial
    assert http.export([tool]) == SpanExportResult.SUCCESS
    http.shutdown()
    server.stop()
    with SpanStore(tmp_path / "spans.db", readonly=True) as store:
        (after,) = stored_agent_traces(store)
    assert after.trace_id == before.trace_id
    assert [t.name for t in after.trace.tool_calls] == ["kb_search"]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="OS thread names: Linux")
def test_the_server_threads_carry_their_names_at_the_os_level(server: ProcessorServer) -> None:
    spans = in_memory_spans(2).get_finished_spans()
    http = HttpExporter(endpoint=url(server) + "/v1/traces")
    assert http.export(spans[:5]) == SpanExportResult.SUCCESS
    http.shutdown()
    grpc_exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.grpc_port}", insecure=True)
    assert grpc_exporter.export(spans[5:]) == SpanExportResult.SUCCESS
    grpc_exporter.shutdown()
    names = {(task / "comm").read_text().strip() for task in Path("/proc/self/task").iterdir()}
    # what top -H and bench/bench_ingest.py see (the kernel keeps 15 bytes of a name)
    assert {"spanguard-write", "spanguard-http", "spanguard-grpc"} <= names


def test_other_paths_and_methods_get_404_and_405_and_head_probes_health(
    server: ProcessorServer,
) -> None:
    base = url(server)
    assert httpx.get(base + "/v1/metrics").status_code == 404
    wrong = httpx.get(base + "/v1/traces")
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST")
    assert httpx.post(base + "/health").status_code == 405
    head = httpx.head(base + "/health")
    assert head.status_code == 200 and head.content == b""
    health = httpx.get(base + "/health")
    assert health.headers["content-type"] == "application/json"
    assert health.json()["status"] == "ok"


def test_a_client_hanging_up_mid_body_leaves_no_trace_and_no_error(
    server: ProcessorServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    host, port = "127.0.0.1", server.http_port
    with socket.create_connection((host, port)) as sock:
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-type: "
            b"application/x-protobuf\r\ncontent-length: 1000\r\n\r\n" + b"\x0a" * 10
        )
        time.sleep(0.2)
    good = encode_spans(in_memory_spans(1).get_finished_spans()).SerializeToString()
    assert httpx.post(url(server) + "/v1/traces", content=good, headers=PROTO).status_code == 200
    server.stop()
    assert len(stored(tmp_path / "spans.db")) == SPANS_PER_REQUEST
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
