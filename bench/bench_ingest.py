"""Ingest throughput of the spanguard processor, each figure beside a floor measured in this run.

Figures (spans per second, medians of --repeat runs):

* app export rate — what one Python app process can export: the OTel exporter's encoding of
  SDK spans to an OTLP protobuf request (``encode_spans`` + ``SerializeToString``), the CPU an
  app spends per exported span, excluding creating the spans;
* OTLP/HTTP protobuf — pre-encoded requests replayed by --clients threads against a real
  ``spanguard serve`` subprocess, from first send to last acknowledgement (acknowledged =
  committed to SQLite with fsync); its CPU is read 1.5 s later, once every acknowledged batch
  is indexed too; floor: ``ParseFromString`` of the same request bodies;
* span file — ``spanguard ingest`` of the same spans as OTLP-JSON lines into a durable store;
  floor: ``json.loads`` of the same lines;
* peer — the same requests replayed the same way against ``rotel`` (a native OTLP collector,
  PyPI ``rotel``) receiving OTLP/HTTP and batching into its ``blackhole`` exporter: its CPU per
  span beside the processor's (which also indexes and commits every span durably).

After the HTTP run it checks zero loss (every span stored, once) and reports the server's
peak RSS with ``--num-traces`` in flight at most.

With ``--baseline SRC`` (the ``collector_processor/src`` folder of another checkout, e.g. a
``git worktree`` of an older commit) the HTTP runs alternate between that code's server and
this one's, round by round on the same requests, and the ratio of their CPU per span is
printed: a before/after comparison that the machine's load affects alike (every round starts
after ``os.sync()``, so neither server pays for writing back the other's dirty pages).

    .venv/bin/python bench/bench_ingest.py            # ~30 s on 2 cores
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spanguard_processor.inputs.readers import ingest_files  # noqa: E402
from spanguard_processor.store.span_store import SpanStore  # noqa: E402
from tests.agent_app import run_request  # noqa: E402
from tests.sdk.rotel_helper import free_port, rotel_binary  # noqa: E402

#: Seconds after the last acknowledgement by which the server has indexed every stored batch
#: (collector/ingestor.py indexes at most 1 s after the first unindexed one).
INDEXED_AFTER = 1.5


def make_spans(requests: int) -> list:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    for index in range(requests):
        run_request(tracer, index)
    return list(exporter.get_finished_spans())


def timed(fn, clock=time.perf_counter) -> float:
    start = clock()
    fn()
    return clock() - start


def hexify(node: object) -> object:
    """MessageToDict writes ids as base64; OTLP-JSON wants hex."""
    import base64

    if isinstance(node, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId")
                else hexify(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hexify(v) for v in node]
    return node


def serve(store: Path, num_traces: int, source: Path | None = None) -> tuple[subprocess.Popen, str]:
    """``spanguard serve`` in a subprocess; ``source`` runs another checkout's code instead."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "spanguard_processor",
            "serve",
            "--store",
            str(store),
            "--grpc-port",
            "-1",
            "--http-port",
            "0",
            "--wait-duration",
            "0.5",
            "--num-traces",
            str(num_traces),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    line = proc.stdout.readline()  # type: ignore[union-attr]
    port = re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1)  # type: ignore[union-attr]
    return proc, f"http://127.0.0.1:{port}"


def rotel(folder: Path) -> tuple[subprocess.Popen, str]:
    """rotel receiving OTLP/HTTP (and gRPC, unused) and dropping what it batched."""
    http, grpc = free_port(), free_port()
    proc = subprocess.Popen(
        [
            str(rotel_binary()),
            "start",
            "--otlp-http-endpoint",
            f"127.0.0.1:{http}",
            "--otlp-grpc-endpoint",
            f"127.0.0.1:{grpc}",
            "--exporter",
            "blackhole",
            "--log-file",
            str(folder / "rotel.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", http), timeout=0.2):
                break
        except OSError:
            time.sleep(0.05)
    return proc, f"http://127.0.0.1:{http}"


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: OS thread names of ``spanguard serve`` (collector/os_threads.py), cut to 15 bytes by the kernel
PARTS = {
    "spanguard-write": "span writer (store + assembler)",
    "spanguard-http": "HTTP event loop (HTTP + decoding)",
    "spanguard-decod": "decoder threads (large bodies)",
}


def cpu_by_part(pid: int) -> dict[str, float]:
    """CPU seconds used so far by each named part of the server (the rest as "other")."""
    parts: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        part = PARTS.get(name, "other")
        parts[part] = parts.get(part, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf(
            "SC_CLK_TCK"
        )
    return parts


def bytes_written(pid: int) -> int:
    """Bytes the process has passed to write(2) and pwrite(2) so far."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def replay(url: str, bodies: list[bytes], clients: int) -> float:
    chunks = [bodies[i::clients] for i in range(clients)]
    failures: list[int] = []

    def send(chunk: list[bytes]) -> None:
        # TCP_NODELAY, as the OTel exporters' HTTP stacks do: without it Nagle's algorithm
        # and delayed ACKs add ~40 ms to every request whose body is written separately.
        transport = httpx.HTTPTransport(
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        )
        with httpx.Client(base_url=url, timeout=60, transport=transport) as client:
            for body in chunk:
                reply = client.post(
                    "/v1/traces", content=body, headers={"content-type": "application/x-protobuf"}
                )
                if reply.status_code != 200:
                    failures.append(reply.status_code)

    threads = [threading.Thread(target=send, args=(c,)) for c in chunks]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    assert not failures, f"{len(failures)} requests failed: {failures[:5]}"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000, help="agent requests (5 spans each)")
    parser.add_argument("--batch", type=int, default=512, help="spans per OTLP request")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--num-traces", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        metavar="SRC",
        help="also run the server of this source folder, alternating rounds",
    )
    args = parser.parse_args()

    spans = make_spans(args.requests)
    n = len(spans)
    batches = [spans[i : i + args.batch] for i in range(0, n, args.batch)]
    print(
        f"{n} spans ({args.requests} agent requests), {len(batches)} requests of "
        f"<= {args.batch} spans, {args.clients} HTTP clients"
    )

    app = statistics.median(
        timed(
            lambda: [encode_spans(b).SerializeToString() for b in batches], clock=time.process_time
        )
        for _ in range(args.repeat)
    )
    app_wall = statistics.median(
        timed(lambda: [encode_spans(b).SerializeToString() for b in batches])
        for _ in range(args.repeat)
    )
    bodies = [encode_spans(b).SerializeToString() for b in batches]
    parse = statistics.median(
        timed(lambda: [ExportTraceServiceRequest.FromString(b) for b in bodies])
        for _ in range(args.repeat)
    )

    http_times, http_cpu, base_cpu, rss, stored = [], [], [], 0.0, 0
    part_cpu: list[dict[str, float]] = []
    amplification: list[float] = []
    body_bytes = sum(len(body) for body in bodies)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for source in [args.baseline, None] if args.baseline else [None]:
                store = Path(tmp) / f"http{r}{'base' if source else ''}.db"
                # each round starts with the page cache written back: one server's dirty pages
                # are not flushed during (and charged to) the other's round
                os.sync()
                proc, url = serve(store, args.num_traces, source)
                try:
                    before = cpu_seconds(proc.pid)
                    parts, written = cpu_by_part(proc.pid), bytes_written(proc.pid)
                    elapsed = replay(url, bodies, args.clients)
                    # the CPU to index what was acknowledged counts too: a server may index
                    # after acknowledging (this one within a second), so read it after that
                    time.sleep(INDEXED_AFTER)
                    (base_cpu if source else http_cpu).append(cpu_seconds(proc.pid) - before)
                    if source is None:
                        after = cpu_by_part(proc.pid)
                        part_cpu.append({k: v - parts.get(k, 0.0) for k, v in after.items()})
                        amplification.append((bytes_written(proc.pid) - written) / body_bytes)
                    replay(url, bodies[:4], 1)  # exporter retries: must not duplicate
                    if source is None:
                        http_times.append(elapsed)
                        rss = max(rss, peak_rss_mib(proc.pid))
                finally:
                    proc.terminate()
                    proc.wait(30)
                with SpanStore(store, readonly=True) as db:
                    rows = db.span_ids()
                    stored = len(rows)
                    assert stored == len(set(rows)) == n, f"loss or duplicates: {stored} of {n}"
        http = statistics.median(http_times)
        server_cpu = statistics.median(http_cpu)

        peer_cpu = []
        for _ in range(args.repeat):
            proc, url = rotel(Path(tmp))
            try:
                before = cpu_seconds(proc.pid)
                replay(url, bodies, args.clients)
                time.sleep(0.5)  # its batch timeout: the last batch is dropped, not pending
                peer_cpu.append(cpu_seconds(proc.pid) - before)
            finally:
                proc.terminate()
                proc.wait(30)
        rotel_cpu = statistics.median(peer_cpu)

        lines_path = Path(tmp) / "spans.jsonl"
        lines = [
            json.dumps(hexify(MessageToDict(ExportTraceServiceRequest.FromString(b))))
            for b in bodies
        ]
        lines_path.write_text("\n".join(lines) + "\n")
        gc.collect()
        loads = statistics.median(
            timed(lambda: [json.loads(x) for x in lines]) for _ in range(args.repeat)
        )
        encoded_lines = [x.encode() for x in lines]

        def orjson_paused() -> None:
            gc.disable()
            try:
                [orjson.loads(x) for x in encoded_lines]
            finally:
                gc.enable()

        fast = statistics.median(timed(orjson_paused) for _ in range(args.repeat))
        file_times = []
        for r in range(args.repeat):
            with SpanStore(Path(tmp) / f"file{r}.db") as db:
                file_times.append(timed(lambda db=db: ingest_files(db, [lines_path])))
                assert db.span_count() == n
        ingest = statistics.median(file_times)

    rate = lambda seconds: n / seconds  # noqa: E731
    print(f"\n{'what':44} {'spans/s':>10}  {'floor':>10}  ratio")
    print(f"{'app export (encode + serialize), wall':44} {rate(app_wall):10,.0f}")
    print(f"{'app export (encode + serialize), per CPU-s':44} {rate(app):10,.0f}")
    print(
        f"{'OTLP/HTTP protobuf -> durable store, wall':44} {rate(http):10,.0f}  "
        f"{rate(parse):10,.0f}  {parse / http:5.3f} of ParseFromString"
    )
    print(
        f"{'OTLP/HTTP server process, per CPU-s':44} {rate(server_cpu):10,.0f}  "
        f"{rate(parse):10,.0f}  {parse / server_cpu:5.3f} of ParseFromString"
    )
    print(
        f"{'  wall rate vs the app export rate':44} {rate(http):10,.0f}  "
        f"{rate(app_wall):10,.0f}  {app_wall / http:5.2f}x (target >= 3x)"
    )
    print(
        f"{'  server CPU vs app CPU per span':44} {rate(server_cpu):10,.0f}  {rate(app):10,.0f}  "
        f"{app / server_cpu:5.2f}x (target >= 3x)"
    )
    print(f"{'rotel (native collector) -> blackhole, per CPU-s':44} {rate(rotel_cpu):10,.0f}")
    print(
        f"{'  CPU per span: server / rotel':44} {server_cpu / n * 1e6:8.1f} us  "
        f"{rotel_cpu / n * 1e6:8.1f} us  {server_cpu / rotel_cpu:5.2f}x rotel's"
    )
    for part in sorted({p for run in part_cpu for p in run}):
        share = statistics.median(run.get(part, 0.0) for run in part_cpu)
        print(f"{'  ' + part:44} {share / n * 1e6:8.1f} us per span")
    print(
        f"{'  bytes written / request bytes received':44} "
        f"{statistics.median(amplification):8.1f}x  (SQLite WAL and checkpoints)"
    )
    if base_cpu:
        before = statistics.median(base_cpu)
        rounds = ", ".join(f"{b / c:.2f}" for b, c in zip(base_cpu, http_cpu, strict=True))
        print(f"{'baseline server (--baseline), per CPU-s':44} {rate(before):10,.0f}")
        print(
            f"{'  CPU per span: baseline / this':44} {before / n * 1e6:8.1f} us  "
            f"{server_cpu / n * 1e6:8.1f} us  {before / server_cpu:5.2f}x fewer CPU-s per "
            f"span (rounds: {rounds})"
        )
    print(
        f"{'span file (OTLP-JSON lines) -> durable store':44} {rate(ingest):10,.0f}  "
        f"{rate(loads):10,.0f}  {loads / ingest:5.3f} of json.loads"
    )
    print(f"{'':44} {'':10}  {rate(fast):10,.0f}  {fast / ingest:5.3f} of orjson.loads, GC paused")
    print(
        f"\nzero loss: {stored} of {n} spans stored once (after 4 re-sent requests); "
        f"server peak RSS {rss:.0f} MiB with --num-traces {args.num_traces}"
    )


if __name__ == "__main__":
    main()
