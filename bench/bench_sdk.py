"""SDK benchmarks: decorator overhead, the unconfigured path, and the 30,000-span burst.

Run from the repository root with the project's venv::

    .venv/bin/python bench/bench_sdk.py            # everything
    .venv/bin/python bench/bench_sdk.py overhead   # one section: overhead | unconfigured | burst

Every figure is printed beside its floor or peer measured in the same run, as a ratio.
Peers (traceloop-sdk, OpenInference) are in bench/bench_sdk_peers.py, run in a separate venv.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _bench_common import NullExporter, interleaved  # noqa: E402


def overhead(calls: int = 20_000, rounds: int = 7) -> dict[str, float]:
    """``@spanguard.tool`` vs a bare ``start_as_current_span`` with the same attributes and
    the same provider and processor (spanguard's batch processor, null exporter)."""
    import spanguard
    from spanguard import semconv

    configuration = spanguard.configure(exporter=NullExporter(), private=True)
    tracer = configuration.provider.get_tracer("bench")

    @spanguard.tool
    def lookup(order_id: int) -> int:
        return order_id

    attributes = {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_EXECUTE_TOOL,
        semconv.GEN_AI_TOOL_NAME: "lookup",
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_TOOL,
        semconv.TOOL_NAME: "lookup",
    }

    def bare(order_id: int) -> int:
        with tracer.start_as_current_span("execute_tool lookup", attributes=attributes) as span:
            span.set_attribute(
                semconv.GEN_AI_TOOL_CALL_ID, format(span.get_span_context().span_id, "016x")
            )
            return order_id

    def plain(order_id: int) -> int:
        return order_id

    result = interleaved(
        {
            "spanguard.tool": lambda: lookup(1),
            "bare span": lambda: bare(1),
            "plain call": lambda: plain(1),
        },
        calls,
        rounds,
    )
    spanguard.shutdown()
    ratio = result["spanguard.tool"] / result["bare span"]
    print(
        f"overhead: @spanguard.tool {result['spanguard.tool'] / 1000:.1f} µs CPU/call, "
        f"bare start_as_current_span {result['bare span'] / 1000:.1f} µs, "
        f"plain call {result['plain call']:.0f} ns; ratio {ratio:.2f} (target ≤ 1.2)"
    )
    return {**result, "ratio": ratio}


UNCONFIGURED = """
import sys, json
sys.path.insert(0, {here!r})
from _bench_common import interleaved
import spanguard

@spanguard.tool
def lookup(order_id):
    return order_id

def plain(order_id):
    return order_id

print(json.dumps(interleaved({{"decorated": lambda: lookup(1), "plain": lambda: plain(1)}},
                             200_000, 7)))
"""


def unconfigured() -> dict[str, float]:
    """A decorated call in a process with no SDK provider anywhere (fresh interpreter)."""
    out = subprocess.run(
        [sys.executable, "-c", UNCONFIGURED.format(here=str(HERE))],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    result: dict[str, float] = json.loads(out)
    extra = result["decorated"] - result["plain"]
    print(
        f"unconfigured: decorated call {result['decorated']:.0f} ns CPU, plain call "
        f"{result['plain']:.0f} ns (lambda included in both); spanguard adds {extra:.0f} ns; "
        f"target < 2000 ns, ratio to target {result['decorated'] / 2000:.2f}"
    )
    return result


BURST = """
import sys, json, time, logging
logging.disable(logging.WARNING)  # the OTel queue logs one line per dropped span
import spanguard
sizes = json.loads(sys.argv[2])
spanguard.configure(exporter="otlp-grpc", endpoint=sys.argv[1], private=True, **sizes)

@spanguard.tool
def step(i):
    return i

start = time.perf_counter()
for i in range(30_000):
    step(i)
produced = time.perf_counter() - start
stats = spanguard.export_stats()
print(json.dumps({"ended": stats.ended, "exported": stats.exported, "dropped": stats.dropped,
                  "produce_s": produced}))
"""

OTEL_DEFAULT = {"max_queue_size": 2048, "max_export_batch_size": 512, "schedule_delay_millis": 5000}


def burst() -> dict[str, dict[str, float]]:
    """30,000 spans as fast as one process makes them, exported over OTLP/gRPC to a real
    receiver in this process: OTel's default queue sizes vs spanguard's."""
    from tests.sdk.rotel_helper import OtlpGrpcSink

    results: dict[str, dict[str, float]] = {}
    for label, sizes in (
        ("otel default (queue 2048)", OTEL_DEFAULT),
        ("spanguard (queue 65536)", {}),
    ):
        with OtlpGrpcSink() as sink:
            out = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(BURST), sink.endpoint, json.dumps(sizes)],
                capture_output=True,
                text=True,
                check=True,
                timeout=600,
            ).stdout
            stats = json.loads(out)
            time.sleep(0.5)
            stats["received"] = len(sink.spans())
        results[label] = stats
        print(
            f"burst: {label}: {stats['ended']} spans in {stats['produce_s']:.1f} s, "
            f"dropped {stats['dropped']} ({100 * stats['dropped'] / stats['ended']:.0f}%), "
            f"received {stats['received']}"
        )
    return results


SECTIONS = {"overhead": overhead, "unconfigured": unconfigured, "burst": burst}


def main(argv: list[str]) -> None:
    names = argv or list(SECTIONS)
    for name in names:
        SECTIONS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
