"""Hostile load against a real ``spanguard serve``: the red-team cases of issue 15, full size.

1. **Large requests** — 4 concurrent 15 MiB OTLP protobuf requests of ~395k tiny spans each,
   over HTTP, then over gRPC. Reports each answer and how long it took, the slowest ``/health``
   answer while they ran (polled every 100 ms), and the server's peak RSS. Run twice: with the
   default ``--max-pending-spans`` (every request is over the per-request cap) and with a cap
   one request fits in (``--fit``: it is decoded and stored, the rest refused).
2. **Slow and idle clients** — ``--slow`` half-sent HTTP requests and ``--idle`` connected gRPC
   channels held for ``--seconds``, while health, an HTTP export and a gRPC export are tried
   every second on fresh connections. Reports failures, the slowest answers, and what the
   server wrote to stderr (bytes, tracebacks).

Acceptance (issue 15): peak RSS ≤ 512 MiB, health within 1 s throughout, refusals within 1 s;
slow/idle clients: every probe answered, no traceback flood.

    .venv/bin/python bench/load_hostile.py                 # ~2 minutes
    .venv/bin/python bench/load_hostile.py --seconds 30 --slow 2000 --idle 2000
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PROTO = {"content-type": "application/x-protobuf"}
ANNOUNCE = re.compile(r"gRPC on 127\.0\.0\.1:(\d+), OTLP/HTTP on http://127\.0\.0\.1:(\d+)/")

def tiny_request(count: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for _ in range(count):
        span = spans.add()
        span.trace_id = rnd.randbytes(16)
        span.span_id = rnd.randbytes(8)
        span.start_time_unix_nano = 1
    return bytes(request.SerializeToString())

class Server:
    def __init__(self, store: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "spanguard_processor", "serve", "--store", str(store),
             "--grpc-port", "0", "--http-port", "0", "--wait-duration", "0.2", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        match = ANNOUNCE.search(line)
        assert match, line
        self.grpc_port, self.http_port = int(match.group(1)), int(match.group(2))
        self.url = f"http://127.0.0.1:{self.http_port}"
        self.stderr: list[str] = []
        self._reader = threading.Thread(
            target=lambda: self.stderr.extend(self.proc.stderr))  # type: ignore[arg-type]
        self._reader.start()

    def rss(self, key: str = "VmHWM") -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> str:
        self.proc.terminate()
        self.proc.wait(60)
        self._reader.join(30)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return "".join(self.stderr)

def watch_health(url: str, stop: threading.Event, latencies: list[float]) -> None:
    while not stop.is_set():
        start = time.monotonic()
        try:
            ok = httpx.get(url + "/health", timeout=10).status_code == 200
        except httpx.HTTPError:
            ok = False
        latencies.append(time.monotonic() - start if ok else float("inf"))
        stop.wait(0.1)

def send_http(url: str, body: bytes) -> tuple[str, float]:
    start = time.monotonic()
    reply = httpx.post(url + "/v1/traces", content=body, headers=PROTO, timeout=120)
    return str(reply.status_code), time.monotonic() - start

def send_grpc(port: int, body: bytes) -> tuple[str, float]:
    start = time.monotonic()
    with grpc.insecure_channel(f"127.0.0.1:{port}", options=[
            ("grpc.max_send_message_length", 64 << 20),
            ("grpc.use_local_subchannel_pool", 1)]) as channel:
        try:
            channel.unary_unary(EXPORT)(body, timeout=120)
            code = "OK"
        except grpc.RpcError as exc:
            code = exc.code().name
    return code, time.monotonic() - start

def large_requests(tmp: Path, bodies: list[bytes], protocol: str, extra: list[str]) -> None:
    server = Server(tmp / f"large-{protocol}-{len(extra)}.db", *extra)
    stop, latencies = threading.Event(), []
    try:
        base = server.rss("VmRSS")
        watcher = threading.Thread(target=watch_health, args=(server.url, stop, latencies))
        watcher.start()
        time.sleep(0.3)
        with ThreadPoolExecutor(len(bodies)) as pool:
            if protocol == "http":
                outcomes = list(pool.map(lambda b: send_http(server.url, b), bodies))
            else:
                outcomes = list(pool.map(lambda b: send_grpc(server.grpc_port, b), bodies))
        time.sleep(0.5)
        stop.set()
        watcher.join()
        peak, after = server.rss(), server.rss("VmRSS")
    finally:
        stop.set()
        log = server.stop()
    cap = extra[1] if extra else "50000 (default)"
    print(f"  {protocol:4} --max-pending-spans {cap}: "
          + ", ".join(f"{code} in {seconds:.2f} s" for code, seconds in outcomes))
    print(f"       health slowest {max(latencies):.2f} s over {len(latencies)} probes; RSS "
          f"{base:.0f} -> peak {peak:.0f} MiB, {after:.0f} MiB after; stderr {len(log)} bytes")

def slow_clients(tmp: Path, slow: int, idle: int, seconds: float) -> None:
    server = Server(tmp / "slow.db")
    sockets: list[socket.socket] = []
    channels: list[grpc.Channel] = []
    probes: list[tuple[float, bool, bool]] = []
    try:
        for _ in range(idle):
            channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}",
                                            options=[("grpc.use_local_subchannel_pool", 1)])
            with contextlib.suppress(grpc.FutureTimeoutError):
                grpc.channel_ready_future(channel).result(timeout=2)
            channels.append(channel)
        for _ in range(slow):
            sock = socket.socket()
            sock.settimeout(2)
            try:
                sock.connect(("127.0.0.1", server.http_port))
                sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: ")
                sockets.append(sock)
            except OSError:
                sock.close()
        print(f"  holding {len(sockets)} half-sent HTTP requests and {len(channels)} idle gRPC "
              f"channels for {seconds:.0f} s")

        body = tiny_request(50, seed=7)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            start = time.monotonic()
            try:
                health = httpx.get(server.url + "/health", timeout=10).status_code == 200
            except httpx.HTTPError:
                health = False
            latency = time.monotonic() - start if health else float("inf")
            http_ok = send_http(server.url, body)[0] == "200"
            grpc_ok = send_grpc(server.grpc_port, body)[0] == "OK"
            probes.append((latency, http_ok, grpc_ok))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
    finally:
        for sock in sockets:
            sock.close()
        for channel in channels:
            channel.close()
        log = server.stop()
    failed = sum(1 for latency, h, g in probes if not (latency < 1.0 and h and g))
    print(f"  probes: {len(probes)}, failed or slower than 1 s: {failed}; slowest health "
          f"{max(p[0] for p in probes):.2f} s; HTTP exports ok {sum(p[1] for p in probes)}, "
          f"gRPC exports ok {sum(p[2] for p in probes)}")
    print(f"  server stderr: {len(log)} bytes, {log.count('Traceback')} tracebacks"
          + (f"; first line: {log.splitlines()[0]!r}" if log else ""))

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=395_000, help="tiny spans per request")
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--slow", type=int, default=2000)
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--skip-slow", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if not args.skip_large:
            bodies = [tiny_request(args.spans, seed) for seed in range(args.requests)]
            print(f"{args.requests} concurrent requests of {args.spans} tiny spans "
                  f"({len(bodies[0]) / 2**20:.1f} MiB each)")
            for extra in ([], ["--max-pending-spans", str(args.spans + 5000)]):
                for protocol in ("http", "grpc"):
                    large_requests(tmp, bodies, protocol, extra)
        if not args.skip_slow:
            print("slow and idle clients")
            slow_clients(tmp, args.slow, args.idle, args.seconds)

if __name__ == "__main__":
    main()
