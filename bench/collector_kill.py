"""What survives a processor ``kill -9`` behind the rotel collector, per exporter protocol.

Each trial: ``spanguard serve`` (fixed ports, a fresh store) behind the real ``rotel``
collector (PyPI ``rotel``), which exports to it over OTLP/gRPC or OTLP/HTTP. A sender streams
pre-encoded OTLP requests (5 spans each) into rotel's gRPC receiver at a steady rate and notes
which rotel acknowledged. After a seeded random delay the processor is SIGKILLed; it restarts
on the same ports and store after ``--down`` seconds; the sender carries on. At the end every
span rotel acknowledged should be in the store (rotel retries what the processor did not
acknowledge): the script waits up to ``--drain`` seconds for it, then counts what is missing
and greps rotel's log for dropped data.

    .venv/bin/python bench/collector_kill.py [--trials 5] [--protocols grpc,http] [--stop term]
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spanguard_processor.store.span_store import SpanStore
from tests.reliability.servers import EXPORT, request_bytes, spans_of_one_trace
from tests.sdk.rotel_helper import RotelCollector, free_port

SEED = 20261201
_ANNOUNCE = re.compile(r"listening")


@dataclass
class Trial:
    protocol: str
    kill_at: float
    acked_spans: int
    stored_spans: int
    lost_spans: int
    drops_logged: int
    drain_seconds: float
    drop_line: str = ""


class Processor:
    """``spanguard serve`` on fixed ports, restartable on the same ports and store."""

    def __init__(self, store: Path, grpc_port: int, http_port: int) -> None:
        self.args = [
            sys.executable,
            "-m",
            "spanguard_processor",
            "serve",
            "--store",
            str(store),
            "--grpc-port",
            str(grpc_port),
            "--http-port",
            str(http_port),
            "--wait-duration",
            "0.2",
        ]
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        deadline = time.monotonic() + 30
        while True:  # the old process's ports may take a moment to free
            self.proc = subprocess.Popen(
                self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            if _ANNOUNCE.search(line):
                return
            err = self.proc.communicate()[1]
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve did not restart: {line!r} {err[-500:]!r}")
            time.sleep(0.1)

    def kill(self, how: str) -> None:
        assert self.proc is not None
        if how == "kill":
            self.proc.kill()  # SIGKILL: connections reset mid-request
        else:
            self.proc.terminate()  # SIGTERM: requests in progress finish
        self.proc.communicate(timeout=60)

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.terminate()
        self.proc.communicate(timeout=30)


def _requests(count: int) -> list[tuple[bytes, frozenset[str]]]:
    out = []
    for _ in range(count):
        spans = spans_of_one_trace(5)
        ids = frozenset(
            format(s.get_span_context().span_id, "016x")  # type: ignore[union-attr]
            for s in spans
        )
        out.append((request_bytes(spans), ids))
    return out


def _send(
    port: int, requests: list[tuple[bytes, frozenset[str]]], rate: float, acked: set[int]
) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        export = channel.unary_unary(EXPORT)
        start = time.monotonic()
        for index, (body, _) in enumerate(requests):
            time.sleep(max(0.0, start + index / rate - time.monotonic()))
            try:
                export(body, timeout=5)
                acked.add(index)
            except grpc.RpcError:
                pass


def _stored(store: Path) -> set[str]:
    with SpanStore(store, readonly=True) as db:
        return {span_id for _, span_id in db.span_ids()}


def run_trial(protocol: str, rng: random.Random, args: argparse.Namespace) -> Trial:
    requests = _requests(int(args.seconds * args.rate))
    with tempfile.TemporaryDirectory(prefix="collector-kill-") as tmp:
        store = Path(tmp) / "spans.db"
        grpc_port, http_port = free_port(), free_port()
        processor = Processor(store, grpc_port, http_port)
        processor.start()
        target = grpc_port if protocol == "grpc" else http_port
        with RotelCollector(f"http://127.0.0.1:{target}", export_protocol=protocol) as rotel:
            acked: set[int] = set()
            sender = threading.Thread(
                target=_send, args=(rotel.grpc_port, requests, args.rate, acked)
            )
            kill_at = rng.uniform(0.25, 0.6) * args.seconds
            sender.start()
            time.sleep(kill_at)
            processor.kill(args.stop)
            time.sleep(args.down)
            processor.start()
            sender.join()
            expected = set().union(*(requests[i][1] for i in acked))
            started = time.monotonic()
            stored = _stored(store)
            while not expected <= stored and time.monotonic() - started < args.drain:
                time.sleep(0.5)
                stored = _stored(store)
            drained = time.monotonic() - started
            log = rotel.log.read_text(errors="replace") + "".join(
                p.read_text(errors="replace")
                for p in rotel.log.parent.glob("*.log")
                if p != rotel.log
            )
        processor.stop()
    drops = [line for line in log.splitlines() if "drop" in line.lower()]
    return Trial(
        protocol,
        kill_at,
        len(expected),
        len(expected & stored),
        len(expected - stored),
        len(drops),
        drained,
        drops[0] if drops else "",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--protocols", default="grpc,http")
    parser.add_argument("--seconds", type=float, default=6.0, help="sending time per trial")
    parser.add_argument("--rate", type=float, default=25.0, help="requests/s (5 spans each)")
    parser.add_argument("--down", type=float, default=1.0, help="seconds the processor is down")
    parser.add_argument(
        "--stop",
        choices=["kill", "term"],
        default="kill",
        help="SIGKILL (a crash) or SIGTERM (a graceful restart)",
    )
    parser.add_argument("--drain", type=float, default=45.0, help="seconds to wait for retries")
    args = parser.parse_args()
    rng = random.Random(SEED)
    trials: list[Trial] = []
    for _ in range(args.trials):
        for protocol in args.protocols.split(","):
            trial = run_trial(protocol, rng, args)
            trials.append(trial)
            print(
                f"{trial.protocol:5} kill at {trial.kill_at:4.1f} s: {trial.stored_spans} of "
                f"{trial.acked_spans} spans rotel acknowledged are stored, "
                f"{trial.lost_spans} lost; rotel logged {trial.drops_logged} drop line(s); "
                f"drained in {trial.drain_seconds:.1f} s",
                flush=True,
            )
            if trial.drop_line:
                print(f"      rotel: {trial.drop_line[:400]}", flush=True)
    print()
    print(f"processor stopped by SIG{args.stop.upper()}, down {args.down:g} s, restarted")
    print(f"{'protocol':10}{'trials':>8}{'with loss':>11}{'spans lost':>12}{'of acked':>10}")
    for protocol in args.protocols.split(","):
        mine = [t for t in trials if t.protocol == protocol]
        print(
            f"{protocol:10}{len(mine):8}{sum(t.lost_spans > 0 for t in mine):11}"
            f"{sum(t.lost_spans for t in mine):12}{sum(t.acked_spans for t in mine):10}"
        )


if __name__ == "__main__":
    main()
