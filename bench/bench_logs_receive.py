"""What serve's logs receivers spend putting a protobuf ``ExportLogsServiceRequest`` in the span
form, per GenAI record (``gen_ai.client.inference.operation.details`` with ≈0.9 KB of messages):
the protobuf path (ingest/otlp_logs_proto.py, what the receivers run) against the OTLP-JSON
dictionaries path (events_from_request + logs_as_spans, what the file readers use).

    python bench/bench_logs_receive.py [RECORDS]

Prints the best of 5 runs of each, in µs per record. Measured on the project's 2-core machine
(2,000 records): protobuf 12–14 µs, OTLP-JSON 143–172 µs.
"""

from __future__ import annotations

import json
import sys
import time

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

from spanguard_processor.collector.logs_receive import logs_request_as_spans
from spanguard_processor.ingest.codec_protobuf import PROTOBUF_CODEC
from spanguard_processor.ingest.otlp_logs import events_from_request, logs_as_spans


def _request(records: int) -> bytes:
    logs = InMemoryLogRecordExporter()
    logging = LoggerProvider()
    logging.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer, logger = TracerProvider().get_tracer("bench"), logging.get_logger("bench")
    for _ in range(records):
        with tracer.start_as_current_span("chat"):
            logger.emit(
                event_name="gen_ai.client.inference.operation.details",
                attributes={
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "q" * 200}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": "a" * 400}]}]
                    ),
                    "gen_ai.request.model": "gpt-4o-mini",
                },
            )
    return bytes(encode_logs(logs.get_finished_logs()).SerializeToString())


def _best_us(fn: object, records: int) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best / records * 1e6


def main(records: int = 2000) -> None:
    body = _request(records)
    protobuf = _best_us(lambda: logs_request_as_spans(body, PROTOBUF_CODEC), records)

    def through_json() -> None:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )

        logs_as_spans(events_from_request(ExportLogsServiceRequest.FromString(body)))

    json_path = _best_us(through_json, records)
    print(
        f"{records} records, {len(body)} bytes: protobuf path {protobuf:.1f} µs/record, "
        f"OTLP-JSON path {json_path:.1f} µs/record"
    )


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:2]))
