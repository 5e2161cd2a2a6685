"""In-process processors on 127.0.0.1 port 0, and a few span builders, for the reliability tests."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from spanguard_processor.collector.server import ProcessorServer, ServerConfig

PROTO = {"content-type": "application/x-protobuf"}
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@contextmanager
def running(store: Path, **config: Any) -> Iterator[ProcessorServer]:
    settings: dict[str, Any] = {"grpc_port": 0, "http_port": 0, "wait_duration": 0.05}
    settings.update(config)
    server = ProcessorServer(ServerConfig(store=store, **settings)).start()
    try:
        yield server
    finally:
        server.stop()


def spans_of_one_trace(count: int, attributes: int = 2, text: str = "") -> list[ReadableSpan]:
    """``count`` spans of one trace (a root and children), each with ``attributes`` attributes."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("reliability")
    attrs: dict[str, Any] = {f"attr.{i:03d}": i for i in range(attributes)}
    if text:
        attrs["input.value"] = text
        attrs["note"] = text
    with tracer.start_as_current_span("invoke_agent root", attributes=attrs):
        for index in range(count - 1):
            with tracer.start_as_current_span(f"child {index}", attributes=attrs):
                pass
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    assert len(spans) == count
    return spans


def request_bytes(spans: list[ReadableSpan]) -> bytes:
    return bytes(encode_spans(spans).SerializeToString())


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway certificate for 127.0.0.1 and localhost, made by the openssl command."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} print them) with a socket listening on port."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found
