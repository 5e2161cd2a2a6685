"""Cost of the receive-path limits (limits.py) per span, beside the parse it follows.

Floor: ``parse_request`` + ``decode_request`` of a 40-request OTLP protobuf body (the receive
path without limits). Ours: the same plus ``ProtobufCodec.shape`` (attribute limit, per-trace
span count; redaction off, as by default). Alternating rounds, best of 7, µs per span.

    .venv/bin/python bench/load_limits.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from spanguard_processor.collector.limits import Shaper
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC
from spanguard_processor.ingest.otlp_proto import decode_request, parse_request
from tests.reliability.corpus import otlp_requests


def main() -> None:
    request = ExportTraceServiceRequest()
    for body in otlp_requests(40):
        request.MergeFromString(body)
    body = request.SerializeToString()
    spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    shaper = Shaper()

    def floor() -> None:
        decode_request(parse_request(body))

    def ours() -> None:
        parsed = parse_request(body)
        PROTOBUF_CODEC.shape(parsed, shaper.shaping)
        decode_request(parsed)

    best: dict[str, float] = {}
    runs: list[tuple[str, Callable[[], None]]] = [("floor", floor), ("with limits", ours)]
    for _ in range(7):
        for name, run in runs:
            started = time.perf_counter()
            for _ in range(100):
                run()
            per_span = (time.perf_counter() - started) / 100 / spans * 1e6
            best[name] = min(best.get(name, per_span), per_span)
    print(f"{spans} spans per request body")
    for name, value in best.items():
        print(f"{name:12} {value:6.2f} µs/span")
    print(
        f"ratio        {best['with limits'] / best['floor']:6.2f}  "
        f"(limits add {best['with limits'] - best['floor']:.2f} µs/span)"
    )


if __name__ == "__main__":
    main()
