"""Hostile clients of a running processor, shared by the reliability tests and
``bench/load_hostile.py`` (which runs the same cases at full size): requests of many tiny spans,
half-sent HTTP requests, idle gRPC connections, a ``/health`` watcher, the server's RSS and its
stderr."""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import time
from pathlib import Path

import grpc
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.serve_process import ServeProcess

from .servers import EXPORT, PROTO


def tiny_spans_request(count: int, seed: int) -> bytes:
    """One OTLP request of ``count`` minimal spans (ids and a start time: ~39 bytes each)."""
    rnd = random.Random(seed)
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for _ in range(count):
        span = spans.add()
        span.trace_id = rnd.randbytes(16)
        span.span_id = rnd.randbytes(8)
        span.start_time_unix_nano = 1
    return bytes(request.SerializeToString())


def slow_http_clients(port: int, count: int) -> list[socket.socket]:
    """Connections that send half a request's headers and then nothing (those the server
    refuses to accept are left out)."""
    clients = []
    for _ in range(count):
        sock = socket.socket()
        sock.settimeout(2)
        try:
            sock.connect(("127.0.0.1", port))
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ")
        except OSError:
            sock.close()
            continue
        clients.append(sock)
    return clients


def idle_grpc_channels(port: int, count: int) -> list[grpc.Channel]:
    """Connected gRPC channels (one TCP connection each) that never call anything."""
    channels = []
    for _ in range(count):
        channel = grpc.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        with contextlib.suppress(grpc.FutureTimeoutError):
            grpc.channel_ready_future(channel).result(timeout=2)
        channels.append(channel)
    return channels


def watch_health(
    url: str, stop: threading.Event, latencies: list[float], interval: float = 0.1
) -> None:
    """Until ``stop`` is set, GET ``/health`` every ``interval`` seconds and append how long
    each answer took (infinity for an error or a status other than 200)."""
    with httpx.Client(timeout=30) as client:
        while not stop.is_set():
            start = time.monotonic()
            try:
                ok = client.get(url + "/health").status_code == 200
            except httpx.HTTPError:
                ok = False
            latencies.append(time.monotonic() - start if ok else float("inf"))
            stop.wait(interval)


def export_http(url: str, body: bytes, timeout: float = 120) -> tuple[int, float]:
    """POST one protobuf request: its HTTP status and how long the answer took."""
    start = time.monotonic()
    reply = httpx.post(url + "/v1/traces", content=body, headers=PROTO, timeout=timeout)
    return reply.status_code, time.monotonic() - start


def export_grpc(channel: grpc.Channel, body: bytes, timeout: float = 120) -> tuple[str, float]:
    """Call ``Export`` with one serialized request: the status code's name and the time."""
    start = time.monotonic()
    try:
        channel.unary_unary(EXPORT)(body, timeout=timeout)
        code = "OK"
    except grpc.RpcError as exc:
        code = exc.code().name
    return code, time.monotonic() - start


def rss_mib(pid: int, key: str = "VmHWM") -> float:
    """A process's peak (``VmHWM``) or current (``VmRSS``) resident memory, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {key} in /proc/{pid}/status")


def serves(
    url: str, grpc_port: int, http_body: bytes, grpc_body: bytes, timeout: float = 5
) -> tuple[float, bool, bool]:
    """``/health``'s latency (infinity if it failed), and whether an HTTP and a gRPC export,
    each on a fresh connection, succeed."""
    start = time.monotonic()
    try:
        healthy = httpx.get(url + "/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        healthy = False
    latency = time.monotonic() - start if healthy else float("inf")
    try:
        http_ok = export_http(url, http_body, timeout)[0] == 200
    except httpx.HTTPError:
        http_ok = False
    with grpc.insecure_channel(
        f"127.0.0.1:{grpc_port}", options=[("grpc.use_local_subchannel_pool", 1)]
    ) as channel:
        grpc_ok = export_grpc(channel, grpc_body, timeout)[0] == "OK"
    return latency, http_ok, grpc_ok


class StderrLog:
    """What a :class:`ServeProcess` writes to stderr, read on a thread while it runs (so a
    flood cannot block it); :meth:`stop` ends the process with SIGTERM and returns it all."""

    def __init__(self, server: ServeProcess) -> None:
        self.server = server
        self.lines: list[str] = []
        stream = server.proc.stderr
        assert stream is not None
        self._reader = threading.Thread(target=self.lines.extend, args=(stream,))
        self._reader.start()

    def stop(self, timeout: float = 60) -> str:
        proc = self.server.proc
        proc.terminate()
        proc.wait(timeout)
        self._reader.join(timeout)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        return "".join(self.lines)
