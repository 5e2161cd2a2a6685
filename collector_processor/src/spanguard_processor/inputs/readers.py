"""Span files and stores in, agent traces out — whatever the input is, detected by content.

Inputs recognised (each may be gzip- or zstd-compressed, detected by its magic bytes, not its
name):

* assembled agent-trace JSONL (what ``spanguard traces export --format agent`` writes);
* OTLP-JSON lines: the Collector ``file`` exporter's JSON output and the Python OTLP JSON file
  exporter's, one ``{"resourceSpans": ...}`` batch per line — streamed line by line;
* a whole-file OTLP-JSON document (pretty-printed, or a list of documents) — read whole;
* length-prefixed protobuf: the Collector ``file`` exporter's ``format: proto`` output, each
  ``ExportTraceServiceRequest`` preceded by its length as 4 big-endian bytes — streamed;
* the Collector ``file`` exporter's ``compression: zstd`` output in both of its layouts: every
  message compressed on its own and length-prefixed (JSON or protobuf inside; the exporter's
  default), or the whole file one zstd stream of frames (its native-compression feature gate);
* a spanguard SQLite span store (``spanguard serve --store``).

Span files may hold OTLP log records beside the spans (``resourceLogs`` lines or documents,
``ExportLogsServiceRequest`` messages: the file exporter of a Collector with a logs pipeline).
Those naming a span are read first (:mod:`.logfiles`) and stored with their span as span
events, wherever in the files either comes; the rest are skipped.

A bad line (or protobuf message) raises :class:`TraceFormatError` naming the file and line (or
message number); with ``skip_bad`` it is counted and skipped instead.
"""

from __future__ import annotations

import json
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from spanguard.exceptions import InputError, TraceFormatError

from ..common._json import parse_json
from ..common.jsonio import json_lines
from ..common.limits import bounded_lines, read_bounded
from ..ingest.otlp_json import decode_document
from ..ingest.otlp_logs import (
    EventIndex,
    attach_to_document,
    attach_to_request,
    is_logs_document,
    parse_logs_request,
)
from ..ingest.otlp_proto import decode_request, parse_request
from ..ingest.spans import DecodedBatch, gc_paused
from ..store.span_store import SpanStore
from ..traces.annotations import Annotations
from ..traces.model import AgentTrace
from .files import (
    MAX_MESSAGE,
    ZSTD_MAGIC,
    InputKind,
    Source,
    detect_kind,
    expand,
)
from .logfiles import scan_log_events
from .stored_traces import stored_agent_traces, stored_annotations

__all__ = [
    "IngestReport",
    "detect_kind",
    "ingest_files",
    "iter_span_file",
    "read_agent_traces_any",
    "store_annotations",
]

Progress = Callable[[int], None]
# None: a logs document or request, read by the first pass (see .logfiles)
_Batches = Iterator[tuple[int, DecodedBatch | TraceFormatError | None]]


def _located(exc: TraceFormatError, path: Path, line: int) -> TraceFormatError:
    return TraceFormatError(exc.detail, file=str(path), line=line, field=exc.field)


def _check(batch: DecodedBatch, path: Path, line: int) -> DecodedBatch:
    if batch.rejected:
        raise TraceFormatError(
            f"{batch.rejected} span(s) have invalid ids; the first: {batch.error}",
            file=str(path),
            line=line,
        )
    return batch


def _json_lines(source: Source, path: Path, events: EventIndex | None) -> _Batches:
    for number, line in enumerate(
        bounded_lines(source.stream, str(path), TraceFormatError), start=1
    ):
        if number == 1:
            line = line.removeprefix(b"\xef\xbb\xbf")
        if not line.strip():
            continue
        try:
            document = parse_json(line)
        except json.JSONDecodeError as exc:
            yield (
                number,
                TraceFormatError(
                    f"is not valid JSON or UTF-8: {exc}.", file=str(path), line=number
                ),
            )
            continue
        if is_logs_document(document):
            yield number, None
            continue
        try:
            yield number, _check(_document_batch(document, line, events), path, number)
        except TraceFormatError as exc:
            yield number, _located(exc, path, number)


def _document_batch(
    document: object, body: bytes | None, events: EventIndex | None
) -> DecodedBatch:
    """A span document's batch, with the log events of its spans joined in (then the body is
    the document serialized again)."""
    if events and isinstance(document, dict) and attach_to_document(document, events):
        body = None
    return decode_document(document, body)


def _whole_json(source: Source, path: Path, events: EventIndex | None) -> _Batches:
    try:
        value = parse_json(read_bounded(source.stream, str(path), error=TraceFormatError))
    except json.JSONDecodeError as exc:
        raise TraceFormatError(f"is not valid JSON or UTF-8: {exc}.", file=str(path)) from None
    documents = value if isinstance(value, list) else [value]
    for index, document in enumerate(documents, start=1):
        if is_logs_document(document):
            yield index, None
            continue
        try:
            yield index, _check(_document_batch(document, None, events), path, index)
        except TraceFormatError as exc:
            raise TraceFormatError(
                f"document {index}: {exc.detail}", file=str(path), field=exc.field
            ) from None


def _proto_messages(source: Source, path: Path, events: EventIndex | None) -> _Batches:
    number = 0
    while True:
        prefix = source.stream.read(4)
        if not prefix:
            return
        number += 1
        offset = source.position
        if len(prefix) < 4:
            raise TraceFormatError(
                f"message {number}: truncated length prefix.", file=str(path), line=number
            )
        (size,) = struct.unpack(">I", prefix)
        if size > MAX_MESSAGE:
            raise TraceFormatError(
                f"message {number}: length {size} is implausible; this is not a length-prefixed "
                "OTLP protobuf file.",
                file=str(path),
                line=number,
            )
        body = source.stream.read(size)
        if len(body) < size:
            raise TraceFormatError(
                f"message {number}: truncated ({len(body)} of {size} bytes).",
                file=str(path),
                line=number,
            )
        try:
            batch = _decode_message(body, events)
            yield number, None if batch is None else _check(batch, path, number)
        except TraceFormatError as exc:
            yield (
                number,
                TraceFormatError(
                    f"message {number} (near byte {offset}): {exc.detail}",
                    file=str(path),
                    line=number,
                ),
            )


def _decode_message(body: bytes, events: EventIndex | None) -> DecodedBatch | None:
    """One length-prefixed message: protobuf, or (the file exporter with ``compression: zstd``)
    a zstd frame holding protobuf or OTLP-JSON; None for a logs request or document."""
    if body.startswith(ZSTD_MAGIC):
        try:
            body = zstandard.ZstdDecompressor().decompress(body, max_output_size=MAX_MESSAGE)
        except zstandard.ZstdError as exc:
            raise TraceFormatError(f"is not a valid zstd frame ({exc}).") from None
        if body.lstrip()[:1] == b"{":
            try:
                document = parse_json(body)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(f"is not valid JSON or UTF-8: {exc}.") from None
            return None if is_logs_document(document) else _document_batch(document, body, events)
    try:
        request = parse_request(body)
    except TraceFormatError:
        if parse_logs_request(body) is not None:  # a logs request does not parse as spans
            return None
        raise
    batch = decode_request(request, body)
    if batch.rejected and not batch.spans and parse_logs_request(body) is not None:
        return None
    if events and attach_to_request(request, events):
        return decode_request(request)
    return batch


@dataclass
class IngestReport:
    """What an ingest read: spans stored, and the lines skipped (file, line) with --skip-bad."""

    spans: int = 0
    batches: int = 0
    skipped: list[tuple[str, int]] = field(default_factory=list)


def iter_span_file(
    path: Path,
    *,
    skip_bad: bool = False,
    report: IngestReport | None = None,
    progress: Progress | None = None,
    events: EventIndex | None = None,
) -> Iterator[DecodedBatch]:
    """Stream the span batches of one span file (any supported span format), the ``events``
    of their spans joined in; log records are skipped (:func:`scan_log_events` reads them)."""
    kind = detect_kind(path)
    readers = {
        InputKind.OTLP_JSONL: _json_lines,
        InputKind.OTLP_JSON: _whole_json,
        InputKind.OTLP_PROTO: _proto_messages,
    }
    if kind not in readers:
        raise TraceFormatError(f"holds {kind}, not spans.", file=str(path))
    report = report if report is not None else IngestReport()
    source = Source(path)
    spans = logs = 0
    try:
        for number, item in readers[kind](source, path, events):
            if item is None:
                logs += 1
                continue
            if isinstance(item, TraceFormatError):
                if not skip_bad:
                    raise item
                report.skipped.append((str(path), number))
                continue
            report.batches += 1
            report.spans += len(item.spans)
            spans += len(item.spans)
            if progress is not None:
                progress(source.position)
            yield item
    except (OSError, EOFError, zstandard.ZstdError) as exc:
        raise TraceFormatError(f"cannot be read or decompressed ({exc}).", file=str(path)) from None
    finally:
        source.close()
    if not spans and not logs:  # e.g. NUL bytes read as empty protobuf messages, or "[]"
        raise TraceFormatError(
            f"no spans found in {path} (read as {kind}); it is empty or not a span file."
        )


def ingest_files(
    store: SpanStore,
    paths: Sequence[Path],
    *,
    skip_bad: bool = False,
    chunk_spans: int = 5000,
    progress: Callable[[Path, int], None] | None = None,
) -> IngestReport:
    """Store the spans of span files (streamed, ``chunk_spans`` per transaction), then mark
    every trace released; traces without a root span are ``partial``. Log records in the files
    that name a span are stored with it, as span events (a first pass reads them)."""
    report = IngestReport()
    events = scan_log_events(paths)
    with gc_paused():
        _ingest(store, paths, skip_bad, chunk_spans, progress, report, events)
    store.release_all()
    return report


def _ingest(
    store: SpanStore,
    paths: Sequence[Path],
    skip_bad: bool,
    chunk_spans: int,
    progress: Callable[[Path, int], None] | None,
    report: IngestReport,
    events: EventIndex,
) -> None:
    pending: list[DecodedBatch] = []
    count = 0
    for path in paths:
        tick = (lambda pos, p=path: progress(p, pos)) if progress else None
        for batch in iter_span_file(
            path, skip_bad=skip_bad, report=report, progress=tick, events=events
        ):
            pending.append(batch)
            count += len(batch.spans)
            if count >= chunk_spans:
                store.put_batches(pending)
                pending, count = [], 0
    store.put_batches(pending)


def _agent_traces(path: Path) -> Iterator[AgentTrace]:
    """Agent-trace JSONL, every line validated (errors name file, line and field)."""
    name = str(path)
    source = Source(path)
    try:
        for number, value in json_lines(source.stream, name):
            try:
                trace = AgentTrace.from_dict(value)
            except InputError as exc:
                raise exc.located(file=name, line=number) from None
            yield trace
    except (OSError, EOFError, zstandard.ZstdError) as exc:
        raise TraceFormatError(f"cannot be read or decompressed ({exc}).", file=name) from None
    finally:
        source.close()


def store_annotations(stores: Sequence[Path], skipped: list[str] | None = None) -> Annotations:
    """Annotation spans of several store partitions: an annotation may sit in another
    partition than the request it annotates (it is a trace of its own). With ``skipped``,
    unreadable ones are described there instead of raising."""
    merged = Annotations()
    for path in stores:
        with SpanStore(path, readonly=True) as store:
            problems: list[str] | None = None if skipped is None else []
            merged.update(stored_annotations(store, problems))
            if skipped is not None and problems:
                skipped.extend(f"{path}: {problem}" for problem in problems)
    return merged


def read_agent_traces_any(
    paths: Sequence[Path],
    *,
    skip_bad: bool = False,
    include_pending: bool = False,
    skipped: list[str] | None = None,
    annotations: Annotations | None = None,
    orphans: list[str] | None = None,
) -> Iterator[AgentTrace]:
    """Agent traces from any mix of agent-trace JSONL files, span files and span stores.

    A directory stands for the files in it (e.g. the Collector file exporter's rotated files).

    Span files are assembled together (a trace split across files is joined) through a
    temporary store, so memory does not grow with their size. Stores are read as they are
    (``include_pending`` adds their unreleased traces, marked partial). Order: the inputs in
    the order given, span files last, each in its own stable order.

    ``skip_bad`` skips malformed lines of span files. A damaged store raises
    :class:`~spanguard_processor.store.span_store.DamagedStore`; given a ``skipped`` list,
    traces (and annotations) with unreadable spans are left out instead, each described there.
    Stored traces merge the annotations of every store in ``paths``, or ``annotations`` when
    given (a reader taking stores one at a time passes :func:`store_annotations` of all).
    Traces of log records only are left out, their ids appended to ``orphans`` when given.
    """
    span_files: list[Path] = []
    kinds = [(path, detect_kind(path)) for path in expand(paths)]
    if annotations is None:
        annotations = store_annotations(
            [path for path, kind in kinds if kind == InputKind.STORE], skipped
        )
    for path, kind in kinds:
        if kind == InputKind.AGENT_JSONL:
            yield from _agent_traces(path)
        elif kind == InputKind.STORE:
            store = SpanStore(path, readonly=True)
            problems: list[str] | None = None if skipped is None else []
            try:
                yield from stored_agent_traces(
                    store,
                    include_pending=include_pending,
                    annotations=annotations,
                    skipped=problems,
                    orphans=orphans,
                )
            finally:
                store.close()
            if skipped is not None and problems:
                # a damaged index row is met by the annotations' pass too: described once
                seen = set(skipped)
                skipped.extend(
                    described
                    for described in (f"{path}: {problem}" for problem in problems)
                    if described not in seen
                )
        else:
            span_files.append(path)
    if span_files:
        with tempfile.TemporaryDirectory(prefix="spanguard-") as tmp:
            store = SpanStore(Path(tmp) / "spans.db", durable=False)
            try:
                ingest_files(store, span_files, skip_bad=skip_bad)
                yield from stored_agent_traces(store, orphans=orphans)
            finally:
                store.close()
