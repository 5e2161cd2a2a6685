"""Admission before work: a request's spans are counted before it is decoded, no request may
carry more than ``--max-pending-spans``, decoding runs off the event loop, and what does not fit
is refused at once — while ``/health`` keeps answering and memory stays bounded.

The red-team case (4 concurrent 15 MiB requests of ~395k tiny spans) runs at full size in
``bench/load_hostile.py``; here the same shape is scaled down to stay fast.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
import pytest

from spanguard_processor.collector.limits import Limits
from spanguard_processor.store.span_store import SpanStore
from tests.serve_process import ServeProcess

from .corpus import FIGURES
from .hostile import export_grpc, export_http, rss_mib, tiny_spans_request, watch_health
from .servers import EXPORT, PROTO, request_bytes, running, spans_of_one_trace

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _stored(path: Path) -> int:
    with SpanStore(path, readonly=True) as store:
        return store.span_count()


def test_one_request_cannot_carry_more_than_max_pending_spans(tmp_path: Path) -> None:
    store = tmp_path / "spans.db"
    body = tiny_spans_request(800, seed=1)
    with running(store, limits=Limits(max_pending_spans=100)) as server:
        reply = httpx.post(
            f"http://127.0.0.1:{server.http_port}/v1/traces",
            content=body,
            headers=PROTO,
            timeout=30,
        )
        assert reply.status_code == 413, reply.content
        assert b"more than 100 spans" in reply.content
        assert b"the processor's max_pending_spans limit" in reply.content
        channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary(EXPORT)(body, timeout=30)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "more than 100 spans" in (refused.value.details() or "")
        channel.close()
        # a request that fits is still accepted, on both protocols
        small = request_bytes(spans_of_one_trace(5))
        assert (
            httpx.post(
                f"http://127.0.0.1:{server.http_port}/v1/traces", content=small, headers=PROTO
            ).status_code
            == 200
        )
    assert _stored(store) == 5


SPANS = 100_000  # per request, ~3.7 MiB
REQUESTS = 4


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_concurrent_large_requests_keep_health_responsive_and_refusals_quick(
    tmp_path: Path, protocol: str
) -> None:
    bodies = [tiny_spans_request(SPANS, seed=seed) for seed in range(REQUESTS)]
    server = ServeProcess(
        tmp_path / "spans.db",
        "--max-pending-spans",
        str(SPANS + 1000),
        "--wait-duration",
        "0.1",
        "--num-traces",
        "1000",
    )
    stop, latencies = threading.Event(), []
    try:
        base_rss = rss_mib(server.proc.pid)
        watcher = threading.Thread(target=watch_health, args=(server.url, stop, latencies, 0.05))
        watcher.start()
        time.sleep(0.2)
        if protocol == "http":

            def send(body: bytes) -> tuple[int, float]:
                return export_http(server.url, body, timeout=60)
        else:
            channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")

            def send(body: bytes) -> tuple[int, float]:
                code, seconds = export_grpc(channel, body, timeout=60)
                return {"OK": 200, "RESOURCE_EXHAUSTED": 429}.get(code, 500), seconds

        sender: Callable[[bytes], tuple[int, float]] = send
        with ThreadPoolExecutor(REQUESTS) as pool:
            outcomes = list(pool.map(sender, bodies))
        stop.set()
        watcher.join()
        peak = rss_mib(server.proc.pid)
        health = server.wait_idle(0, timeout=60)
    finally:
        stop.set()
        server.terminate()
    statuses = sorted(status for status, _ in outcomes)
    refusals = [seconds for status, seconds in outcomes if status == 429]
    FIGURES.append(
        f"admission ({protocol}): {REQUESTS} x {SPANS} tiny spans -> {statuses}, "
        f"refused in <= {max(refusals, default=0):.2f} s, health <= "
        f"{max(latencies):.2f} s, peak RSS {peak:.0f} MiB (base {base_rss:.0f})"
    )
    assert statuses.count(200) >= 1 and set(statuses) <= {200, 429}, outcomes
    assert refusals and max(refusals) < 1.0, outcomes  # what does not fit is refused at once
    assert max(latencies) < 1.0, max(latencies)  # health answers throughout
    assert health["spans_received"] == SPANS * statuses.count(200)
    assert _stored(tmp_path / "spans.db") == SPANS * statuses.count(200)
    # one request is decoded at a time: memory is bounded by what was admitted, not by
    # how many requests arrived
    assert peak - base_rss < 160, (peak, base_rss)


def test_the_gil_switches_every_millisecond_only_while_a_large_request_is_admitted() -> None:
    """Every GIL switch costs the two busy threads CPU; a 1 ms switch interval (instead of
    CPython's 5 ms) is worth it only while a large request is decoded or stored."""
    import sys

    from spanguard_processor.collector.admission import LARGE_REQUEST_SPANS, Admission

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        admission = Admission(Limits(max_pending_spans=10 * LARGE_REQUEST_SPANS))
        small = admission.admit(512)
        assert sys.getswitchinterval() == pytest.approx(0.005)
        large = [admission.admit(LARGE_REQUEST_SPANS), admission.admit(2 * LARGE_REQUEST_SPANS)]
        assert sys.getswitchinterval() == pytest.approx(0.001)
        admission.resize(large[0], 100)  # its exact count is small: still a large body
        admission.release(large[0])
        admission.release(large[0])  # idempotent
        assert sys.getswitchinterval() == pytest.approx(0.001)
        admission.release(large[1])
        assert sys.getswitchinterval() == pytest.approx(0.005)
        admission.release(small)
        assert admission.pending == 0
    finally:
        sys.setswitchinterval(before)
