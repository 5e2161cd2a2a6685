"""One client flooding ``spanguard serve`` with ≈15.7 MB logs requests of tiny records beside
three normal exporters, over OTLP/HTTP and OTLP/gRPC (issue 49 item 1).

The flooding client sends an ``ExportLogsServiceRequest`` of 475,000 tiny span-bound records
(≈15.7 MB, inside the 16 MiB body limit) again and again; three normal exporters each send a
logs request of 50 records (one new trace per request) ten times a second. serve runs as a
real subprocess; its RSS is sampled every 0.1 s. At the end serve is stopped (SIGTERM) and
every acknowledged request's records are looked up in the store.

    nice -n 10 .venv/bin/python bench/load_logs_flood.py [--quick]

Targets: ≥ 95 % of the normal exporters' requests acknowledged (overall and in the worst
second), serve peak RSS ≤ 512 MiB, 0 acknowledged records lost, the flooding request refused
within 1 s. Prints one line per protocol and exits 1 when a target is missed.
"""

from __future__ import annotations

import math
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spanguard_processor.store.span_store import SpanStore
from tests.collector.test_logs_admission import tiny_records
from tests.serve_process import ServeProcess

LOGS_EXPORT = "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
PROTO = {"content-type": "application/x-protobuf"}
RECORDS = 50  # per normal request
FLOOD_RECORDS = 475_000


@dataclass
class Outcome:
    """What the clients saw."""

    sent: list[tuple[float, bool]] = field(default_factory=list)  # (when, acknowledged)
    acked: list[str] = field(default_factory=list)  # trace ids of acknowledged requests
    flood: list[tuple[str, float]] = field(default_factory=list)  # (answer, seconds)
    rss_kib: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _normal_request(rng: random.Random) -> tuple[bytes, str]:
    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    trace_id = rng.randbytes(16)
    for index in range(RECORDS):
        scope.log_records.append(
            LogRecord(
                trace_id=trace_id,
                span_id=rng.randbytes(8),
                event_name="gen_ai.client.inference.operation.details",
                time_unix_nano=1_700_000_000_000_000_000 + index,
            )
        )
    return request.SerializeToString(), trace_id.hex()


def _send(
    protocol: str, server: ServeProcess, body: bytes, channel: grpc.Channel, http: httpx.Client
) -> str:
    if protocol == "http":
        reply = http.post(server.url + "/v1/logs", content=body, headers=PROTO)
        return str(reply.status_code)
    try:
        channel.unary_unary(LOGS_EXPORT)(body, timeout=30)
        return "OK"
    except grpc.RpcError as exc:
        return exc.code().name  # type: ignore[no-any-return]


def _exporter(
    protocol: str, server: ServeProcess, seed: int, stop: threading.Event, out: Outcome
) -> None:
    rng = random.Random(seed)
    with (
        grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel,
        httpx.Client(timeout=30) as http,
    ):
        while not stop.wait(0.1):
            body, trace_id = _normal_request(rng)
            ok = _send(protocol, server, body, channel, http) in ("200", "OK")
            with out.lock:
                out.sent.append((time.monotonic(), ok))
                if ok:
                    out.acked.append(trace_id)


def _flooder(protocol: str, server: ServeProcess, stop: threading.Event, out: Outcome) -> None:
    body = tiny_records(FLOOD_RECORDS)
    with (
        grpc.insecure_channel(
            f"127.0.0.1:{server.grpc_port}",
            options=[("grpc.max_send_message_length", 32 * 1024 * 1024)],
        ) as channel,
        httpx.Client(timeout=30) as http,
    ):
        while not stop.wait(0.2):
            started = time.monotonic()
            answer = _send(protocol, server, body, channel, http)
            out.flood.append((answer, time.monotonic() - started))


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _lost(store: Path, acked: list[str]) -> int:
    """Acknowledged records not in the store."""
    with SpanStore(store, readonly=True) as reader:
        held = Counter(trace_id for trace_id, _ in reader.span_ids())
    return sum(max(0, RECORDS - held[trace_id]) for trace_id in acked)


def _worst_second(sent: list[tuple[float, bool]]) -> float:
    start = sent[0][0]
    seconds: dict[int, list[bool]] = {}
    for when, ok in sent:
        seconds.setdefault(int(when - start), []).append(ok)
    full = [oks for _, oks in sorted(seconds.items())][:-1] or list(seconds.values())
    return min(sum(oks) / len(oks) for oks in full)


def _wilson(k: int, n: int) -> tuple[float, float]:
    z, p = 1.96, k / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)


def run(protocol: str, seconds: float, folder: Path) -> bool:
    store = folder / f"{protocol}.db"
    server = ServeProcess(store)
    out, stop = Outcome(), threading.Event()
    base = _rss(server.proc.pid)
    threads = [threading.Thread(target=_flooder, args=(protocol, server, stop, out))]
    threads += [
        threading.Thread(target=_exporter, args=(protocol, server, seed, stop, out))
        for seed in range(3)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out.rss_kib.append(_rss(server.proc.pid))
        time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join()
    server.terminate()
    acked, total = sum(ok for _, ok in out.sent), len(out.sent)
    low, high = _wilson(acked, total)
    lost, peak = _lost(store, out.acked), max(out.rss_kib) / 1024
    worst, slowest = _worst_second(out.sent), max(s for _, s in out.flood)
    answers = sorted({a for a, _ in out.flood})
    print(
        f"{protocol}: others acknowledged {acked}/{total} = {acked / total:.1%} "
        f"(95 % CI {low:.1%}–{high:.1%}; target ≥ 95 %), worst second {worst:.0%}; "
        f"serve RSS {base / 1024:.0f} → peak {peak:.0f} MiB (target ≤ 512); "
        f"acknowledged records lost {lost} (target 0); flood requests {len(out.flood)} "
        f"answered {answers} in ≤ {slowest:.2f} s (target ≤ 1 s)"
    )
    return acked / total >= 0.95 and worst >= 0.95 and peak <= 512 and lost == 0 and slowest <= 1


def main() -> None:
    seconds = 10.0 if "--quick" in sys.argv else 30.0
    with tempfile.TemporaryDirectory() as tmp:
        ok = [run(protocol, seconds, Path(tmp)) for protocol in ("http", "grpc")]
    sys.exit(0 if all(ok) else 1)


if __name__ == "__main__":
    main()
