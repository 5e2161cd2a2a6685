"""OTLP/gRPC receiver: grpcio's server with opentelemetry-proto's ``TraceService``.

The ``Export`` method is registered with a raw-bytes request deserializer, so a body that is
not a valid ``ExportTraceServiceRequest`` is answered with ``INVALID_ARGUMENT`` and a message
(grpcio's own deserializer failure would be an opaque ``INTERNAL``). Spans with invalid ids are
reported through OTLP partial success; a request whose spans are all invalid is
``INVALID_ARGUMENT``; a store failure, a store slower than the acknowledgement timeout or
shutdown is ``UNAVAILABLE`` and too many spans waiting for the store is ``RESOURCE_EXHAUSTED``
(exporters retry both) — decided before decoding, from the body's size and then the exact span
count read off the wire format; a request with more spans than ``--max-pending-spans`` is
``RESOURCE_EXHAUSTED`` too, saying so. With a token, calls without it are ``UNAUTHENTICATED``;
with a certificate, the port speaks TLS only.
"""

from __future__ import annotations

from concurrent import futures
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from spanguard.exceptions import TraceFormatError

from ..ingest.otlp_proto import MIN_SPAN_BYTES, count_spans, parse_request
from .connections import grpc_options
from .ingestor import Ingestor
from .limits import DEFAULT_MAX_BODY, Guard, Overloaded, Reservation, TooLarge
from .redaction import RedactionFailed
from .security import Security, TokenInterceptor

__all__ = ["TraceService", "start_grpc_server"]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    """``TraceService/Export`` writing through an :class:`Ingestor`."""

    def __init__(self, ingestor: Ingestor, guard: Guard | None = None) -> None:
        self._ingestor = ingestor
        self._guard = guard if guard is not None else Guard()

    def Export(self, request: Any, context: Any, body: bytes | None = None,
               reservation: Reservation | None = None) -> Any:
        guard = self._guard
        if reservation is None:
            reservation = self._admit(request.ByteSize(), context)
        try:
            return self._export(request, context, body, reservation)
        finally:
            if not reservation.owned:
                guard.release(reservation)

    def _admit(self, size: int, context: Any) -> Reservation:
        try:
            return self._guard.admit(-(-size // MIN_SPAN_BYTES))
        except Overloaded as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                          f"the processor is overloaded: {exc}")
            raise  # not reached: abort raises

    def _export(self, request: Any, context: Any, body: bytes | None,
                reservation: Reservation) -> Any:
        guard = self._guard
        try:
            batch = guard.shape_and_decode(request, body)
        except RedactionFailed as exc:
            context.abort(grpc.StatusCode.INTERNAL, f"{exc}; the spans were not stored.")
        try:
            guard.resize(reservation, len(batch.spans))  # only the valid spans are kept
        except (TooLarge, Overloaded) as exc:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        rejected, error = batch.rejected, batch.error
        if rejected and not batch.spans:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"every span was rejected: {error}")
        try:
            future = guard.submit(lambda: self._ingestor.submit(batch), reservation)
            future.result(timeout=guard.limits.ack_timeout)
        except Exception as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"the spans could not be stored ({exc or 'the store is slow'}); "
                          "retry later.")
        reply = ExportTraceServiceResponse()
        if rejected:
            reply.partial_success.rejected_spans = rejected
            reply.partial_success.error_message = error or ""
        return reply

    def export_raw(self, body: bytes, context: Any) -> Any:
        """Admit the request on its size and exact span count, then parse it ourselves so bad
        input is INVALID_ARGUMENT, then export."""
        reservation = self._admit(len(body), context)
        try:
            try:
                self._guard.resize(reservation,
                                   count_spans(body, self._guard.limits.max_pending_spans))
            except TraceFormatError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the request {exc}")
            except TooLarge as exc:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
            except Overloaded as exc:
                context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                              f"the processor is overloaded: {exc}")
            try:
                request = parse_request(body)
            except TraceFormatError as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the request {exc}")
        except BaseException:
            self._guard.release(reservation)
            raise
        return self.Export(request, context, body, reservation)


def start_grpc_server(
    ingestor: Ingestor,
    host: str = "127.0.0.1",
    port: int = 4317,
    *,
    max_message_bytes: int = DEFAULT_MAX_BODY,
    workers: int = 8,
    guard: Guard | None = None,
    security: Security | None = None,
    max_connections: int = 1000,
) -> tuple[Any, int]:
    """Start the gRPC server; returns it and the port it bound (useful with port 0)."""
    security = security if security is not None else Security()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spanguard-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
            *grpc_options(max_connections),
        ],
        maximum_concurrent_rpcs=4 * workers,
        interceptors=[TokenInterceptor(security.token)] if security.token else None,
    )
    service = TraceService(ingestor, guard)
    handler = grpc.method_handlers_generic_handler(
        _SERVICE,
        {
            "Export": grpc.unary_unary_rpc_method_handler(
                service.export_raw,
                request_deserializer=None,
                response_serializer=ExportTraceServiceResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
    address = f"{host}:{port}"
    bound = (server.add_secure_port(address, security.grpc_credentials()) if security.tls
             else server.add_insecure_port(address))
    if bound == 0:
        raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}")
    server.start()
    return server, bound
