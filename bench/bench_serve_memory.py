"""Does ``spanguard serve``'s memory come back after load? RSS after start, after a soak and
after --idle seconds without requests, and the ratio idle / start, with a breakdown.

The server runs as ``serve`` does (``serve_forever``, both receivers, a durable store) in a
child process that also answers ``stats`` on its stdin with what it measures of itself: RSS
from ``/proc/self/status`` and per kind of mapping from ``/proc/self/smaps`` (the main heap,
other anonymous memory — thread arenas, pymalloc arenas, big allocations —, and file-backed
pages: code and data of the interpreter and its libraries), glibc's ``mallinfo2`` (bytes in
use and free inside malloc's arenas), SQLite's ``sqlite3_memory_used`` and Python's allocated
blocks and pymalloc arenas. The soak sends agent requests (10 spans each, 5 per trace, fresh
trace ids) from --clients HTTP threads and one gRPC thread for --soak seconds.

    .venv/bin/python bench/bench_serve_memory.py        # ~70 s
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MIB = 1024 * 1024


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def self_stats() -> dict[str, Any]:
    """What this process measures of its own memory (MiB unless named otherwise)."""
    status = Path("/proc/self/status").read_text()
    stats: dict[str, Any] = {
        key: int(re.search(rf"^{key}:\s+(\d+)", status, re.M).group(1)) / 1024  # type: ignore
        for key in ("VmRSS", "RssAnon", "RssFile")
    }
    kinds = {"heap": 0, "anon": 0, "file": 0, "stack": 0}
    name = ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            name = head[5] if len(head) > 5 else ""
        elif head[0] == "Rss:":
            kind = (
                "heap"
                if name == "[heap]"
                else "stack"
                if name.startswith("[stack")
                else "anon"
                if not name or name.startswith("[")
                else "file"
            )
            kinds[kind] += int(head[1])
    stats.update({f"smaps_{k}": v / 1024 for k, v in kinds.items()})
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    stats["malloc_in_use"] = (info.uordblks + info.hblkhd) / MIB
    stats["malloc_free_held"] = info.fordblks / MIB
    sqlite = ctypes.CDLL("libsqlite3.so.0")
    sqlite.sqlite3_memory_used.restype = ctypes.c_int64
    stats["sqlite_memory_used"] = sqlite.sqlite3_memory_used() / MIB
    current, peak = ctypes.c_int64(), ctypes.c_int64()
    sqlite.sqlite3_status64(2, ctypes.byref(current), ctypes.byref(peak), 0)
    stats["sqlite_page_cache"] = current.value / MIB
    stats["python_blocks"] = sys.getallocatedblocks()
    stats["threads"] = len(os.listdir("/proc/self/task"))
    return stats


def child(store: Path, http_port: int, grpc_port: int) -> None:
    """Run the server; answer ``stats`` (and ``trim``: malloc_trim) lines on stdin."""
    from spanguard_processor.collector.server import ServerConfig, serve_forever

    def started(server: object) -> None:
        print(json.dumps({"ready": True}), flush=True)

        snaps: list[Any] = []

        def answer() -> None:
            for line in sys.stdin:
                if line.strip() == "trim":
                    ctypes.CDLL("libc.so.6").malloc_trim(0)
                if line.strip() == "shrink":
                    server.store.db.execute("PRAGMA shrink_memory")  # type: ignore[attr-defined]
                if line.strip() == "snap" and tracemalloc.is_tracing():
                    snap = tracemalloc.take_snapshot()
                    if snaps:
                        for stat in snap.compare_to(snaps[0], "lineno")[:25]:
                            print(stat, file=sys.stderr)
                    snaps.append(snap)
                if line.strip() == "cache":
                    row = server.store.db.execute("PRAGMA cache_size").fetchone()  # type: ignore
                    print(json.dumps({"cache_size": row[0]}), flush=True)
                    continue
                print(json.dumps(self_stats()), flush=True)

        threading.Thread(target=answer, daemon=True).start()

    serve_forever(
        ServerConfig(store=store, http_port=http_port, grpc_port=grpc_port, wait_duration=0.5),
        announce=lambda line: None,
        started=started,
    )


def make_bodies(copies: int) -> list[bytes]:
    """Agent requests (10 spans each), ``copies`` times with fresh trace ids."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    from bench.bench_ingest import make_spans

    spans = make_spans(200)
    requests = [encode_spans(spans[at : at + 10]) for at in range(0, len(spans), 10)]
    bodies = []
    for copy in range(copies):
        for request in requests:
            fresh = ExportTraceServiceRequest()
            fresh.CopyFrom(request)
            for resource in fresh.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        span.trace_id = copy.to_bytes(4, "big") + span.trace_id[4:]
            bodies.append(fresh.SerializeToString())
    return bodies


def soak(
    http: str, grpc_port: int, bodies: list[bytes], seconds: float, clients: int
) -> tuple[int, int]:
    """Requests sent and failed, from ``clients`` HTTP threads and a gRPC one."""
    import grpc
    import httpx

    stop = time.monotonic() + seconds
    sent = [0]
    failed = [0]
    lock = threading.Lock()

    def http_client(offset: int) -> None:
        with httpx.Client(base_url=http, timeout=30) as client:
            at = offset
            while time.monotonic() < stop:
                reply = client.post(
                    "/v1/traces",
                    content=bodies[at % len(bodies)],
                    headers={"content-type": "application/x-protobuf"},
                )
                with lock:
                    sent[0] += 1
                    failed[0] += reply.status_code != 200
                at += clients + 1

    def grpc_client() -> None:
        with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
            export = channel.unary_unary(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
            )
            at = clients
            while time.monotonic() < stop:
                try:
                    export(bodies[at % len(bodies)], timeout=30)
                    ok = True
                except grpc.RpcError:
                    ok = False
                with lock:
                    sent[0] += 1
                    failed[0] += not ok
                at += clients + 1

    threads = [threading.Thread(target=http_client, args=(i,)) for i in range(clients)]
    threads.append(threading.Thread(target=grpc_client))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sent[0], failed[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soak", type=float, default=30.0, help="seconds of load")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds idle after it")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument(
        "--copies",
        type=int,
        default=150,
        help="copies of 200 requests with fresh trace ids (30,000 requests)",
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("STORE", "HTTP", "GRPC"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]), int(args.child[2]))
        return

    from tests.sdk.rotel_helper import free_port

    bodies = make_bodies(args.copies)
    http_port, grpc_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as folder:
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--child",
                str(Path(folder) / "s.db"),
                str(http_port),
                str(grpc_port),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        assert json.loads(proc.stdout.readline())["ready"]

        def stats(command: str = "stats") -> dict[str, Any]:
            proc.stdin.write(command + "\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            return json.loads(proc.stdout.readline())  # type: ignore[union-attr]

        try:
            time.sleep(1)
            start = stats()
            if os.environ.get("PYTHONTRACEMALLOC"):
                stats("snap")
            sent, failed = soak(
                f"http://127.0.0.1:{http_port}", grpc_port, bodies, args.soak, args.clients
            )
            loaded = stats()
            time.sleep(args.idle)
            idle = stats()
            if os.environ.get("PYTHONTRACEMALLOC"):
                stats("snap")
            trimmed = stats("trim")
            print(stats("cache"))
            shrunk = stats("shrink")
        finally:
            proc.terminate()
            proc.wait(30)
    print(
        f"soak: {sent:,} requests of 10 spans in {args.soak:.0f} s "
        f"({sent / args.soak:,.0f} req/s, {failed} failed), then {args.idle:.0f} s idle"
    )
    print(f"\n{'MiB':28} {'start':>8} {'soaked':>8} {'idle':>8} {'trimmed':>8} {'shrunk':>8}")
    for key in start:
        print(
            f"{key:28} "
            + " ".join(
                f"{row[key]:8.1f}" if isinstance(row[key], float) else f"{row[key]:8d}"
                for row in (start, loaded, idle, trimmed, shrunk)
            )
        )
    ratio = idle["VmRSS"] / start["VmRSS"]
    print(f"\nRSS idle / start: {ratio:.2f} (target <= 1.20)")


if __name__ == "__main__":
    main()
