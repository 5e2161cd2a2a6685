"""The loopback load run: several agent apps → the ``rotel`` collector → one processor.

:func:`run_load` starts ``spanguard serve`` (a subprocess, its own SQLite store), the real
``rotel`` collector forwarding OTLP/gRPC to it, and ``apps`` app processes
(:mod:`tests.reliability.load_app`) exporting to rotel at ``rate`` requests a second each for
``seconds`` seconds. Meanwhile it

* sends a probe span to rotel every ``probe_every`` seconds and times how long until that span
  is durable in the processor's store (end-to-end latency: export call → committed row);
* samples the resident memory (VmRSS) of the processor and of rotel every second.

At the end every app flushes and reports its SDK accounting; the run waits until the store
holds every span the apps ended plus the probes, then stops the processor gracefully.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from spanguard_processor.store.span_store import SpanStore
from tests.sdk.rotel_helper import OtlpGrpcSink, RotelCollector
from tests.serve_process import ServeProcess

from .load_app import SPANS_PER_REQUEST
from .servers import EXPORT

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class LoadReport:
    seconds: float
    apps: list[dict[str, Any]]
    probes: list[float] = field(default_factory=list)  # seconds, export → durable
    probe_lost: int = 0
    rss_processor: list[int] = field(default_factory=list)  # KiB, one sample a second
    rss_rotel: list[int] = field(default_factory=list)
    stored_spans: int = 0
    released_traces: int = 0
    pending_traces: int = 0
    drain_seconds: float = 0.0

    @property
    def requests(self) -> int:
        return sum(a["requests"] for a in self.apps)

    @property
    def ended(self) -> int:
        return sum(a["ended"] for a in self.apps)

    def percentile(self, q: float) -> float:
        ordered = sorted(self.probes)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000.0

    def summary(self) -> str:
        rss = self.rss_processor
        third = max(1, len(rss) // 3)
        return (
            f"{len(self.apps)} apps x {self.requests // max(1, len(self.apps))} requests "
            f"({self.ended} spans, {self.ended / self.seconds:.0f} spans/s) for "
            f"{self.seconds:.0f} s through rotel: stored {self.stored_spans} "
            f"(+{len(self.probes)} probes), lost "
            f"{self.ended + len(self.probes) - self.stored_spans}"
            f"; end-to-end probe latency p50 {self.percentile(0.5):.0f} ms, p95 "
            f"{self.percentile(0.95):.0f} ms, p99 {self.percentile(0.99):.0f} ms, max "
            f"{max(self.probes) * 1000:.0f} ms; processor RSS first third max "
            f"{max(rss[:third]) / 1024:.0f} MiB, last third max {max(rss[-third:]) / 1024:.0f} MiB"
            f"; rotel RSS max {max(self.rss_rotel) / 1024:.0f} MiB; drained in "
            f"{self.drain_seconds:.1f} s"
        )


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _probe_request(rng: random.Random, index: int) -> tuple[bytes, str, str]:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    trace_id, span_id = rng.randbytes(16), rng.randbytes(8)
    span.trace_id, span.span_id, span.name = trace_id, span_id, f"probe {index}"
    now = time.time_ns()
    span.start_time_unix_nano, span.end_time_unix_nano = now, now + 1000
    return request.SerializeToString(), trace_id.hex(), span_id.hex()


def _store_lookup(store: Path) -> Callable[[str, str], bool]:
    held: list[SpanStore] = []

    def found(trace_id: str, span_id: str) -> bool:
        if not held:
            held.append(SpanStore(store, readonly=True))
        reader = held[0]
        reader.refresh()  # the index rows committed since the last probe
        wanted = bytes.fromhex(span_id)
        return any(
            blob[i : i + 8] == wanted
            for (blob,) in reader.db.execute(
                "SELECT span_ids FROM trace_batches WHERE trace_id = ?", (trace_id,)
            )
            for i in range(0, len(blob), 8)
        )

    return found


def _probe_loop(
    rotel_port: int,
    found: Callable[[str, str], bool],
    every: float,
    stop: threading.Event,
    report: LoadReport,
) -> None:
    rng = random.Random(7)
    channel = grpc.insecure_channel(f"127.0.0.1:{rotel_port}")
    export = channel.unary_unary(EXPORT)
    index = 0
    while not stop.wait(every):
        body, trace_id, span_id = _probe_request(rng, index)
        index += 1
        sent = time.monotonic()
        export(body, timeout=10)
        while time.monotonic() - sent < 30:
            if found(trace_id, span_id):
                report.probes.append(time.monotonic() - sent)
                break
            time.sleep(0.002)
        else:
            report.probe_lost += 1
    channel.close()


class NullSink(OtlpGrpcSink):
    """The floor: an OTLP/gRPC receiver that only notes span ids (no store, no assembly)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, str]] = set()
        self.count = 0

    def _add(self, request: Any) -> None:
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.seen.add((span.trace_id.hex(), span.span_id.hex()))
                    self.count += 1

    def found(self, trace_id: str, span_id: str) -> bool:
        return (trace_id, span_id) in self.seen


def _sample_memory(pids: tuple[int, int], stop: threading.Event, report: LoadReport) -> None:
    while not stop.wait(1.0):
        report.rss_processor.append(_rss_kib(pids[0]))
        report.rss_rotel.append(_rss_kib(pids[1]))


def _stored(store: Path) -> tuple[int, int, int]:
    with SpanStore(store, readonly=True) as reader:
        released, pending = reader.trace_counts()
        return reader.span_count(), released, pending


def run_load(
    folder: Path, *, seconds: float = 60, apps: int = 3, rate: float = 80, probe_every: float = 0.2
) -> LoadReport:
    store = folder / "load.db"
    report = LoadReport(seconds=seconds, apps=[])
    server = ServeProcess(store, "--wait-duration", "1.0")
    try:
        with RotelCollector(export_to=f"http://127.0.0.1:{server.grpc_port}") as rotel:
            assert rotel._process is not None
            stop = threading.Event()
            threads = [
                threading.Thread(
                    target=_probe_loop,
                    args=(rotel.grpc_port, _store_lookup(store), probe_every, stop, report),
                ),
                threading.Thread(
                    target=_sample_memory,
                    args=((server.proc.pid, rotel._process.pid), stop, report),
                ),
            ]
            env = {k: v for k, v in os.environ.items() if k != "SPANGUARD_STRICT"}
            processes = [
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.reliability.load_app",
                        rotel.grpc_endpoint,
                        str(seconds),
                        str(rate),
                        f"app{n}",
                    ],
                    cwd=ROOT,
                    env=env,
                    text=True,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                for n in range(apps)
            ]
            for thread in threads:
                thread.start()
            for process in processes:
                out, err = process.communicate(timeout=seconds + 120)
                assert process.returncode == 0, err[-2000:]
                report.apps.append(json.loads(out.splitlines()[-1]))
            stop.set()
            for thread in threads:
                thread.join()
            expected = report.ended + len(report.probes)
            drain_started = time.monotonic()
            while time.monotonic() - drain_started < 60:
                report.stored_spans = _stored(store)[0]
                if report.stored_spans >= expected:
                    break
                time.sleep(0.2)
            report.drain_seconds = time.monotonic() - drain_started
    finally:
        server.terminate()
    report.stored_spans, report.released_traces, report.pending_traces = _stored(store)
    return report


assert SPANS_PER_REQUEST == 4


def run_floor(
    *, seconds: float = 30, apps: int = 3, rate: float = 80, probe_every: float = 0.2
) -> LoadReport:
    """The same load and probes through rotel into :class:`NullSink` instead of the processor."""
    report = LoadReport(seconds=seconds, apps=[])
    with NullSink() as sink, RotelCollector(export_to=sink.endpoint) as rotel:
        stop = threading.Event()
        probe = threading.Thread(
            target=_probe_loop, args=(rotel.grpc_port, sink.found, probe_every, stop, report)
        )
        env = {k: v for k, v in os.environ.items() if k != "SPANGUARD_STRICT"}
        processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.reliability.load_app",
                    rotel.grpc_endpoint,
                    str(seconds),
                    str(rate),
                    f"app{n}",
                ],
                cwd=ROOT,
                env=env,
                text=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for n in range(apps)
        ]
        probe.start()
        for process in processes:
            out, err = process.communicate(timeout=seconds + 120)
            assert process.returncode == 0, err[-2000:]
            report.apps.append(json.loads(out.splitlines()[-1]))
        stop.set()
        probe.join()
        report.stored_spans = sink.count
    return report
