"""Connection limits: slow, idle or too many clients cannot take the server's file descriptors.

* **Descriptor budget** (:func:`connection_budget`): the soft ``RLIMIT_NOFILE`` is raised to the
  hard limit at start; 64 descriptors are kept for the store, pipes and the runtimes, and one
  accept burst more (asyncio accepts up to the listen backlog at once, before any limit can
  act: the backlog is an eighth of the limit, at most 2,048); the rest is shared between the
  receivers, so neither can run the process out of descriptors (and a flood on one port leaves
  the other serving).
* **HTTP** (:func:`guarded_http`: uvicorn's httptools protocol, :func:`guarded_httptools`, or
  its h11 one, :func:`guarded_h11`, when ``httptools`` is missing; the guards are shared,
  :class:`_Guard`): a connection must deliver its request headers within ``header_timeout``
  seconds (also between keep-alive requests; uvicorn closes idle keep-alive
  connections after 5 s). At the connection limit the oldest connection still waiting for
  headers is closed to make room — a slow client cannot keep a real one out — and when every
  connection is busy with a request, the new one gets 503 with ``Retry-After`` and is closed.
  The body has its own deadline (``http_server.BODY_TIMEOUT``).
* **gRPC** (:func:`grpc_options`): at most the budget of incoming connections, a handshake
  deadline, idle connections closed after a minute (exporters reconnect transparently), at
  most 100 concurrent streams per connection.
* **Logging**: refusals and descriptor exhaustion (``accept`` failing with ``EMFILE`` — asyncio
  then pauses accepting for a second and recovers by itself) are logged as one line at most
  every 10 s, with how many happened since, never a traceback per connection.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # imported when used: the gRPC receiver loads without the HTTP stack
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "FD_RESERVE",
    "HEADER_TIMEOUT",
    "RateLimitedLog",
    "connection_budget",
    "grpc_options",
    "guarded_h11",
    "guarded_http",
    "guarded_httptools",
    "loop_exception_handler",
]

_log = logging.getLogger(__name__)

FD_RESERVE = 64
HEADER_TIMEOUT = 10.0
GRPC_IDLE_MS = 60_000
GRPC_HANDSHAKE_MS = 10_000
GRPC_STREAMS = 100
_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
    b"Connection: close\r\n\r\n"
)
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class RateLimitedLog:
    """A warning at most every ``interval`` seconds per kind, counting what it held back."""

    def __init__(self, interval: float = 10.0, logger: logging.Logger = _log) -> None:
        self.interval = interval
        self._logger = logger
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def warning(self, kind: str, message: str) -> None:
        now = time.monotonic()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.interval:
                self._held[kind] = self._held.get(kind, 0) + 1
                return
            held = self._held.pop(kind, 0)
            self._last[kind] = now
        more = f" ({held} more like it in the last {self.interval:.0f} s)" if held else ""
        self._logger.warning("%s%s", message, more)


def connection_budget(receivers: int) -> tuple[int, int]:
    """Raise the soft descriptor limit to the hard one; returns the connections each receiver
    may hold and the HTTP listen backlog."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = 1 << 20 if hard == resource.RLIM_INFINITY else hard
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    backlog = max(16, min(2048, soft // 8))
    return max(8, (soft - FD_RESERVE - backlog) // max(1, receivers)), backlog


def grpc_options(max_connections: int) -> list[tuple[str, int]]:
    """grpc server options enforcing the limits above."""
    return [
        ("grpc.max_allowed_incoming_connections", max_connections),
        ("grpc.server_handshake_timeout_ms", GRPC_HANDSHAKE_MS),
        ("grpc.max_connection_idle_ms", GRPC_IDLE_MS),
        ("grpc.max_concurrent_streams", GRPC_STREAMS),
    ]


def loop_exception_handler(
    log: RateLimitedLog,
) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An asyncio exception handler: descriptor exhaustion is one rate-limited line."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _EXHAUSTED:
            log.warning(
                "accept",
                f"OTLP/HTTP cannot accept connections ({exc.strerror}); "
                "new connections wait until descriptors are free.",
            )
            return
        loop.default_exception_handler(context)

    return handle


class _Limits:
    """What the connections of one HTTP server share: the limits, and who waits for headers."""

    def __init__(
        self, max_connections: int, header_timeout: float, log: RateLimitedLog | None
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout = header_timeout
        self.log = log if log is not None else RateLimitedLog()
        self.waiting: OrderedDict[_Guard, None] = OrderedDict()  # oldest first


class _Guard(asyncio.Protocol):
    """The header deadline and the connection limit, mixed in before a uvicorn protocol class.

    The protocol says when its connection waits for request headers (``_awaiting_headers``),
    calls ``_disarm`` once they are in and ``_rearm`` when a request or response ends.
    """

    _limits: ClassVar[_Limits]
    _timer: asyncio.TimerHandle | None = None
    if TYPE_CHECKING:  # set by the uvicorn protocol
        connections: set[Any]
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport

    def _awaiting_headers(self) -> bool:
        raise NotImplementedError

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        limits = self._limits
        if len(self.connections) > limits.max_connections:
            victim = next(iter(limits.waiting), None)
            if victim is not None:
                victim._close()
                limits.log.warning(
                    "http-limit",
                    f"OTLP/HTTP is at its limit of {limits.max_connections} "
                    "connections; closed the oldest one still sending its headers.",
                )
            else:
                limits.log.warning(
                    "http-limit",
                    f"OTLP/HTTP is at its limit of {limits.max_connections} "
                    "busy connections; refusing new ones (503).",
                )
                self.transport.write(_REFUSAL)
                self._close()
                return
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._limits.waiting[self] = None
        self._timer = self.loop.call_later(self._limits.header_timeout, self._header_timeout)

    def _rearm(self) -> None:
        if not self.transport.is_closing() and self._awaiting_headers():
            self._arm()

    def _disarm(self) -> None:
        self._limits.waiting.pop(self, None)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _close(self) -> None:
        self._disarm()
        self.connections.discard(self)
        if not self.transport.is_closing():
            self.transport.close()

    def _header_timeout(self) -> None:
        self._timer = None
        if self._awaiting_headers():
            self._close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


def guarded_h11(
    max_connections: int, header_timeout: float = HEADER_TIMEOUT, log: RateLimitedLog | None = None
) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a header deadline and a connection limit (see above)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class Guarded(_Guard, H11Protocol):
        _limits = _Limits(max_connections, header_timeout, log)

        def _awaiting_headers(self) -> bool:
            return self.conn.their_state is h11.IDLE  # h11 parses nothing before the headers

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._awaiting_headers():
                self._disarm()  # the headers are in; the body has its own deadline

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._rearm()

    return Guarded


def guarded_httptools(
    max_connections: int, header_timeout: float = HEADER_TIMEOUT, log: RateLimitedLog | None = None
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools (C parser) protocol with the same guards as :func:`guarded_h11`.

    A connection waits for headers from its start, and again once both the last request's
    body is in and its response is out: a response sent before the body has arrived (413,
    401) does not arm the deadline under a client still uploading, and pipelined requests
    whose headers are already parsed keep it disarmed.
    """
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class Guarded(_Guard, HttpToolsProtocol):
        _limits = _Limits(max_connections, header_timeout, log)
        _message_done = True  # the last request's body is in (or there was none yet)

        def _awaiting_headers(self) -> bool:
            cycle = self.cycle  # the latest request whose headers are in
            return self._message_done and (cycle is None or cycle.response_complete)

        def on_headers_complete(self) -> None:
            self._message_done = False
            self._disarm()  # the body has its own deadline
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._message_done = True
            self._rearm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._rearm()

    return Guarded


def guarded_http(
    max_connections: int, header_timeout: float = HEADER_TIMEOUT, log: RateLimitedLog | None = None
) -> type[asyncio.Protocol]:
    """:func:`guarded_httptools` when ``httptools`` is installed (a C parser: far less CPU per
    request), else :func:`guarded_h11`."""
    try:
        import httptools  # noqa: F401
    except ImportError:
        return guarded_h11(max_connections, header_timeout, log)
    return guarded_httptools(max_connections, header_timeout, log)
