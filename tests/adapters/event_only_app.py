"""A renter-support app instrumented only by opentelemetry-instrumentation-genai-openai, with
message content in log events only, writing spans and logs to one file as the Collector's file
exporter does.

``python event_only_app.py OUT_FILE FORMAT OPENAI_BASE_URL VARIANTS_JSON``: for each variant
(``{"id", "seed_id", "prompt", "assignments"}``) one request: a parent span carrying only the
counterfactual identity (no content) and the instrumented chat call. Run it with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` and
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=EVENT_ONLY``: the prompt and the answer then
exist only in ``gen_ai.client.inference.operation.details`` log records.

FORMAT is ``json`` (OTLP-JSON lines, ``{"resourceSpans": ...}`` and ``{"resourceLogs": ...}``
interleaved, ids in hex) or ``proto`` (length-prefixed ``Export*ServiceRequest`` messages); or
``otlp-http`` / ``otlp-grpc``: OUT_FILE is then an OTLP endpoint (``http://host:port``) the
app exports its spans and log records to with the SDK's OTLP exporters (batch processors).
"""

from __future__ import annotations

import json
import struct
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogExporter, LogExportResult, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

SYSTEM = "You help people find a flat to rent."
_LOCK = threading.Lock()


def _hex_ids(value: Any) -> Any:
    """Canonical proto JSON writes ids in base64; OTLP-JSON writes them in hex."""
    import base64

    if isinstance(value, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
                else _hex_ids(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


class FileOut:
    def __init__(self, path: Path, fmt: str) -> None:
        self.path, self.fmt = path, fmt

    def write(self, message: Message) -> None:
        with _LOCK, self.path.open("ab") as out:
            if self.fmt == "proto":
                body = message.SerializeToString()
                out.write(struct.pack(">I", len(body)) + body)
            else:
                out.write(json.dumps(_hex_ids(MessageToDict(message))).encode() + b"\n")


class Spans(SpanExporter):
    def __init__(self, out: FileOut) -> None:
        self.out = out

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        self.out.write(encode_spans(spans))
        return SpanExportResult.SUCCESS


class Logs(LogExporter):
    def __init__(self, out: FileOut) -> None:
        self.out = out

    def export(self, batch: Sequence[Any]) -> LogExportResult:
        self.out.write(encode_logs(batch))
        return LogExportResult.SUCCESS

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _otlp(endpoint: str, grpc: bool, tracing: TracerProvider, logging: LoggerProvider) -> None:
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if grpc:
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        spans: Any = OTLPSpanExporter(endpoint=endpoint, insecure=True)
        logs: Any = OTLPLogExporter(endpoint=endpoint, insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import (
            OTLPLogExporter as HttpLogs,
        )
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpans,
        )

        spans, logs = (
            HttpSpans(endpoint=endpoint + "/v1/traces"),
            HttpLogs(endpoint=endpoint + "/v1/logs"),
        )
    tracing.add_span_processor(BatchSpanProcessor(spans))
    logging.add_log_record_processor(BatchLogRecordProcessor(logs))


def main(out_file: str, fmt: str, base_url: str, variants_json: str) -> None:
    import openai
    from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

    resource = Resource.create({"service.name": "renter-support"})
    tracing = TracerProvider(resource=resource)
    logging = LoggerProvider(resource=resource)
    if fmt.startswith("otlp-"):
        _otlp(out_file, fmt == "otlp-grpc", tracing, logging)
    else:
        out = FileOut(Path(out_file), fmt)
        tracing.add_span_processor(SimpleSpanProcessor(Spans(out)))
        logging.add_log_record_processor(SimpleLogRecordProcessor(Logs(out)))
    OpenAIInstrumentor().instrument(tracer_provider=tracing, logger_provider=logging)
    tracer = tracing.get_tracer("renter-support")
    client = openai.OpenAI(base_url=base_url, api_key="test-key", max_retries=0)
    for variant in json.loads(Path(variants_json).read_text()):
        identity = {"spanguard.seed_id": variant["seed_id"], "spanguard.variant_id": variant["id"]}
        identity.update({f"spanguard.assignment.{k}": v for k, v in variant["assignments"].items()})
        with tracer.start_as_current_span("renter request", attributes=identity):
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": variant["prompt"]},
                ],
            )
    tracing.shutdown()
    logging.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:5])
