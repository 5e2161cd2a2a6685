"""The HTTP connection guards, on both uvicorn protocols: the header deadline and the limit.

Each test runs a bare uvicorn server (a two-route ASGI app) in a thread, with uvicorn's own
keep-alive timeout set far beyond the header deadline, so a close within the deadline is the
guard's doing. The receiver's end-to-end checks are in ``tests/reliability/test_connections.py``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn

from spanguard_processor.collector.connections import (
    RateLimitedLog,
    guarded_h11,
    guarded_http,
    guarded_httptools,
)

pytestmark = pytest.mark.integration

DEADLINE = 0.4
GUARDS = [pytest.param(guarded_h11, id="h11"), pytest.param(guarded_httptools, id="httptools")]
GET = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
HALF = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n"


class _App:
    """``/hold`` answers once ``release`` is set; ``/early`` answers 413 without reading the
    body; anything else reads the body and answers 200 with its length."""

    def __init__(self) -> None:
        self.release = threading.Event()

    async def __call__(
        self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]
    ) -> None:
        status, body = 200, b""
        if scope["path"] == "/hold":
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        elif scope["path"] == "/early":
            status = 413
        else:
            size, more = 0, True
            while more:
                message = await receive()
                size += len(message.get("body", b""))
                more = message.get("more_body", False)
            body = str(size).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


@contextmanager
def _serving(
    guard: Callable[..., type[asyncio.Protocol]],
    max_connections: int = 100,
    log: RateLimitedLog | None = None,
) -> Iterator[tuple[int, _App]]:
    app = _App()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_keep_alive=60,
            http=guard(max_connections, DEADLINE, log),
        )
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1], app
    finally:
        app.release.set()
        server.should_exit = True
        thread.join(10)
        sock.close()


def _connect(port: int, data: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    if data:
        sock.sendall(data)
    return sock


def _read(sock: socket.socket, seconds: float) -> tuple[bytes, bool]:
    """What the server sends within ``seconds``, and whether it closed the connection."""
    sock.settimeout(0.05)
    got, end = b"", time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return got, True
        if not chunk:
            return got, True
        got += chunk
    return got, False


def test_http_picks_the_c_parser_when_httptools_is_installed() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert issubclass(guarded_http(10), HttpToolsProtocol)


@pytest.mark.parametrize("guard", GUARDS)
def test_headers_must_arrive_within_the_deadline(guard: Callable[..., Any]) -> None:
    with _serving(guard) as (port, _):
        silent, half = _connect(port), _connect(port, HALF)
        kept = _connect(port, GET)
        answer, closed = _read(kept, 0.2)
        assert answer.startswith(b"HTTP/1.1 200") and not closed
        assert _read(silent, 3)[1] and _read(half, 3)[1]
        # a keep-alive connection waits for the next headers under the deadline again
        answer, closed = _read(kept, 3 * DEADLINE)
        assert closed
        # headers in time, then a body slower than the header deadline: answered
        slow = _connect(port, b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab")
        time.sleep(2 * DEADLINE)
        slow.sendall(b"cd")
        answer, closed = _read(slow, DEADLINE / 2)
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\n4")
        assert not closed
        for sock in (silent, half, kept, slow):
            sock.close()


@pytest.mark.parametrize("guard", GUARDS)
def test_keep_alive_and_pipelined_requests_are_served(guard: Callable[..., Any]) -> None:
    with _serving(guard) as (port, _):
        sock = _connect(port, GET)
        for _ in range(3):  # each answered within the deadline, on one connection
            time.sleep(DEADLINE / 2)
            answer, closed = _read(sock, DEADLINE / 4)
            assert answer.startswith(b"HTTP/1.1 200") and not closed
            sock.sendall(GET)
        sock.close()
        body = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
        piped = _connect(port, body + GET + body + HALF)
        answer, closed = _read(piped, 3)
        assert answer.count(b"HTTP/1.1 200") == 3 and closed  # then the half request is cut
        piped.close()


@pytest.mark.parametrize("guard", GUARDS)
def test_the_oldest_connection_waiting_for_headers_makes_room(
    guard: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    log = RateLimitedLog(logger=logging.getLogger("test.guards"))
    with _serving(guard, max_connections=3, log=log) as (port, _):
        oldest = _connect(port, HALF)
        time.sleep(0.05)
        younger = _connect(port, HALF)
        kept = _connect(port, GET)
        assert _read(kept, 0.2)[0].startswith(b"HTTP/1.1 200")
        with caplog.at_level(logging.WARNING, logger="test.guards"):
            newest = _connect(port, GET)
            answer, closed = _read(newest, 0.3)
        assert answer.startswith(b"HTTP/1.1 200") and not closed
        assert _read(oldest, 0.1) == (b"", True)
        assert "closed the oldest one" in caplog.text
        for sock in (oldest, younger, kept, newest):
            sock.close()


@pytest.mark.parametrize("guard", GUARDS)
def test_a_connection_over_the_limit_of_busy_ones_gets_503(
    guard: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    log = RateLimitedLog(logger=logging.getLogger("test.guards"))
    with _serving(guard, max_connections=2, log=log) as (port, app):
        busy = [_connect(port, b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n") for _ in range(2)]
        time.sleep(2 * DEADLINE)  # busy with a request: the header deadline does not apply
        with caplog.at_level(logging.WARNING, logger="test.guards"):
            refused = _connect(port, GET)
            answer, closed = _read(refused, 1)
        assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1")
        assert closed and "refusing new ones (503)" in caplog.text
        app.release.set()
        for sock in busy:
            answer, closed = _read(sock, DEADLINE / 4)
            assert answer.startswith(b"HTTP/1.1 200") and not closed
            sock.close()
        refused.close()


@pytest.mark.parametrize("guard", GUARDS)
def test_an_answer_before_the_body_is_in_does_not_start_the_deadline(
    guard: Callable[..., Any],
) -> None:
    with _serving(guard) as (port, _):
        sock = _connect(port, b"POST /early HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
        answer, closed = _read(sock, 0.2)
        assert answer.startswith(b"HTTP/1.1 413") and not closed
        for _ in range(4):  # the rest of the body, slower than the header deadline
            time.sleep(DEADLINE / 2)
            sock.sendall(b"ab")
        sock.sendall(GET)
        answer, closed = _read(sock, 0.3)
        assert answer.startswith(b"HTTP/1.1 200") and not closed
        assert _read(sock, 3 * DEADLINE)[1]  # and then the deadline again
        sock.close()
