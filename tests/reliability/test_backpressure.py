"""Back-pressure: a slow store or a full disk gets retryable refusals, never accept-then-drop.

* Slow store: another connection holds SQLite's write lock, so the processor's writer waits.
  Requests beyond ``max_pending_spans`` are refused at once (HTTP 429 + ``Retry-After``, gRPC
  ``RESOURCE_EXHAUSTED``); a request waiting longer than ``ack_timeout`` gets HTTP 503 +
  ``Retry-After``. The real OTel exporter retries through all of it and succeeds.
* Full disk: SQLite's ``max_page_count`` makes the store's file unable to grow, which SQLite
  reports exactly as a full disk (``SQLITE_FULL``). Refused requests get 503 / ``UNAVAILABLE``;
  when space comes back the processor accepts again without a restart.

In both, every request answered 200 is in the store, once.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from spanguard_processor.collector.limits import Limits
from spanguard_processor.store.span_store import SpanStore

from .servers import EXPORT, PROTO, request_bytes, running, spans_of_one_trace

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _stored(path: Path) -> list[tuple[str, str]]:
    with SpanStore(path, readonly=True) as store:
        return store.span_ids()


def test_slow_store_gets_429_then_503_with_retry_after_and_exporters_recover(
    tmp_path: Path,
) -> None:
    store = tmp_path / "spans.db"
    limits = Limits(max_pending_spans=5, ack_timeout=1.0, retry_after=2)
    first, second, third = (spans_of_one_trace(n) for n in (5, 3, 4))
    with running(store, limits=limits) as server:
        endpoint = f"http://127.0.0.1:{server.http_port}/v1/traces"
        blocker = sqlite3.connect(store, timeout=0, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the store is now "slow": its writer must wait
        replies: dict[str, httpx.Response] = {}

        def send_first() -> None:
            replies["first"] = httpx.post(
                endpoint, content=request_bytes(first), headers=PROTO, timeout=10
            )

        waiting = threading.Thread(target=send_first)
        waiting.start()
        deadline = time.monotonic() + 5
        while server.receiver.admission.pending < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.receiver.admission.pending == 5
        refused = httpx.post(endpoint, content=request_bytes(second), headers=PROTO)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        with pytest.raises(grpc.RpcError) as exhausted:
            channel.unary_unary(EXPORT)(request_bytes(second), timeout=5)
        assert exhausted.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        channel.close()

        # the real exporter retries 429 with back-off and succeeds once the store catches up
        outcome: dict[str, SpanExportResult] = {}
        retrying = threading.Thread(
            target=lambda: outcome.update(
                third=HttpExporter(endpoint=endpoint, timeout=20).export(third)
            )
        )
        retrying.start()
        waiting.join()
        assert replies["first"].status_code == 503  # waited longer than ack_timeout
        assert replies["first"].headers["retry-after"] == "2"
        time.sleep(0.3)
        blocker.execute("COMMIT")  # the store is fast again
        blocker.close()
        retrying.join()
        assert outcome["third"] == SpanExportResult.SUCCESS
        # the senders that were refused retry, as exporters do
        grpc_exporter = GrpcExporter(endpoint=f"127.0.0.1:{server.grpc_port}", insecure=True)
        assert grpc_exporter.export(second) == SpanExportResult.SUCCESS
        assert httpx.post(endpoint, content=request_bytes(first), headers=PROTO).status_code == 200
    rows = _stored(store)
    assert len(rows) == len(set(rows)) == 5 + 3 + 4


def test_full_disk_gets_503_and_unavailable_and_recovers_without_restart(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    with running(store, limits=Limits(retry_after=3)) as server:
        endpoint = f"http://127.0.0.1:{server.http_port}/v1/traces"
        db = server.store._db  # the writer's own connection; idle until the first request
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count = {pages + 4}")
        acked, refused = 0, None
        for index in range(40):
            reply = httpx.post(
                endpoint,
                headers=PROTO,
                content=request_bytes(spans_of_one_trace(2, text=f"{index} " + "x" * 3000)),
            )
            if reply.status_code != 200:
                refused = reply
                break
            acked += 2
        assert refused is not None, "the store never filled up"
        assert refused.status_code == 503 and refused.headers["retry-after"] == "3"
        assert b"full" in refused.content
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        with pytest.raises(grpc.RpcError) as unavailable:
            channel.unary_unary(EXPORT)(
                request_bytes(spans_of_one_trace(2, text="y" * 3000)), timeout=5
            )
        assert unavailable.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "full" in (unavailable.value.details() or "")
        channel.close()
        assert len(_stored(store)) == acked  # every 200 stored, nothing refused stored

        db.execute("PRAGMA max_page_count = 1073741823")  # space is back
        again = spans_of_one_trace(2, text="z" * 3000)
        assert HttpExporter(endpoint=endpoint).export(again) == SpanExportResult.SUCCESS
        assert httpx.get(f"http://127.0.0.1:{server.http_port}/health").status_code == 200
    # the graceful stop after the episode checkpointed the WAL into the store file
    wal = Path(f"{store}-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    rows = _stored(store)
    assert len(rows) == len(set(rows)) == acked + 2
    with sqlite3.connect(store) as check:
        assert check.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_traces_released_while_the_store_refused_writes_are_marked_once_it_accepts_again(
    tmp_path: Path,
) -> None:
    # The store refuses writes (here: another connection holds the write lock past the
    # writer's 5 s busy timeout; a full disk fails the same way) just when the assembler
    # releases traces. Before, those traces stayed pending until the processor restarted.
    store = tmp_path / "spans.db"
    with running(store, wait_duration=0.3) as server:
        endpoint = f"http://127.0.0.1:{server.http_port}/v1/traces"
        for index in range(3):
            reply = httpx.post(
                endpoint,
                headers=PROTO,
                content=request_bytes(spans_of_one_trace(2, text=f"trace {index}")),
            )
            assert reply.status_code == 200
        locker = sqlite3.connect(store, isolation_level=None)
        locker.execute("BEGIN IMMEDIATE")
        time.sleep(6.5)  # released after 0.3 s; marking them waits 5 s, then fails
        locker.execute("ROLLBACK")
        locker.close()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with SpanStore(store, readonly=True) as db:
                counts = db.trace_counts()
            if counts == (3, 0):
                break
            time.sleep(0.2)
        assert counts == (3, 0), f"(released, pending) = {counts} while still running"
