"""Export plumbing: a batch processor that counts what it drops, and an OTLP JSON file exporter.

The counting processor wraps the SDK's ``BatchSpanProcessor``: it counts every span that ends
and every span handed to the exporter (and whether the export succeeded), so
``ended - exported - failed`` is what the queue dropped once everything is flushed.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

__all__ = ["CountingBatchProcessor", "ExportStats", "OtlpJsonFileExporter", "otlp_json_line"]

logger = logging.getLogger("spanguard")


@dataclass(frozen=True)
class ExportStats:
    """Span counts of one spanguard export pipeline since :func:`spanguard.configure`."""

    ended: int  # spans that ended and were sampled
    exported: int  # spans the exporter accepted
    failed: int  # spans the exporter gave up on (after its own retries)
    dropped: int  # spans lost before export (queue full); exact after a flush


class _CountingExporter(SpanExporter):
    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self.exported = 0
        self.failed = 0
        self._warned = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            logger.exception("spanguard: the span exporter raised; %d spans lost", len(spans))
            result = SpanExportResult.FAILURE
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
                warn, self._warned = not self._warned, True
        if result is not SpanExportResult.SUCCESS and warn:
            logger.warning("spanguard: an export of %d spans failed (logged once)", len(spans))
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


class CountingBatchProcessor(SpanProcessor):
    """``BatchSpanProcessor`` with span accounting; after shutdown it ignores new spans."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_size: int,
        max_export_batch_size: int,
        schedule_delay_millis: float,
    ) -> None:
        self._exporter = _CountingExporter(exporter)
        self.max_queue_size = max_queue_size
        self.max_export_batch_size = max_export_batch_size
        self.schedule_delay_millis = schedule_delay_millis
        self._batch = BatchSpanProcessor(
            self._exporter,
            max_queue_size=max_queue_size,
            max_export_batch_size=max_export_batch_size,
            schedule_delay_millis=schedule_delay_millis,
        )
        self._lock = threading.Lock()
        self._ended = 0
        self._closed = False  # takes no more spans
        self._shut = False

    @property
    def exporter(self) -> SpanExporter:
        return self._exporter.inner

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        if self._closed or span.context is None or not span.context.trace_flags.sampled:
            return
        with self._lock:
            self._ended += 1
        self._batch.on_end(span)

    def stats(self) -> ExportStats:
        ended = self._ended
        exported, failed = self._exporter.exported, self._exporter.failed
        return ExportStats(ended, exported, failed, max(0, ended - exported - failed))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._batch.force_flush(timeout_millis)

    def close(self) -> None:
        """Take no more spans; those queued are still exported by :meth:`force_flush` and
        :meth:`shutdown`."""
        self._closed = True

    def shutdown(self) -> None:
        self._closed = True
        if not self._shut:
            self._shut = True
            self._batch.shutdown()


def _hex_ids(node: Any) -> None:
    """Turn protobuf-JSON's base64 ids into OTLP-JSON's hex ids, in place."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def otlp_json_line(spans: Sequence[ReadableSpan]) -> str:
    """One OTLP-JSON ``ExportTraceServiceRequest`` (hex ids, integer enums), one line."""
    # imported here: only the file exporter needs protobuf, and `import spanguard` stays light
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    message = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    _hex_ids(message)
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


class OtlpJsonFileExporter(SpanExporter):
    """Appends each batch to ``path`` as one OTLP-JSON line (the Collector ``file`` format)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._closed = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed:
            return SpanExportResult.FAILURE
        line = otlp_json_line(spans) + "\n"
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
        except OSError as exc:
            logger.error("spanguard: cannot write spans to %s: %s", self.path, exc)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self._closed = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
