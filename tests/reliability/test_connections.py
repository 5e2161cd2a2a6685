"""Connection limits: slow and idle clients cannot take the server's file descriptors.

The red-team case (2,000 half-sent HTTP requests and 2,000 idle gRPC connections for 30 s) runs
at full size in ``bench/load_hostile.py``; here the server runs with its file-descriptor limit
lowered to 256, so a few hundred clients reach it in seconds. Health and exports on both
protocols must keep answering, stderr must not fill with tracebacks, and the server recovers
by itself once the clients go away.
"""

from __future__ import annotations

import math
import socket
import time
from pathlib import Path

import grpc
import httpx
import pytest

from spanguard_processor.collector.connections import HEADER_TIMEOUT
from spanguard_processor.store.span_store import SpanStore
from tests.serve_process import ServeProcess

from .corpus import FIGURES
from .hostile import StderrLog, idle_grpc_channels, serves, slow_http_clients
from .servers import PROTO, request_bytes, running, spans_of_one_trace

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FD_LIMIT = 256
SLOW_HTTP = 300  # more than the server has descriptors for
IDLE_GRPC = 60  # within the gRPC share of the descriptors


def _serves(server: ServeProcess, index: int) -> tuple[float, bool, bool]:
    """Health latency, and whether an HTTP and a gRPC export on fresh connections succeed,
    each within less than the server's header timeout (infinity when not): so an answer never
    waited for a slow client to be timed out."""
    return serves(
        server.url,
        server.grpc_port,
        request_bytes(spans_of_one_trace(2, text=f"probe {index}")),
        request_bytes(spans_of_one_trace(2)),
        timeout=HEADER_TIMEOUT - 1,
    )


def test_slow_and_idle_clients_cannot_exhaust_descriptors(tmp_path: Path) -> None:
    server = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.1", fd_limit=FD_LIMIT)
    stderr = StderrLog(server)
    slow: list[socket.socket] = []
    idle: list[grpc.Channel] = []
    probes = []
    try:
        idle = idle_grpc_channels(server.grpc_port, IDLE_GRPC)
        slow = slow_http_clients(server.http_port, SLOW_HTTP)
        for index in range(4):  # while every slow client is still connected
            probes.append(_serves(server, index))
            time.sleep(0.5)
        for sock in slow:
            sock.close()
        for channel in idle:
            channel.close()
        time.sleep(1)
        after = _serves(server, 99)  # recovered by itself
        server.wait_idle(2 * (sum(http + grpc_ for _, http, grpc_ in probes) + 2))
    finally:
        for sock in slow:
            sock.close()
        for channel in idle:
            channel.close()
        log = stderr.stop(30)
    FIGURES.append(
        f"connections: {len(slow)} slow HTTP clients + {len(idle)} idle gRPC "
        f"channels at fd limit {FD_LIMIT}: probes {probes}, after {after}, "
        f"stderr {len(log)} bytes"
    )
    # structure, not a latency: each probe answered (before the header timeout could free a
    # descriptor) while every slow client was still connected
    assert all(
        math.isfinite(latency) and http_ok and grpc_ok for latency, http_ok, grpc_ok in probes
    ), (probes, log[-2000:])
    assert math.isfinite(after[0]) and after[1] and after[2], after
    assert "Traceback" not in log, log[-3000:]
    assert log.count("\n") <= 5, log[-3000:]  # one rate-limited line, not a flood
    with SpanStore(tmp_path / "spans.db", readonly=True) as db:
        assert db.span_count() >= 2 * 2 * len(probes)


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True if the server closes the connection within ``seconds`` (reads what it sent)."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return False
    return True


def test_headers_and_bodies_that_do_not_arrive_in_time_are_cut_off(tmp_path: Path) -> None:
    with running(tmp_path / "spans.db", header_timeout=0.5, body_timeout=0.5) as server:
        port = server.http_port
        # half the headers, then nothing: closed after the header deadline
        half = socket.create_connection(("127.0.0.1", port))
        half.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert _closed_within(half, 3)
        half.close()
        # a connection that never sends anything at all
        silent = socket.create_connection(("127.0.0.1", port))
        assert _closed_within(silent, 3)
        silent.close()
        # after a complete request on a keep-alive connection, half of the next one
        kept = socket.create_connection(("127.0.0.1", port))
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        kept.settimeout(3)
        assert kept.recv(4096).startswith(b"HTTP/1.1 200")
        kept.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert _closed_within(kept, 3)
        kept.close()
        # all the headers, part of the body: 408 after the body deadline
        slow = socket.create_connection(("127.0.0.1", port))
        slow.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n" + b"\x0a" * 10
        )
        slow.settimeout(3)
        assert slow.recv(4096).startswith(b"HTTP/1.1 408")
        slow.close()
        # and the server serves on
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        body = request_bytes(spans_of_one_trace(2))
        assert (
            httpx.post(
                f"http://127.0.0.1:{port}/v1/traces", content=body, headers=PROTO
            ).status_code
            == 200
        )
