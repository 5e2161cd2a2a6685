"""OTLP/gRPC receiver: grpcio's server with opentelemetry-proto's ``TraceService``.

The ``Export`` method is registered with a raw-bytes request deserializer, so a body that is
not a valid ``ExportTraceServiceRequest`` is answered with ``INVALID_ARGUMENT`` and a message
(grpcio's own deserializer failure would be an opaque ``INTERNAL``). Spans with invalid ids are
reported through OTLP partial success; a request whose spans are all invalid is
``INVALID_ARGUMENT``; a store failure or shutdown is ``UNAVAILABLE`` (exporters retry it).
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

from .http_server import DEFAULT_MAX_BODY
from .ingest.otlp_proto import decode_request, parse_request
from .ingestor import Ingestor

__all__ = ["TraceService", "start_grpc_server"]

_SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
_ACK_TIMEOUT = 60.0


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    """``TraceService/Export`` writing through an :class:`Ingestor`."""

    def __init__(self, ingestor: Ingestor) -> None:
        self._ingestor = ingestor

    def Export(self, request: Any, context: Any) -> Any:
        batch = decode_request(request)
        if batch.rejected and not batch.spans:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"every span was rejected: {batch.error}")
        try:
            self._ingestor.submit(batch.spans).result(timeout=_ACK_TIMEOUT)
        except Exception as exc:
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          f"the spans could not be stored ({exc}); retry later.")
        reply = ExportTraceServiceResponse()
        if batch.rejected:
            reply.partial_success.rejected_spans = batch.rejected
            reply.partial_success.error_message = batch.error or ""
        return reply

    def export_raw(self, body: bytes, context: Any) -> Any:
        """Parse the request bytes ourselves so bad input is INVALID_ARGUMENT, then export."""
        try:
            request = parse_request(body)
        except TraceFormatError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"the request {exc}")
        return self.Export(request, context)


def start_grpc_server(
    ingestor: Ingestor,
    host: str = "127.0.0.1",
    port: int = 4317,
    *,
    max_message_bytes: int = DEFAULT_MAX_BODY,
    workers: int = 8,
) -> tuple[Any, int]:
    """Start the gRPC server; returns it and the port it bound (useful with port 0)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="spanguard-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
    )
    service = TraceService(ingestor)
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
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot listen for OTLP/gRPC on {host}:{port}")
    server.start()
    return server, bound
