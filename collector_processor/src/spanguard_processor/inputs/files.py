"""Opening an input and telling what it holds, by content — never by its name.

Every command's inputs are told apart here, by one classifier: :class:`FileKind` (what a file
holds, from its first record: :func:`row_kind`; :func:`..guard.sniff` tells it for the
commands' input checks) and, as a view of it, :class:`InputKind` (how a reader reads the
file): :func:`detect_kind` for the readers of spans and agent traces (``spanguard ingest``,
``spanguard traces``), :func:`evaluation_kind` for the evaluators, which also read fairtrace
records and trace2eval rows. Compression (gzip, zstd) is recognised by its magic bytes and
undone while streaming (:class:`Source`).
"""

from __future__ import annotations

import enum
import gzip
import io
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, cast

import zstandard

from spanguard.exceptions import TraceFormatError

from ..common._json import parse_json
from ..common.limits import bounded_lines
from ..store.schema import SQLITE_MAGIC, DamagedStore, looks_like_store

__all__ = [
    "GZIP_MAGIC",
    "SPAN_KINDS",
    "ZSTD_MAGIC",
    "FileKind",
    "InputKind",
    "Source",
    "detect_kind",
    "evaluation_kind",
    "expand",
    "framed_protobuf",
    "read_head",
    "row_kind",
]


class FileKind(enum.StrEnum):
    """What a file holds, told from its content; the value is how a message names it."""

    SUITE = "a fairness suite"
    AGENT_TRACES = "agent traces (from `traces export` or the processor)"
    SPAN_FILE = "a span file"
    STORE = "a span store (from `serve` or `ingest`)"
    CASE_SET = "a case set (from `cases build`)"
    OUTPUTS = "outputs (JSON lines of {id, output})"
    RUN_RESULT = "a run result (from `cases run -o`)"
    FAIRNESS_REPORT = "a fairness report (from `fairness -o`)"
    HISTORY = "a fairness history (history.jsonl)"
    RECORDS = "fairtrace records"
    TRACE_LOG = "a trace log (trace2eval rows)"
    EMPTY = "empty"
    UNKNOWN = "unrecognised"


# a first record with one of these keys is spans (logs: the file exporter writes them beside)
_SPAN_ROW_KEYS = frozenset({"resourceSpans", "resourceLogs"})


def row_kind(row: object) -> FileKind:
    """The kind of a file whose first record (a JSON line, or a whole document) is ``row``: the
    one classifier of records, behind :func:`..guard.sniff` (what a command accepts) and
    :func:`detect_kind` / :func:`evaluation_kind` (how a reader reads it)."""
    if isinstance(row, list):
        return row_kind(row[0]) if row else FileKind.UNKNOWN
    if not isinstance(row, dict):
        return FileKind.UNKNOWN
    keys = set(row)
    if keys & _SPAN_ROW_KEYS:
        return FileKind.SPAN_FILE
    if "trace_id" in keys:
        return FileKind.AGENT_TRACES
    if "checks" in keys and "input" in keys:
        return FileKind.CASE_SET
    if "case_results" in keys or ({"metrics", "version"} <= keys and "dataset" not in keys):
        return FileKind.RUN_RESULT
    if keys & {"metric_results", "scenario_results"}:
        return FileKind.FAIRNESS_REPORT
    if "suite_sha256" in keys or {"failed_metrics", "generated_at"} <= keys:
        return FileKind.HISTORY
    if "dataset" in keys:
        return FileKind.SUITE
    if "seed_id" in keys:
        return FileKind.RECORDS
    if "output" in keys and "input" in keys:
        return FileKind.TRACE_LOG
    if "output" in keys:
        return FileKind.OUTPUTS
    return FileKind.UNKNOWN


class InputKind(enum.StrEnum):
    """How a reader reads an input: a view of the file's :class:`FileKind` (its first record's,
    :func:`row_kind`) and of its layout — a store, JSON lines, one JSON document or
    length-prefixed protobuf — as :func:`detect_kind` and :func:`evaluation_kind` tell it."""

    STORE = "store"
    AGENT_JSONL = "agent-jsonl"
    OTLP_JSONL = "otlp-jsonl"
    OTLP_JSON = "otlp-json"
    OTLP_PROTO = "otlp-proto"
    # evaluation inputs only: JSON lines that are not spans (agent traces, fairtrace records,
    # trace2eval rows, told apart line by line), and one JSON document of records
    JSON_LINES = "json-lines"
    JSON_DOCUMENT = "json-document"


SPAN_KINDS = frozenset(
    {InputKind.STORE, InputKind.OTLP_JSONL, InputKind.OTLP_JSON, InputKind.OTLP_PROTO}
)

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
MAX_MESSAGE = 256 * 1024 * 1024
_SPAN_KEYS = (b'"resourceSpans"', b'"resource_spans"', b'"resourceLogs"')  # logs: beside spans


class Source:
    """A file opened for streaming, decompressed when gzip or zstd; ``position`` counts raw
    bytes."""

    def __init__(self, path: Path) -> None:
        try:
            self.raw = path.open("rb")
        except OSError as exc:
            raise TraceFormatError(
                f"cannot be read: {exc.strerror or exc}.", file=str(path)
            ) from None
        magic = self.raw.read(4)
        self.raw.seek(0)
        self.stream: IO[bytes] = self.raw
        if magic.startswith(GZIP_MAGIC):
            self.stream = cast(IO[bytes], gzip.GzipFile(fileobj=self.raw, mode="rb"))
        elif magic == ZSTD_MAGIC:  # frames one after another: read across them
            reader = zstandard.ZstdDecompressor().stream_reader(
                self.raw, read_across_frames=True, closefd=False
            )
            # buffered, for readline and iteration (the bare reader has neither)
            self.stream = cast(IO[bytes], io.BufferedReader(cast(Any, reader)))

    @property
    def position(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.stream.close()
        self.raw.close()


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` bytes ``path`` holds, decompressed (the one reader of a file's first
    bytes, for :func:`detect_kind` and :func:`..guard.sniff`)."""
    source = Source(path)
    try:
        return source.stream.read(size)
    except (OSError, EOFError, zstandard.ZstdError) as exc:
        raise TraceFormatError(f"cannot be decompressed ({exc}).", file=str(path)) from None
    finally:
        source.close()


def _first_line(path: Path) -> bytes:
    source = Source(path)
    try:
        for line in bounded_lines(source.stream, str(path), TraceFormatError):
            if line.strip():
                return line.removeprefix(b"\xef\xbb\xbf")
        return b""
    except (OSError, EOFError, zstandard.ZstdError) as exc:  # cut inside its first line
        raise TraceFormatError(f"cannot be decompressed ({exc}).", file=str(path)) from None
    finally:
        source.close()


def _classify(path: Path) -> tuple[InputKind, bytes, object]:
    """The kind, the first bytes and the parsed first line (``None`` when it is not JSON);
    :data:`InputKind.JSON_LINES` for JSON objects of no span or agent-trace shape."""
    head = read_head(path)
    if head.startswith(SQLITE_MAGIC):
        return InputKind.STORE, head, None
    text = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if not text:
        return InputKind.AGENT_JSONL, head, None  # an empty file: no traces
    if text[:1] not in (b"{", b"["):
        if looks_like_store(path, head):
            raise DamagedStore("its SQLite header is overwritten", file=str(path))
        return InputKind.OTLP_PROTO, head, None
    try:
        value = parse_json(_first_line(path))
    except json.JSONDecodeError:
        return InputKind.OTLP_JSON, head, None  # a document spread over several lines
    if isinstance(value, list):
        return InputKind.OTLP_JSON, head, value
    kind = row_kind(value)
    if kind is FileKind.SPAN_FILE:
        return InputKind.OTLP_JSONL, head, value  # the file exporter writes logs beside spans
    if kind is FileKind.AGENT_TRACES:
        return InputKind.AGENT_JSONL, head, value
    return InputKind.JSON_LINES, head, value


def detect_kind(path: Path) -> InputKind:
    """Which span file, store or agent-trace file ``path`` holds, judged by its first bytes."""
    kind, head, _ = _classify(path)
    if kind == InputKind.OTLP_PROTO and not framed_protobuf(
        head
    ):  # e.g. NUL bytes: refused at once
        raise TraceFormatError(
            f"no spans found in {path}: it is neither JSON nor length-prefixed OTLP protobuf "
            f"(its first bytes are {head[:8].hex(' ')})."
        )
    if kind == InputKind.JSON_LINES:
        raise TraceFormatError(
            "is neither agent traces (objects with trace_id) nor OTLP-JSON spans (objects with "
            "resourceSpans).",
            file=str(path),
            line=1,
        )
    return kind


def evaluation_kind(path: Path, *, documents: bool = True) -> InputKind:
    """How an evaluator reads ``path``: one of :data:`SPAN_KINDS` (assembled into agent
    traces), :data:`InputKind.JSON_LINES` (agent traces, fairtrace records or trace2eval rows, told
    apart line by line) or :data:`InputKind.JSON_DOCUMENT` (one JSON list of records, or a report's
    ``scenario_results``; only with ``documents`` — trace2eval reads JSON lines alone).

    Spans are recognised positively: a store, a first line holding ``resourceSpans``, a JSON
    document mentioning it, or length-prefixed protobuf. Anything else is read as JSON lines,
    so a damaged first line is reported at its line like any other.
    """
    kind, head, first = _classify(path)
    if kind == InputKind.AGENT_JSONL:
        kind = InputKind.JSON_LINES
    elif kind == InputKind.OTLP_PROTO:
        kind = kind if framed_protobuf(head) else InputKind.JSON_LINES
    elif kind == InputKind.OTLP_JSON:
        kind = _document_kind(head, first)
    elif kind == InputKind.JSON_LINES and isinstance(first, dict) and "scenario_results" in first:
        kind = InputKind.JSON_DOCUMENT
    if kind == InputKind.JSON_DOCUMENT and not documents:
        return InputKind.JSON_LINES
    return kind


def _document_kind(head: bytes, first: object) -> InputKind:
    if isinstance(first, list):  # a document on one line
        spans = (
            bool(first) and isinstance(first[0], dict) and row_kind(first[0]) is FileKind.SPAN_FILE
        )
        return InputKind.OTLP_JSON if spans else InputKind.JSON_DOCUMENT
    opening = head.removeprefix(b"\xef\xbb\xbf").lstrip().split(b"\n", 1)[0].strip()
    if opening not in (b"{", b"["):  # not pretty-printed: JSON lines with a bad first line
        return InputKind.JSON_LINES
    return (
        InputKind.OTLP_JSON if any(key in head for key in _SPAN_KEYS) else InputKind.JSON_DOCUMENT
    )


def framed_protobuf(head: bytes) -> bool:
    """The Collector file exporter's protobuf layout: a 4-byte length, then an export request
    (its first field, ``resource_spans``, tag 0x0A) or a zstd frame holding one."""
    if len(head) < 5:
        return False
    (size,) = struct.unpack(">I", head[:4])
    return 0 < size <= MAX_MESSAGE and (head[4] == 0x0A or head[4:8] == ZSTD_MAGIC)


def expand(paths: Sequence[Path]) -> list[Path]:
    """Paths as given, a directory standing for its (non-hidden) files in name order."""
    expanded: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            expanded.extend(
                sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
            )
        else:
            expanded.append(path)
    return expanded
