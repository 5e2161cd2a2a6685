"""Run the real ``rotel`` collector (PyPI ``rotel``) and a tiny OTLP/gRPC sink, for tests.

Usage::

    with OtlpGrpcSink() as sink, RotelCollector(export_to=sink.endpoint) as rotel:
        # send OTLP to rotel.grpc_endpoint ("http://127.0.0.1:P") or rotel.http_endpoint
        sink.wait_for_spans(n)

``RotelCollector`` starts ``rotel-agent start`` in the foreground (not ``--daemon``) with its
OTLP gRPC and HTTP receivers on free 127.0.0.1 ports and its OTLP exporter pointed at
``export_to`` (gRPC by default, ``export_protocol="http"`` for OTLP/HTTP). It waits until both
receiver ports accept connections, and on exit terminates the process and waits for it. The
collector's own log goes to ``<tmp>/rotel.log`` (see :attr:`RotelCollector.log`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

__all__ = ["OtlpGrpcSink", "RotelCollector", "free_port", "rotel_binary"]


def rotel_binary() -> Path:
    """The ``rotel-agent`` binary shipped inside the ``rotel`` wheel."""
    import rotel

    path = Path(rotel.__file__).parent / "rotel-agent"
    if not path.is_file():
        raise RuntimeError(f"the rotel package at {path.parent} ships no rotel-agent binary")
    if not os.access(path, os.X_OK):
        path.chmod(path.stat().st_mode | 0o111)
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, process: subprocess.Popen[bytes], timeout: float, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"rotel exited with code {process.returncode}: "
                f"{log.read_text(errors='replace')[-2000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"rotel did not open port {port} within {timeout} s")


class _Collector(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
    def __init__(self, sink: OtlpGrpcSink) -> None:
        self._sink = sink

    def Export(self, request: Any, context: Any) -> Any:
        self._sink._add(request)
        return trace_service_pb2.ExportTraceServiceResponse()


class OtlpGrpcSink:
    """A real OTLP/gRPC trace receiver on 127.0.0.1 that keeps every request in memory."""

    def __init__(self) -> None:
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Collector(self), self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.requests: list[Any] = []
        self._changed = threading.Condition()

    def _add(self, request: Any) -> None:
        with self._changed:
            self.requests.append(request)
            self._changed.notify_all()

    def spans(self) -> list[Any]:
        """Every received span (protobuf ``Span``), in arrival order."""
        with self._changed:
            requests = list(self.requests)
        return [
            span
            for req in requests
            for rs in req.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]

    def resources(self) -> Iterator[Any]:
        with self._changed:
            requests = list(self.requests)
        for req in requests:
            for rs in req.resource_spans:
                yield rs.resource

    def wait_for_spans(self, count: int, timeout: float = 20.0) -> list[Any]:
        """Block until at least ``count`` spans arrived; return them (fewer on timeout)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                total = sum(
                    len(ss.spans)
                    for req in self.requests
                    for rs in req.resource_spans
                    for ss in rs.scope_spans
                )
                remaining = deadline - time.monotonic()
                if total >= count or remaining <= 0:
                    break
                self._changed.wait(remaining)
        return self.spans()

    def __enter__(self) -> OtlpGrpcSink:
        self._server.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.stop(grace=None).wait()


class RotelCollector:
    """The rotel collector as a subprocess: OTLP in (gRPC + HTTP), OTLP out to ``export_to``."""

    def __init__(
        self, export_to: str, *, export_protocol: str = "grpc", extra_args: tuple[str, ...] = ()
    ) -> None:
        self.grpc_port = free_port()
        self.http_port = free_port()
        while self.http_port == self.grpc_port:
            self.http_port = free_port()
        self.grpc_endpoint = f"http://127.0.0.1:{self.grpc_port}"
        self.http_endpoint = f"http://127.0.0.1:{self.http_port}"
        self._export_to = export_to
        self._protocol = export_protocol
        self._extra = extra_args
        self._tmp = tempfile.TemporaryDirectory(prefix="rotel-")
        self.log = Path(self._tmp.name) / "rotel.log"
        self._process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        tmp = Path(self._tmp.name)
        return [
            str(rotel_binary()),
            "start",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{self.grpc_port}",
            "--otlp-http-endpoint",
            f"127.0.0.1:{self.http_port}",
            "--exporter",
            "otlp",
            "--otlp-exporter-endpoint",
            self._export_to,
            "--otlp-exporter-protocol",
            self._protocol,
            "--batch-timeout",
            "50ms",
            "--pid-file",
            str(tmp / "rotel.pid"),
            "--log-file",
            str(tmp / "rotel-daemon.log"),
            *self._extra,
        ]

    def __enter__(self) -> RotelCollector:
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        try:
            _wait_port(self.grpc_port, self._process, 15.0, self.log)
            _wait_port(self.http_port, self._process, 15.0, self.log)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._tmp.cleanup()
