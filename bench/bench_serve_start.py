"""Time from starting ``spanguard serve`` to its first ``/health`` answer, on a ~1 GB store,
beside the floor measured in the same run: the same on an empty store.

The big store (agent requests of 512 spans, 5 per trace, as ``bench/bench_ingest.py`` sends,
copied with fresh trace ids until the file reaches --size-mb; every trace released) is built
once into --cache (default ``~/.cache/spanguard-bench``) and reused: ``serve`` on a store with
nothing pending leaves it as it was. Building it prints how long it took.

Each round starts ``serve`` on the empty store, then on the big one (cold: the big store's
pages are first dropped from the page cache with ``posix_fadvise(DONTNEED)``; warm: read just
before), and polls ``/health`` every 20 ms from the moment the process is spawned. Figures:
first 200 from ``/health`` (and what ``parts`` said then); the first acknowledged export (an
OTLP/HTTP request of 2 spans sent at the first answer, as an exporter would, timed when its
200 arrives: the writer stored it); when the writer says ``ok`` (the store checked, ready to
store requests); medians of --repeat rounds, each beside the floor as a ratio. Each export adds
one small released trace to the big store (flushed at shutdown).

    .venv/bin/python bench/bench_serve_start.py     # build ~1-2 min once, then ~1 min
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_ingest import make_spans  # noqa: E402
from spanguard_processor.collector.limits import Shaper  # noqa: E402
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC  # noqa: E402
from spanguard_processor.ingest.otlp_proto import parse_request  # noqa: E402
from spanguard_processor.store.span_store import SpanStore  # noqa: E402
from tests.sdk.rotel_helper import free_port  # noqa: E402

_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "spanguard-bench"


def build_store(path: Path, size_mb: int) -> None:
    """A store of agent requests copied with fresh trace ids until it holds ``size_mb``."""
    spans = make_spans(400)
    bodies = [
        encode_spans(spans[at : at + 512]).SerializeToString() for at in range(0, len(spans), 512)
    ]
    requests = [parse_request(body) for body in bodies]
    shaper = Shaper()
    partial = path.with_name(path.name + ".partial")
    for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        stale.unlink(missing_ok=True)
    copy = 0
    with SpanStore(partial, durable=False) as store:
        while partial.stat().st_size < size_mb * 1_000_000:
            copy += 1
            batches = []
            for request in requests:
                fresh = ExportTraceServiceRequest()
                fresh.CopyFrom(request)
                prefix = copy.to_bytes(4, "big")
                for resource in fresh.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            span.trace_id = prefix + span.trace_id[4:]
                body = fresh.SerializeToString()
                batches.append(PROTOBUF_CODEC.decode(body, None, shaper.shaping))
            store.put_batches(
                batches, release=sorted({g.trace_id for b in batches for g in b.traces})
            )
    partial.rename(path)


def drop_from_page_cache(path: Path) -> None:
    for file in (path, Path(f"{path}-wal")):
        if file.exists():
            fd = os.open(file, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def read_through(path: Path) -> None:
    with path.open("rb") as handle:
        while handle.read(1 << 22):
            pass


def _export(client: httpx.Client, port: int, body: bytes, timeout: float) -> bool:
    try:
        reply = client.post(
            f"http://127.0.0.1:{port}/v1/traces",
            content=body,
            headers={"Content-Type": "application/x-protobuf"},
            timeout=timeout,
        )
    except httpx.HTTPError:
        return False
    return reply.status_code == 200


def start_times(
    store: Path, source: Path | None = None, timeout: float = 120
) -> tuple[float, float, float, str]:
    """Seconds from spawning ``serve`` (``source``: another checkout's code) to its first 200
    from /health, to the first export it acknowledged, to its writer ``ok``, and what ``parts``
    said at the first answer."""
    port = free_port()
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spanguard_processor",
            "serve",
            "--store",
            str(store),
            "--grpc-port",
            "0",
            "--http-port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    first: float | None = None
    acked: float | None = None
    said = ""
    body = encode_spans(make_spans(1)[:2]).SerializeToString()
    try:
        with httpx.Client(timeout=2) as client:
            while time.perf_counter() - started < timeout:
                try:
                    reply = client.get(f"http://127.0.0.1:{port}/health")
                except httpx.HTTPError:
                    time.sleep(0.02)
                    continue
                now = time.perf_counter() - started
                parts = reply.json().get("parts", {})
                if reply.status_code == 200 and first is None:
                    first = now
                    said = ", ".join(f"{k}: {v}" for k, v in parts.items() if v != "ok")
                if first is not None and acked is None:  # an exporter's request, retried
                    if _export(client, port, body, timeout):
                        acked = time.perf_counter() - started
                    else:
                        time.sleep(0.02)
                    continue
                if acked is not None and parts.get("writer") == "ok" and parts.get("store") == "ok":
                    return first or now, acked, now, said or "all ok"
                time.sleep(0.02)
            raise RuntimeError(f"serve on {store} did not become ready in {timeout} s")
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1000)
    parser.add_argument("--cache", type=Path, default=_CACHE)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="SRC",
        help="also time the big store with another checkout's "
        "collector_processor/src (rounds alternate)",
    )
    args = parser.parse_args()

    big = args.cache / f"serve-start-{args.size_mb}mb.db"
    if not big.exists():
        args.cache.mkdir(parents=True, exist_ok=True)
        began = time.perf_counter()
        build_store(big, args.size_mb)
        print(
            f"built {big} ({big.stat().st_size / 1e6:,.0f} MB) in "
            f"{time.perf_counter() - began:.0f} s (reused by later runs)"
        )
    with SpanStore(big, readonly=True, verify_batches=False) as reader:
        spans = reader.span_count()
    print(
        f"store {big}: {big.stat().st_size / 1e6:,.0f} MB, {spans:,} spans; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    rows: dict[str, list[tuple[float, float, float, str]]] = {
        "floor": [],
        "cold": [],
        "warm": [],
        "base cold": [],
        "base warm": [],
    }
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.repeat):
            empty = Path(folder) / "empty.db"
            for stale in Path(folder).iterdir():
                stale.unlink()
            rows["floor"].append(start_times(empty))
            drop_from_page_cache(big)
            rows["cold"].append(start_times(big))
            read_through(big)
            rows["warm"].append(start_times(big))
            if args.baseline is not None:
                drop_from_page_cache(big)
                rows["base cold"].append(start_times(big, args.baseline))
                read_through(big)
                rows["base warm"].append(start_times(big, args.baseline))
    floors = [statistics.median(row[k] for row in rows["floor"]) for k in range(3)]
    print(
        f"\n{'serve on':28} {'first /health':>14} {'ratio':>7} {'first ack':>10} {'ratio':>7} "
        f"{'writer ready':>13} {'ratio':>7}  parts at the first answer"
    )
    for name, label in (
        ("floor", "empty store (the floor)"),
        ("cold", "1 GB store, cold cache"),
        ("warm", "1 GB store, warm cache"),
        ("base cold", "  --baseline, cold cache"),
        ("base warm", "  --baseline, warm cache"),
    ):
        if not rows[name]:
            continue
        figures = "".join(
            f" {value:{width}.2f} s {value / floor:6.2f}x"
            for value, floor, width in zip(
                (statistics.median(row[k] for row in rows[name]) for k in range(3)),
                floors,
                (12, 8, 11),
                strict=True,
            )
        )
        print(f"{label:28}{figures}  {rows[name][-1][3]}")
    print(f"(medians of {args.repeat} rounds; load average now {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
