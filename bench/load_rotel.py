"""Loopback load through the rotel collector: spanguard processor against a null-sink floor.

Runs the same load twice in one invocation, in this order: apps → rotel → a null OTLP/gRPC
sink that only notes span ids (the floor: what rotel and the network cost alone), then
apps → rotel → ``spanguard serve`` (durable SQLite store, trace assembly). A probe span sent
every 0.2 s is timed from the export call until it is visible at the end (noted by the sink,
or committed in the processor's store). Prints both latency percentiles and their ratio, the
spans stored against the spans the apps ended, and the processor's memory.

    .venv/bin/python bench/load_rotel.py [--seconds 30] [--apps 3] [--rate 80]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reliability.load import LoadReport, run_floor, run_load


def _percentiles(report: LoadReport) -> tuple[float, float, float]:
    return report.percentile(0.5), report.percentile(0.95), report.percentile(0.99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--apps", type=int, default=3)
    parser.add_argument("--rate", type=float, default=80, help="requests/s per app (4 spans)")
    args = parser.parse_args()
    floor = run_floor(seconds=args.seconds, apps=args.apps, rate=args.rate)
    with tempfile.TemporaryDirectory() as tmp:
        ours = run_load(Path(tmp), seconds=args.seconds, apps=args.apps, rate=args.rate)
    print(
        f"offered load: {args.apps} apps x {args.rate:g} requests/s x 4 spans for "
        f"{args.seconds:g} s"
    )
    print("end-to-end probe latency (export call -> visible at the end), ms:")
    print(f"{'':28}{'p50':>8}{'p95':>8}{'p99':>8}")
    for name, report in (("null sink (floor)", floor), ("spanguard processor", ours)):
        p50, p95, p99 = _percentiles(report)
        print(f"{name:28}{p50:8.0f}{p95:8.0f}{p99:8.0f}")
    ratios = [o / f for o, f in zip(_percentiles(ours), _percentiles(floor), strict=True)]
    print(f"{'ratio processor / floor':28}" + "".join(f"{r:8.2f}" for r in ratios))
    print(
        f"spans: floor received {floor.stored_spans} of {floor.ended + len(floor.probes)}; "
        f"processor stored {ours.stored_spans} of {ours.ended + len(ours.probes)} "
        f"(lost {ours.ended + len(ours.probes) - ours.stored_spans})"
    )
    print("processor: " + ours.summary())


if __name__ == "__main__":
    main()
