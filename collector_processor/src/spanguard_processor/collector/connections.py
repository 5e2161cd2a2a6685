"""Connection limits: slow, idle or too many clients cannot take the server's file descriptors.

* **Descriptor budget** (:func:`connection_budget`): the soft ``RLIMIT_NOFILE`` is raised to the
  hard limit at start; 64 descriptors are kept for the store, pipes and the runtimes, and one
  accept burst more (asyncio accepts up to the listen backlog at once, before any limit can
  act: the backlog is an eighth of the limit, at most 2,048); the rest is shared between the
  receivers, so neither can run the process out of descriptors (and a flood on one port leaves
  the other serving).
* **HTTP** (:func:`guarded_h11`): a connection must deliver its request headers within
  ``header_timeout`` seconds (also between keep-alive requests; uvicorn closes idle keep-alive
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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: the gRPC receiver loads without the HTTP stack
    from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "FD_RESERVE",
    "HEADER_TIMEOUT",
    "RateLimitedLog",
    "connection_budget",
    "grpc_options",
    "guarded_h11",
    "loop_exception_handler",
]

_log = logging.getLogger(__name__)

FD_RESERVE = 64
HEADER_TIMEOUT = 10.0
GRPC_IDLE_MS = 60_000
GRPC_HANDSHAKE_MS = 10_000
GRPC_STREAMS = 100
_REFUSAL = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n")
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


def loop_exception_handler(log: RateLimitedLog
                           ) -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An asyncio exception handler: descriptor exhaustion is one rate-limited line."""

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _EXHAUSTED:
            log.warning("accept", f"OTLP/HTTP cannot accept connections ({exc.strerror}); "
                                  "new connections wait until descriptors are free.")
            return
        loop.default_exception_handler(context)

    return handle


def guarded_h11(max_connections: int, header_timeout: float = HEADER_TIMEOUT,
                log: RateLimitedLog | None = None) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a header deadline and a connection limit (see above)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    limit_log = log if log is not None else RateLimitedLog()
    waiting: OrderedDict[Guarded, None] = OrderedDict()  # waiting for headers, oldest first

    class Guarded(H11Protocol):
        _timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                victim = next(iter(waiting), None)
                if victim is not None:
                    victim._close()
                    limit_log.warning(
                        "http-limit", f"OTLP/HTTP is at its limit of {max_connections} "
                                      "connections; closed the oldest one still sending "
                                      "its headers.")
                else:
                    limit_log.warning(
                        "http-limit", f"OTLP/HTTP is at its limit of {max_connections} "
                                      "busy connections; refusing new ones (503).")
                    transport.write(_REFUSAL)
                    self._close()
                    return
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            waiting[self] = None
            self._timer = self.loop.call_later(header_timeout, self._header_timeout)

        def _disarm(self) -> None:
            waiting.pop(self, None)
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
            if self.conn.their_state is h11.IDLE:
                self._close()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm()  # the headers are in; the body has its own deadline

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return Guarded
