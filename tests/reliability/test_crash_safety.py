"""Crash safety: ``kill -9`` the processor at random points during ingest, 20 times over, and
a ``SIGTERM`` that flushes what is in flight.

One store, 20 cycles, over OTLP/HTTP and again over OTLP/gRPC. Each cycle starts ``spanguard
serve`` as a real subprocess, streams pre-encoded OTLP requests at it from two client threads
(some requests re-sent, as exporters do on retry), and SIGKILLs it after a random delay. After
every kill, before anything else touches the store: SQLite's ``PRAGMA integrity_check`` is
``ok``, every span of every request the processor acknowledged (HTTP 200, gRPC OK) is present,
and no (trace, span) is stored twice. At the end a last clean run re-sends everything that was
not acknowledged; then every request is stored exactly once and assembles into exactly one
complete agent trace. The same for logs requests (one GenAI record per span; 6 kills per
protocol): every acknowledged record is stored, each once.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from spanguard_processor.inputs.stored_traces import stored_agent_traces
from spanguard_processor.store.span_store import SpanStore
from tests.agent_app import SPANS_PER_REQUEST, EncodedRequest, encoded_requests
from tests.reliability.corpus import FIGURES
from tests.reliability.servers import EXPORT
from tests.serve_process import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROTO = {"content-type": "application/x-protobuf"}
KILLS = 20
REQUESTS = 600
SEED = 20261130


LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
LOG_KILLS = 6  # per protocol: the logs path shares the traces' commit and acknowledgement


def logs_requests(count: int) -> tuple[EncodedRequest, ...]:
    """For each agent request, a logs request of one GenAI record per span (naming it), with
    the ids of the ``spanguard.log`` spans serve stores them as (derived from each record:
    :func:`~spanguard_processor.ingest.otlp_logs_proto.request_as_spans`, as serve runs it)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

    from spanguard_processor.ingest.otlp_logs_proto import request_as_spans

    out = []
    for traces in encoded_requests(count):
        parsed = ExportTraceServiceRequest.FromString(traces.body)
        request = ExportLogsServiceRequest()
        records = request.resource_logs.add().scope_logs.add().log_records
        for span in (s for rs in parsed.resource_spans for ss in rs.scope_spans for s in ss.spans):
            records.append(
                LogRecord(
                    trace_id=span.trace_id,
                    span_id=span.span_id,
                    time_unix_nano=span.start_time_unix_nano,
                    event_name="gen_ai.client.inference.operation.details",
                )
            )
        spans = request_as_spans(request)[0]
        ids = frozenset(
            (s.trace_id.hex(), s.span_id.hex())
            for rs in spans.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
        )
        out.append(EncodedRequest(request.SerializeToString(), ids))
    return tuple(out)


def _check_store(store: Path, acked: set[int], requests: Sequence[EncodedRequest]) -> int:
    with sqlite3.connect(store) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with SpanStore(store, readonly=True) as db:
        rows = db.span_ids()
    present = set(rows)
    assert len(rows) == len(present), "a span is stored twice"
    for index in acked:
        missing = requests[index].span_ids - present
        assert not missing, f"acknowledged request {index} lost {len(missing)} span(s)"
    return len(rows)


def _stream(
    server: ServeProcess,
    protocol: str,
    order: list[int],
    requests: Sequence[EncodedRequest],
    acked: set[int],
    lock: threading.Lock,
    answered: list[int] | None = None,
    signal: str = "traces",
) -> None:
    """Send ``order``'s requests one after another, noting each acknowledged one."""
    if protocol == "grpc":
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        export = channel.unary_unary(EXPORT if signal == "traces" else LOGS_EXPORT)

        def send(body: bytes) -> bool:
            try:
                export(body, timeout=10)
            except grpc.RpcError as exc:
                if exc.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    grpc.StatusCode.CANCELLED,
                ):
                    raise ConnectionError from None  # the processor is gone
                return False
            return True
    else:
        client = httpx.Client(base_url=server.url, timeout=10)

        def send(body: bytes) -> bool:
            try:
                return client.post(f"/v1/{signal}", content=body, headers=PROTO).status_code == 200
            except httpx.HTTPError:
                raise ConnectionError from None

    try:
        for index in order:
            try:
                ok = send(requests[index].body)
            except ConnectionError:
                return
            with lock:
                if ok:
                    acked.add(index)
                if answered is not None:
                    answered[0] += 1
    finally:
        (channel if protocol == "grpc" else client).close()


@pytest.mark.parametrize(
    ("signal", "protocol"),
    [("traces", "http"), ("traces", "grpc"), ("logs", "http"), ("logs", "grpc")],
)
def test_twenty_kill_9s_during_ingest_lose_no_acknowledged_span(
    tmp_path: Path, signal: str, protocol: str
) -> None:
    store = tmp_path / "spans.db"
    requests = encoded_requests(REQUESTS) if signal == "traces" else logs_requests(REQUESTS)
    kills = KILLS if signal == "traces" else LOG_KILLS
    rng = random.Random(SEED)
    acked: set[int] = set()
    lock = threading.Lock()
    killed_mid_stream = 0
    for _cycle in range(kills):
        server = ServeProcess(store, "--wait-duration", "0.1")
        # each cycle sends fresh requests plus some already acknowledged (exporter retries)
        fresh = [i for i in range(REQUESTS) if i not in acked]
        resend = rng.sample(sorted(acked), min(len(acked), 10))
        order = fresh[: 40 + rng.randrange(60)] + resend
        rng.shuffle(order)
        halves = [order[0::2], order[1::2]]
        answered = [0]
        senders = [
            threading.Thread(
                target=_stream,
                args=(server, protocol, h, requests, acked, lock, answered, signal),
            )
            for h in halves
        ]
        for sender in senders:
            sender.start()
        # A random point of the stream, counted in answered requests rather than seconds, so
        # the kill lands mid-stream however fast or loaded the machine is.
        kill_after = rng.randrange(len(order))
        deadline = time.monotonic() + 30
        while (
            answered[0] < kill_after
            and any(s.is_alive() for s in senders)
            and time.monotonic() < deadline
        ):
            time.sleep(0.001)
        in_progress = any(s.is_alive() for s in senders)
        server.kill()
        for sender in senders:
            sender.join()
        killed_mid_stream += in_progress
        _check_store(store, acked, requests)
    assert killed_mid_stream >= kills // 2, f"only {killed_mid_stream} kills hit mid-stream"

    final = ServeProcess(store, "--wait-duration", "0.1")
    try:
        rest = [i for i in range(REQUESTS) if i not in acked]
        _stream(final, protocol, rest, requests, acked, lock, None, signal)
        if signal == "traces":  # log records of traces whose spans never come stay in flight
            final.wait_idle(0)
    finally:
        final.terminate()
    assert acked == set(range(REQUESTS))
    stored = _check_store(store, acked, requests)
    assert stored == REQUESTS * SPANS_PER_REQUEST
    if signal == "logs":  # records only: their spans never arrive, so no agent trace
        FIGURES.append(
            f"crash safety (logs, {protocol}): {kills} kill -9s, {killed_mid_stream} "
            f"mid-stream, {REQUESTS} requests, {stored} records, each stored once"
        )
        return
    with SpanStore(store, readonly=True) as db:
        traces = list(stored_agent_traces(db))
    assert sorted(t.request_id or "" for t in traces) == [f"req-{i:04d}" for i in range(REQUESTS)]
    assert all(not t.partial and len(t.trace.tool_calls) == 1 for t in traces)
    FIGURES.append(
        f"crash safety ({protocol}): {KILLS} kill -9s, {killed_mid_stream} mid-stream, "
        f"{REQUESTS} requests, {stored} spans, each stored once"
    )


def test_sigterm_flushes_traces_in_flight_and_restart_resumes_pending_ones(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    requests = encoded_requests(6)
    server = ServeProcess(store, "--wait-duration", "600")
    for request in requests[:3]:
        assert (
            httpx.post(server.url + "/v1/traces", content=request.body, headers=PROTO).status_code
            == 200
        )
    assert httpx.get(server.url + "/health").json()["traces_in_flight"] == 3
    assert "3 traces released" in server.terminate()
    with SpanStore(store, readonly=True) as db:
        assert db.trace_counts() == (3, 0)

    server = ServeProcess(store, "--wait-duration", "600")
    for request in requests[3:]:
        assert (
            httpx.post(server.url + "/v1/traces", content=request.body, headers=PROTO).status_code
            == 200
        )
    server.kill()
    with SpanStore(store, readonly=True) as db:
        assert db.trace_counts() == (3, 3)  # acknowledged and stored, not yet assembled
    server = ServeProcess(store, "--wait-duration", "600")
    assert httpx.get(server.url + "/health").json()["traces_in_flight"] == 3
    server.terminate()
    with SpanStore(store, readonly=True) as db:
        assert db.trace_counts() == (6, 0)
        assert len(list(stored_agent_traces(db))) == 6
