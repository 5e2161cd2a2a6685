"""The first pass over span files: the OTLP log records among them that name a span.

A span and its log records may come in any order, in one file or several (the Collector's
file exporter writes a logs pipeline's records beside the spans, or to a file of their own),
so the records are read before any span is stored: :func:`scan_log_events` indexes them by
(trace_id, span_id), and the span readers join them to their span
(:func:`~spanguard_processor.ingest.otlp_logs.attach_to_document`). The index is held in
memory: log records of GenAI events are a few per model call.

A JSON line is parsed only when it mentions ``resourceLogs``; a protobuf message is parsed as
a logs request (:func:`~spanguard_processor.ingest.otlp_logs.parse_logs_request`). Malformed
parts are left to the span pass, which reports them with their file and line.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

import zstandard

from spanguard.exceptions import TraceFormatError

from ..common._json import parse_json
from ..common.limits import bounded_lines, read_bounded
from ..ingest.otlp_logs import (
    EventIndex,
    LogEvent,
    events_from_document,
    events_from_request,
    is_logs_document,
    parse_logs_request,
)
from .files import (
    MAX_MESSAGE,
    ZSTD_MAGIC,
    InputKind,
    Source,
    detect_kind,
)

__all__ = ["scan_log_events"]

_LOGS_KEY = b'"resourceLogs"'


def scan_log_events(paths: Sequence[Path]) -> EventIndex:
    """Every span-bound log record in the span files among ``paths``, by (trace_id, span_id)."""
    index: EventIndex = defaultdict(list)
    for path in paths:
        try:
            kind = detect_kind(path)
        except TraceFormatError:
            continue  # the span pass says what is wrong with it
        scan = {
            InputKind.OTLP_JSONL: _json_lines,
            InputKind.OTLP_JSON: _whole_json,
            InputKind.OTLP_PROTO: _proto_messages,
        }.get(kind)
        if scan is None:
            continue
        source = Source(path)
        try:
            for event in scan(source):
                index[(event.trace_id, event.span_id)].append(event)
        except (OSError, EOFError, zstandard.ZstdError, TraceFormatError):
            continue  # the span pass reports the same problem, located (or skips it)
        finally:
            source.close()
    return dict(index)


def _document(body: bytes) -> list[LogEvent]:
    try:
        document = parse_json(body)
    except json.JSONDecodeError:
        return []
    return events_from_document(document) if is_logs_document(document) else []


def _json_lines(source: Source) -> Iterator[LogEvent]:
    # bounded as the span pass is: a line past the limit stops this pass (the span pass names it)
    for line in bounded_lines(source.stream, str(source.raw.name), TraceFormatError):
        if _LOGS_KEY in line:
            yield from _document(line)


def _whole_json(source: Source) -> Iterator[LogEvent]:
    try:
        value = parse_json(
            read_bounded(source.stream, str(source.raw.name), error=TraceFormatError)
        )
    except json.JSONDecodeError:
        return
    for document in value if isinstance(value, list) else [value]:
        if is_logs_document(document):
            yield from events_from_document(document)


def _proto_messages(source: Source) -> Iterator[LogEvent]:
    while len(prefix := source.stream.read(4)) == 4:
        (size,) = struct.unpack(">I", prefix)
        if size > MAX_MESSAGE:
            return
        body = source.stream.read(size)
        if body.startswith(ZSTD_MAGIC):
            body = zstandard.ZstdDecompressor().decompress(body, max_output_size=MAX_MESSAGE)
            if body.lstrip()[:1] == b"{":
                yield from _document(body)
                continue
        request = parse_logs_request(body)
        if request is not None:
            yield from events_from_request(request)
