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
import socket
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.reliability.hostile import (  # noqa: E402  (the probes the tests use, full size)
    StderrLog,
    export_grpc,
    export_http,
    idle_grpc_channels,
    rss_mib,
    serves,
    slow_http_clients,
    tiny_spans_request,
    watch_health,
)
from tests.serve_process import ServeProcess  # noqa: E402


class Server(ServeProcess):
    """``spanguard serve`` on free ports, its stderr collected."""

    def __init__(self, store: Path, *extra: str) -> None:
        super().__init__(store, "--wait-duration", "0.2", *extra)
        self.stderr = StderrLog(self)

    def rss(self, key: str = "VmHWM") -> float:
        return rss_mib(self.proc.pid, key)

    def stop(self) -> str:
        return self.stderr.stop()


def send_http(url: str, body: bytes) -> tuple[str, float]:
    status, seconds = export_http(url, body)
    return str(status), seconds


def send_grpc(port: int, body: bytes) -> tuple[str, float]:
    with grpc.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.max_send_message_length", 64 << 20), ("grpc.use_local_subchannel_pool", 1)],
    ) as channel:
        return export_grpc(channel, body)


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
    print(
        f"  {protocol:4} --max-pending-spans {cap}: "
        + ", ".join(f"{code} in {seconds:.2f} s" for code, seconds in outcomes)
    )
    print(
        f"       health slowest {max(latencies):.2f} s over {len(latencies)} probes; RSS "
        f"{base:.0f} -> peak {peak:.0f} MiB, {after:.0f} MiB after; stderr {len(log)} bytes"
    )


def slow_clients(tmp: Path, slow: int, idle: int, seconds: float) -> None:
    server = Server(tmp / "slow.db")
    sockets: list[socket.socket] = []
    channels: list[grpc.Channel] = []
    probes: list[tuple[float, bool, bool]] = []
    try:
        channels = idle_grpc_channels(server.grpc_port, idle)
        sockets = slow_http_clients(server.http_port, slow)
        print(
            f"  holding {len(sockets)} half-sent HTTP requests and {len(channels)} idle gRPC "
            f"channels for {seconds:.0f} s"
        )

        body = tiny_spans_request(50, seed=7)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            start = time.monotonic()
            probes.append(serves(server.url, server.grpc_port, body, body, timeout=10))
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start)))
    finally:
        for sock in sockets:
            sock.close()
        for channel in channels:
            channel.close()
        log = server.stop()
    failed = sum(1 for latency, h, g in probes if not (latency < 1.0 and h and g))
    print(
        f"  probes: {len(probes)}, failed or slower than 1 s: {failed}; slowest health "
        f"{max(p[0] for p in probes):.2f} s; HTTP exports ok {sum(p[1] for p in probes)}, "
        f"gRPC exports ok {sum(p[2] for p in probes)}"
    )
    print(
        f"  server stderr: {len(log)} bytes, {log.count('Traceback')} tracebacks"
        + (f"; first line: {log.splitlines()[0]!r}" if log else "")
    )


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
            bodies = [tiny_spans_request(args.spans, seed) for seed in range(args.requests)]
            print(
                f"{args.requests} concurrent requests of {args.spans} tiny spans "
                f"({len(bodies[0]) / 2**20:.1f} MiB each)"
            )
            for extra in ([], ["--max-pending-spans", str(args.spans + 5000)]):
                for protocol in ("http", "grpc"):
                    large_requests(tmp, bodies, protocol, extra)
        if not args.skip_slow:
            print("slow and idle clients")
            slow_clients(tmp, args.slow, args.idle, args.seconds)


if __name__ == "__main__":
    main()
