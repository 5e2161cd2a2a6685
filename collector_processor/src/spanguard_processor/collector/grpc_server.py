"""OTLP/gRPC receiver: grpcio's server answering ``TraceService/Export``.

``Export`` runs the pipeline both receivers share (``collector/receive.Receiver``) and maps its
refusals to status codes. It is registered with a raw-bytes
request deserializer, so a body that is not a valid ``ExportTraceServiceRequest`` is answered
with ``INVALID_ARGUMENT`` and a message (grpcio's own deserializer failure would be an opaque
``INTERNAL``). Spans with invalid ids are reported through OTLP partial success; a request whose
spans are all invalid is ``INVALID_ARGUMENT``; a store failure, a store slower than the
acknowledgement timeout or shutdown is ``UNAVAILABLE`` and too many spans waiting for the store
is ``RESOURCE_EXHAUSTED`` (exporters retry both) — decided before decoding, from the body's size
and then the exact span count read off the wire format; a request with more spans than
``--max-pending-spans`` is ``RESOURCE_EXHAUSTED`` too, saying so; a failing redaction hook is
``INTERNAL``. With a token, calls without it are ``UNAUTHENTICATED``; with a certificate, the
port speaks TLS only."""

from __future__ import annotations

from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from .connections import grpc_options
from .limits import DEFAULT_MAX_BODY
from .os_threads import name_os_thread
from .receive import PROTOBUF, Receiver, Refusal, Refused, export_response
from .security import Security, TokenInterceptor

__all__ = ["TraceService", "start_grpc_server"]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"

_CODES = {
    Refusal.MALFORMED: grpc.StatusCode.INVALID_ARGUMENT,
    Refusal.TOO_LARGE: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Refusal.OVERLOADED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    Refusal.REDACTION_FAILED: grpc.StatusCode.INTERNAL,
    Refusal.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
}


class TraceService:
    """``TraceService/Export`` through the shared :class:`Receiver`."""

    def __init__(self, receiver: Receiver) -> None:
        self._receiver = receiver

    def Export(self, body: bytes, context: grpc.ServicerContext
               ) -> ExportTraceServiceResponse:
        """Export one serialized ``ExportTraceServiceRequest`` (registered without a
        deserializer, so bad input is INVALID_ARGUMENT with a message, not INTERNAL)."""
        receiver = self._receiver
        try:
            received = receiver.receive(body, PROTOBUF, receiver.admit(len(body)),
                                        what="request")
            receiver.wait(received)
        except Refused as refused:
            context.abort(_CODES[refused.kind], refused.message)
        return export_response(received.batch)


def start_grpc_server(
    receiver: Receiver,
    host: str = "127.0.0.1",
    port: int = 4317,
    *,
    max_message_bytes: int = DEFAULT_MAX_BODY,
    workers: int = 8,
    security: Security | None = None,
    max_connections: int = 1000,
) -> tuple[grpc.Server, int]:
    """Start the gRPC server; returns it and the port it bound (useful with port 0)."""
    security = security if security is not None else Security()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spanguard-grpc",
                                   initializer=name_os_thread),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
            *grpc_options(max_connections),
        ],
        maximum_concurrent_rpcs=4 * workers,
        interceptors=[TokenInterceptor(security.token)] if security.token else None,
    )
    service = TraceService(receiver)
    handler = grpc.method_handlers_generic_handler(
        _SERVICE,
        {
            "Export": grpc.unary_unary_rpc_method_handler(
                service.Export,
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
