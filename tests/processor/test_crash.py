"""Crash safety: kill -9 mid-stream, restart, every acknowledged span present exactly once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.store import SpanStore

from .agent_app import SPANS_PER_REQUEST, run_request
from .serve_process import ServeProcess

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PROTO = {"content-type": "application/x-protobuf"}
REQUESTS = 300


def encoded_requests() -> list[tuple[bytes, set[str]]]:
    """One pre-encoded OTLP request per agent request, with the span ids it carries."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("crash")
    requests = []
    for index in range(REQUESTS):
        exporter.clear()
        run_request(tracer, index)
        spans = exporter.get_finished_spans()
        ids = {format(s.get_span_context().span_id, "016x") for s in spans}  # type: ignore[union-attr]
        requests.append((encode_spans(spans).SerializeToString(), ids))
    return requests


def test_kill_9_mid_stream_loses_no_acknowledged_span_and_stores_none_twice(
        tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    requests = encoded_requests()
    acked: list[int] = []
    failed: list[int] = []
    server = ServeProcess(store, "--wait-duration", "0.2")

    def stream() -> None:
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for index, (body, _) in enumerate(requests):
                try:
                    ok = client.post("/v1/traces", content=body, headers=PROTO).status_code == 200
                except httpx.HTTPError:
                    ok = False
                (acked if ok else failed).append(index)

    sender = threading.Thread(target=stream)
    sender.start()
    while len(acked) < 60:
        time.sleep(0.005)
    server.kill()
    sender.join()
    assert failed, "the kill came after the stream ended; nothing was mid-stream"
    acknowledged = set(acked)
    with SpanStore(store, readonly=True) as db:
        present = {span_id for _, span_id in db.span_ids()}
    for index in acknowledged:
        assert requests[index][1] <= present, f"acknowledged request {index} lost spans"

    # The exporter retries every request it saw fail, including the one cut off mid-flight
    # (whose spans may already be stored), and re-sends a few it had acknowledged.
    restarted = ServeProcess(store, "--wait-duration", "0.2")
    try:
        with httpx.Client(base_url=restarted.url, timeout=10) as client:
            for index in [*failed, *acked[:10]]:
                reply = client.post("/v1/traces", content=requests[index][0], headers=PROTO)
                assert reply.status_code == 200
        restarted.wait_idle(0)
    finally:
        restarted.terminate()
    with SpanStore(store, readonly=True) as db:
        rows = db.span_ids()
        traces = list(db.iter_agent_traces())
    assert len(rows) == len(set(rows)) == REQUESTS * SPANS_PER_REQUEST
    assert len(traces) == REQUESTS and not any(t.partial for t in traces)
    assert sorted(t.request_id or "" for t in traces) == [f"req-{i:04d}" for i in range(REQUESTS)]
