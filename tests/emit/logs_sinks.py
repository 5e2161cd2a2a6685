"""Real OTLP log receivers for tests, on 127.0.0.1: OTLP/HTTP (``POST /v1/logs``, protobuf,
gzip) and OTLP/gRPC (``LogsService/Export``). Each decodes every ``ExportLogsServiceRequest``
and keeps the log records, with their resource, in memory."""

from __future__ import annotations

import gzip
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["GrpcLogsSink", "HttpLogsSink", "Received"]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


@dataclass(frozen=True)
class Received:
    """One log record as received: hex ids ('' when absent), event name and attributes."""

    trace_id: str
    span_id: str
    event_name: str
    attributes: dict[str, Any]
    service: str


class _Sink:
    def __init__(self) -> None:
        self.records: list[Received] = []
        self.requests = 0
        self._changed = threading.Condition()

    def add(self, request: logs_service_pb2.ExportLogsServiceRequest) -> None:
        found = []
        for resource_logs in request.resource_logs:
            resource = {kv.key: _value(kv.value) for kv in resource_logs.resource.attributes}
            for scope_logs in resource_logs.scope_logs:
                for record in scope_logs.log_records:
                    found.append(
                        Received(
                            record.trace_id.hex(),
                            record.span_id.hex(),
                            record.event_name,
                            {kv.key: _value(kv.value) for kv in record.attributes},
                            str(resource.get("service.name", "")),
                        )
                    )
        with self._changed:
            self.requests += 1
            self.records.extend(found)
            self._changed.notify_all()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.records) < count and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            return list(self.records)


class _Handler(BaseHTTPRequestHandler):
    sink: HttpLogsSink

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        if self.path == "/v1/traces":  # kept whole, as received
            self.sink.trace_bodies.append(body)
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        elif self.path == "/v1/logs":
            request = logs_service_pb2.ExportLogsServiceRequest()
            request.ParseFromString(body)
            self.sink.log_bodies.append(body)
            self.sink.add(request)
            reply = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class HttpLogsSink(_Sink):
    """``POST /v1/logs`` (and ``/v1/traces``, kept as received) on 127.0.0.1; ``url`` is the
    OTLP/HTTP base."""

    def __init__(self) -> None:
        super().__init__()
        self.trace_bodies: list[bytes] = []
        self.log_bodies: list[bytes] = []
        handler = type("Handler", (_Handler,), {"sink": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HttpLogsSink:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Logs(logs_service_pb2_grpc.LogsServiceServicer):  # type: ignore[misc]
    def __init__(self, sink: _Sink) -> None:
        self._sink = sink

    def Export(self, request: Any, context: Any) -> Any:
        self._sink.add(request)
        return logs_service_pb2.ExportLogsServiceResponse()


class GrpcLogsSink(_Sink):
    """``LogsService/Export`` on 127.0.0.1; ``endpoint`` is ``http://127.0.0.1:P``."""

    def __init__(self) -> None:
        super().__init__()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_Logs(self), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> GrpcLogsSink:
        self._server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.stop(grace=None).wait()
