"""Fair admission for logs (issue 49 item 1): a logs request is counted off the wire and held
to its share of the pending budget before any record is converted, so one request of tiny
records cannot hold the whole budget while it is converted, nor be refused only after it."""

from __future__ import annotations

import time
from pathlib import Path

import grpc
import httpx
import pytest
from google.rpc.status_pb2 import Status
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from spanguard_processor.collector.logs_receive import LogsReceiver

from ..reliability.servers import running

pytestmark = pytest.mark.integration
PROTO = {"content-type": "application/x-protobuf"}
LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"


def _frame(field: int, payload: bytes) -> bytes:
    size, head = len(payload), bytearray([field << 3 | 2])
    while size >= 0x80:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + payload


def tiny_records(count: int) -> bytes:
    """An ``ExportLogsServiceRequest`` of ``count`` tiny span-bound records (≈ 36 bytes each:
    trace id, span id, an event name), framed by hand: building them as messages is slow."""
    records = [
        _frame(
            2,
            LogRecord(
                trace_id=i.to_bytes(16, "big"), span_id=b"\x01" * 8, event_name="e"
            ).SerializeToString(),
        )
        for i in range(1, 1001)
    ]
    scope = b"".join(records[i % 1000] for i in range(count))
    return _frame(1, _frame(2, scope))


def test_a_flood_of_tiny_log_records_is_refused_before_it_is_converted(tmp_path: Path) -> None:
    flood = tiny_records(475_000)  # ≈ 15.7 MB, inside the 16 MiB body limit
    assert 15_000_000 < len(flood) < 16 * 1024 * 1024
    normal = tiny_records(10_000)
    with running(tmp_path / "spans.db") as server, httpx.Client(timeout=60) as client:
        url = f"http://127.0.0.1:{server.http_port}/v1/logs"
        started = time.perf_counter()
        assert client.post(url, content=normal, headers=PROTO).status_code == 200
        baseline = time.perf_counter() - started  # count, convert and store 10,000 records
        started = time.perf_counter()
        refused = client.post(url, content=flood, headers=PROTO)
        refusal = time.perf_counter() - started
        assert refused.status_code == 413
        assert "more than 12500 log records" in Status.FromString(refused.content).message
        # converting 475,000 records first took ≥ 20 × the baseline; counting them takes less
        assert refusal < 3 * baseline, (refusal, baseline)
        with grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
            call = channel.unary_unary(LOGS_EXPORT)
            with pytest.raises(grpc.RpcError) as err:
                call(flood, timeout=60)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert server.receiver.admission.pending == 0


def test_one_logs_request_holds_at_most_a_quarter_of_the_pending_budget(tmp_path: Path) -> None:
    with running(tmp_path / "spans.db") as server:
        logs = LogsReceiver.beside(server.receiver)
        limit = server.receiver.limits.max_pending_spans
        flood = logs.admit(16 * 1024 * 1024)  # before its body is counted
        try:
            assert flood.spans == limit // 4
            others = [server.receiver.admit(64 * 1_000) for _ in range(3)]  # still admitted
            for reservation in others:
                server.receiver.admission.release(reservation)
        finally:
            logs.admission.release(flood)


def test_a_json_flood_is_refused_by_its_estimate(tmp_path: Path) -> None:
    record = (
        b'{"traceId":"0102030405060708090a0b0c0d0e0f10",'
        b'"spanId":"0102030405060708","eventName":"e"},'
    )
    body = (
        b'{"resourceLogs":[{"scopeLogs":[{"logRecords":['
        + record * 20_000
        + record[:-1]
        + b"]}]}]}"
    )
    with running(tmp_path / "spans.db") as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/logs",
            content=body,
            headers={"content-type": "application/json"},
            timeout=60,
        )
    assert reply.status_code == 413, reply.text
    assert "log records" in reply.json()["message"]
