"""OTLP/gRPC receiver: a ``grpc.aio`` server answering ``TraceService/Export``.

``LogsService/Export`` is the same service for log records (put in the span form first,
``collector/logs_receive.py``), sharing its per-connection cap.

Admission comes before any work, so no client can hold what another one needs:

* the server is asynchronous (its own event loop, on its own thread): a call waiting for its
  message holds no thread, only a coroutine;
* with a token, a call without it ends ``UNAUTHENTICATED`` in an interceptor, from its
  headers, before its message is read (:class:`~spanguard_processor.collector.security.
  TokenInterceptor`);
* at most ``calls_per_connection`` calls of one connection (one client address *and port*, so
  the clients behind one collector or NAT are not counted together) are in flight at once;
  more end ``RESOURCE_EXHAUSTED`` at once;
* a call's request message must arrive within ``read_timeout`` seconds of the call, or it ends
  ``DEADLINE_EXCEEDED``.

``Export`` then runs the pipeline both receivers share (``collector/receive.Receiver``) and maps
its refusals to status codes. It is registered as a stream of raw bytes (the wire format of a
unary call is the same), so the message is read under the deadline and a body that is not a
valid ``ExportTraceServiceRequest`` is answered with ``INVALID_ARGUMENT`` and a message.
Spans with invalid ids are reported through OTLP partial success; a request whose spans are
all invalid is ``INVALID_ARGUMENT``; a store failure, a store slower than the acknowledgement
timeout or shutdown is ``UNAVAILABLE`` and too many spans waiting for the store is
``RESOURCE_EXHAUSTED`` (exporters retry both) — decided before decoding, from the body's size
and then the exact span count read off the wire format; a request with more spans than
``--max-pending-spans`` is ``RESOURCE_EXHAUSTED`` too, saying so; a failing redaction hook is
``INTERNAL``. Bodies over 256 KiB are decoded on a small pool of threads, off the event loop.
With a certificate, the port speaks TLS only.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from ..ingest.codec_protobuf import PROTOBUF_CODEC, export_response, logs_export_response
from .connections import grpc_options
from .limits import DEFAULT_MAX_BODY
from .logs_receive import LogsReceiver
from .os_threads import name_os_thread
from .receive import Received, Receiver, Refusal, Refused
from .security import Security, TokenInterceptor

__all__ = ["CALLS_PER_CONNECTION", "READ_TIMEOUT", "GrpcReceiver", "TraceService"]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
READ_TIMEOUT = 5.0  # seconds for a call's request message to arrive
CALLS_PER_CONNECTION = 32  # calls of one connection in flight at once
_INLINE_DECODE_MAX = 256 * 1024  # larger bodies decode on a worker thread

_CODES = {
    Refusal.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT,
    Refusal.TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Refusal.OVERLOADED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Refusal.REDACTION_FAILED: grpc.StatusCode.INTERNAL,
    Refusal.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}


class TraceService:
    """``TraceService/Export`` through the shared :class:`Receiver`, on the server's loop."""

    def __init__(
        self,
        receiver: Receiver,
        decoder: ThreadPoolExecutor,
        *,
        read_timeout: float = READ_TIMEOUT,
        calls_per_connection: int = CALLS_PER_CONNECTION,
        respond: Callable[[Any], Any] = export_response,
    ) -> None:
        self._receiver = receiver
        self._decoder = decoder
        self.read_timeout = read_timeout
        self.calls_per_connection = calls_per_connection
        self._respond = respond
        self.request_name = "ExportTraceServiceRequest"  # for messages
        self._in_flight: Counter[str] = Counter()  # per connection (peer address and port)

    def for_logs(self) -> TraceService:
        """``LogsService/Export``: the same service over a :class:`LogsReceiver`, sharing this
        one's calls in flight per connection (the cap counts both)."""
        logs = TraceService(
            LogsReceiver.beside(self._receiver),
            self._decoder,
            read_timeout=self.read_timeout,
            calls_per_connection=self.calls_per_connection,
            respond=logs_export_response,
        )
        logs._in_flight = self._in_flight
        logs.request_name = "ExportLogsServiceRequest"
        return logs

    async def Export(
        self,
        requests: AsyncIterator[bytes],
        context: grpc.aio.ServicerContext[bytes, ExportTraceServiceResponse],
    ) -> ExportTraceServiceResponse:
        """Export one serialized ``ExportTraceServiceRequest`` (read as raw bytes, so bad
        input is INVALID_ARGUMENT with a message, not INTERNAL)."""
        peer = context.peer()
        in_flight = self._in_flight
        if in_flight[peer] >= self.calls_per_connection:
            await _abort(
                context,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"more than {self.calls_per_connection} calls of this connection are "
                "in flight; wait for their answers.",
            )
        in_flight[peer] += 1
        try:
            body = await self._read(context)
            return await self._export(body, context)
        finally:
            in_flight[peer] -= 1
            if not in_flight[peer]:
                del in_flight[peer]

    async def _read(self, context: grpc.aio.ServicerContext[bytes, Any]) -> bytes:
        try:
            async with asyncio.timeout(self.read_timeout):
                body = await context.read()
        except TimeoutError:
            await _abort(
                context,
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"the request message did not arrive within {self.read_timeout:g} s.",
            )
        if not isinstance(body, bytes):  # grpc.aio.EOF: the client sent no message
            await _abort(
                context,
                grpc.StatusCode.INVALID_ARGUMENT,
                f"the call carried no {self.request_name}.",
            )
        return body

    async def _export(
        self, body: bytes, context: grpc.aio.ServicerContext[bytes, Any]
    ) -> ExportTraceServiceResponse:
        receiver = self._receiver
        try:
            reservation = receiver.admit(len(body))  # before any work
            try:
                received: Received
                if len(body) > _INLINE_DECODE_MAX:
                    received = await asyncio.get_running_loop().run_in_executor(
                        self._decoder,
                        lambda: receiver.receive(body, PROTOBUF_CODEC, reservation, what="request"),
                    )
                else:  # a millisecond or two: cheaper than a hop to a thread and back
                    received = receiver.receive(body, PROTOBUF_CODEC, reservation, what="request")
            finally:
                receiver.release_unless_stored(reservation)
            await receiver.wait_async(received)
        except Refused as refused:
            await _abort(context, _CODES[refused.kind], refused.message)
        response: ExportTraceServiceResponse = self._respond(received.batch)
        return response


def _serialize(response: Any) -> bytes:
    serialized: bytes = response.SerializeToString()
    return serialized


async def _abort(
    context: grpc.aio.ServicerContext[bytes, Any], code: grpc.StatusCode, message: str
) -> NoReturn:
    await context.abort(code, message)
    raise AssertionError("unreachable: abort raises")  # pragma: no cover


class GrpcReceiver:
    """The gRPC server on its own thread and event loop: :meth:`start`, :meth:`alive`,
    :meth:`ping`, :meth:`stop`."""

    def __init__(
        self,
        receiver: Receiver,
        host: str = "127.0.0.1",
        port: int = 4317,
        *,
        max_message_bytes: int = DEFAULT_MAX_BODY,
        workers: int = 2,
        security: Security | None = None,
        max_connections: int = 1000,
        read_timeout: float = READ_TIMEOUT,
        calls_per_connection: int = CALLS_PER_CONNECTION,
    ) -> None:
        self.host, self.port = host, port
        self._security = security if security is not None else Security()
        self._options = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
            *grpc_options(max_connections),
        ]
        self._decoder = ThreadPoolExecutor(
            max_workers=workers,
            thread_name_prefix="spanguard-grpc-decode",
            initializer=name_os_thread,
        )
        self.service = TraceService(
            receiver,
            self._decoder,
            read_timeout=read_timeout,
            calls_per_connection=calls_per_connection,
        )
        self.logs_service = self.service.for_logs()
        self._loop = asyncio.new_event_loop()
        self._server: grpc.aio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ended = threading.Event()  # the loop has returned (stopped or failed)
        self._stop_asked: asyncio.Event | None = None
        self._grace: float | None = None
        self.last_seen = time.monotonic()  # when the loop last ran a ping (ping())

    def _make_server(self) -> grpc.aio.Server:
        token = self._security.token
        server = grpc.aio.server(
            options=self._options, interceptors=[TokenInterceptor(token)] if token else None
        )
        handler = grpc.method_handlers_generic_handler(
            _SERVICE,
            {
                "Export": grpc.stream_unary_rpc_method_handler(
                    self.service.Export,
                    request_deserializer=None,
                    response_serializer=ExportTraceServiceResponse.SerializeToString,
                )
            },
        )
        logs = grpc.method_handlers_generic_handler(
            _LOGS_SERVICE,
            {
                "Export": grpc.stream_unary_rpc_method_handler(
                    self.logs_service.Export,
                    request_deserializer=None,
                    response_serializer=_serialize,
                )
            },
        )
        server.add_generic_rpc_handlers((handler, logs))
        address = f"{self.host}:{self.port}"
        bound = (
            server.add_secure_port(address, self._security.grpc_credentials())
            if self._security.tls
            else server.add_insecure_port(address)
        )
        if bound == 0:
            raise OSError(f"cannot listen for OTLP/gRPC on {address}")
        self.port = bound
        return server

    def start(self) -> int:
        """Bind and start serving on the receiver's thread; returns the bound port. Raises
        ``OSError`` (or grpcio's ``RuntimeError``) when the port cannot be bound."""
        started: list[BaseException | None] = []
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(started, ready), name="spanguard-grpc", daemon=True
        )
        self._thread.start()
        ready.wait()
        if started[0] is not None:
            self._thread.join()
            raise started[0]
        return self.port

    def _run(self, started: list[BaseException | None], ready: threading.Event) -> None:
        name_os_thread()
        try:
            self._loop.run_until_complete(self._main(started, ready))
        finally:
            self._ended.set()
            self._decoder.shutdown(wait=False)
            with contextlib.suppress(RuntimeError):
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    async def _main(self, started: list[BaseException | None], ready: threading.Event) -> None:
        """Serve until :meth:`stop` asks (then stop gracefully) or the server terminates."""
        stop_asked = self._stop_asked = asyncio.Event()
        try:
            server = self._server = self._make_server()
            await server.start()
        except BaseException as exc:
            started.append(exc)
            ready.set()
            return
        started.append(None)
        ready.set()
        asked = asyncio.ensure_future(stop_asked.wait())
        terminated = asyncio.ensure_future(server.wait_for_termination())
        await asyncio.wait((asked, terminated), return_when=asyncio.FIRST_COMPLETED)
        await server.stop(self._grace)
        for task in (asked, terminated):
            task.cancel()
        await asyncio.gather(asked, terminated, return_exceptions=True)

    def alive(self) -> bool:
        """Whether the server's loop still runs (it ends only when the server terminated)."""
        return self._thread is not None and not self._ended.is_set()

    def ping(self) -> None:
        """Ask the server's loop to note that it runs (:attr:`last_seen`); never blocks."""
        if self.alive():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._seen)

    def _seen(self) -> None:
        self.last_seen = time.monotonic()

    def stop(self, grace: float | None = None) -> None:
        """Stop accepting calls, let those in progress finish for ``grace`` seconds, and end
        the loop (idempotent)."""
        if self._thread is None:
            return
        if self.alive():
            self._grace = grace
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                stop_asked = self._stop_asked
                assert stop_asked is not None  # set before the server started
                self._loop.call_soon_threadsafe(stop_asked.set)
        self._thread.join((grace or 0) + 5)
