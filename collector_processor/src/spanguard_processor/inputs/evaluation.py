"""The evaluators' one reader: every input of ``spanguard fairness`` and ``spanguard cases
build``, told apart by content, as agent traces or rows.

An input is a span store, a span file, or a folder of them (assembled into agent traces by
:func:`~spanguard_processor.inputs.readers.read_agent_traces_any`), JSON lines, or (fairtrace
only) one JSON document — see :func:`~spanguard_processor.inputs.files.evaluation_kind`. JSON
lines may mix agent traces with rows of the evaluator's own format: fairtrace scenario records
for fairness, trace2eval log rows for regression. Those stay rows (:attr:`Entry.row`): each
carries what an agent trace has no field for (fairtrace's free ``response_metadata``,
trace2eval's aliases, numeric feedback on a scale inferred over the whole log, ``retry_count``
…), so each evaluator validates its own rows. Everything else is an :class:`AgentTrace`.

The two formats keep their peers' reading rules:

* ``FAIRTRACE`` — strict, as fairtrace reads: the first bad line stops the run with an
  :class:`~spanguard.exceptions.InputError` naming file, line and field. A line with a
  ``trace_id`` is an agent trace. JSON documents (a list of records, a report's
  ``scenario_results``) are read whole.
* ``TRACE2EVAL`` — lenient, as trace2eval reads logs: a bad line (over the line cap, not UTF-8,
  not JSON, not an object, an agent trace that does not validate) is an :class:`Entry` with a
  ``problem``, and reading goes on; span inputs skip unreadable spans. A line is an agent trace
  when it has ``trace_id`` and ``trace`` and nothing an agent trace does not (trace2eval rows
  may name their id ``trace_id``). JSON lines only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson
import zstandard

from spanguard.exceptions import InputError, TraceFormatError

from ..common._json import parse_json
from ..common.jsonio import json_lines
from ..common.limits import numbered_reads, read_bounded
from ..traces.model import AGENT_TRACE_KEYS, AgentTrace
from .files import (
    InputKind,
    Source,
    evaluation_kind,
    expand,
)
from .readers import read_agent_traces_any, store_annotations

__all__ = [
    "Entry",
    "Origin",
    "RecordedTraces",
    "RowFormat",
    "read_evaluation_inputs",
]


class RowFormat(enum.StrEnum):
    """Which rows an evaluation input is read as, and how strictly (see the module)."""

    FAIRTRACE = "fairtrace"
    TRACE2EVAL = "trace2eval"


class Origin(enum.StrEnum):
    """Where an entry was read: a JSON line, an item of a JSON document, a trace assembled
    from spans."""

    LINE = "line"
    DOCUMENT = "document"
    SPANS = "spans"


_STREAM_ERRORS = (OSError, EOFError, zstandard.ZstdError)


@dataclass(frozen=True, slots=True)
class Entry:
    """One agent trace or row of an input, and where it was read.

    ``line`` is the line of a JSON-lines file, the index of an item of a JSON document, or the
    number (from 1) of a trace assembled from spans. Exactly one of ``trace``, ``row`` and
    ``problem`` is set; ``problem`` (with ``field``) says why a ``TRACE2EVAL`` line is skipped.
    """

    file: str
    line: int
    origin: Origin = Origin.LINE
    trace: AgentTrace | None = None
    row: Any = None
    problem: str | None = None
    field: str | None = None

    def locate(self, exc: InputError) -> InputError:
        """``exc`` (raised validating this entry) located at its file and line — or, for an
        item of a JSON document, its index."""
        if self.origin == Origin.DOCUMENT:
            where = f"[{self.line}].{exc.field}" if exc.field else f"[{self.line}]"
            return TraceFormatError(exc.detail, file=self.file, field=where)
        return exc.located(file=self.file, line=self.line)


@dataclass(frozen=True, slots=True)
class RecordedTraces:
    """Agent traces read where their spans live (an engine, through ``--source``), named
    ``name`` (the source's URL): the evaluators read them as the entries of one input
    assembled from spans, numbered from 1 in the order given."""

    name: str
    traces: tuple[AgentTrace, ...]

    def entries(self) -> Iterator[Entry]:
        for number, trace in enumerate(self.traces, 1):
            yield Entry(self.name, number, Origin.SPANS, trace=trace)


def read_evaluation_inputs(
    paths: Sequence[Path],
    *,
    rows: str,
    max_line_bytes: int = 1 << 20,
) -> Iterator[Entry]:
    """Every agent trace and row of ``paths`` (a folder stands for its files), in the order
    given. Each input is read on its own, except that stores merge the annotations of every
    store given (partitions written by several processor replicas). ``rows`` is
    ``FAIRTRACE`` or ``TRACE2EVAL`` (see the module); ``max_line_bytes`` caps a
    ``TRACE2EVAL`` line (a longer one is a problem, read past without holding it)."""
    if rows not in (RowFormat.FAIRTRACE, RowFormat.TRACE2EVAL):
        raise ValueError(
            f"rows must be {RowFormat.FAIRTRACE.value!r} or "
            f"{RowFormat.TRACE2EVAL.value!r}, not {rows!r}"
        )
    strict = rows == RowFormat.FAIRTRACE
    kinds = [(path, evaluation_kind(path, documents=strict)) for path in expand(paths)]
    stores = [path for path, kind in kinds if kind == InputKind.STORE]
    # an annotation may sit in another store partition than the request it annotates
    annotations = store_annotations(stores) if len(stores) > 1 else None
    for path, kind in kinds:
        if kind == InputKind.JSON_DOCUMENT:
            yield from _document(path)
        elif kind != InputKind.JSON_LINES:
            name = str(path)
            traces = read_agent_traces_any([path], skip_bad=not strict, annotations=annotations)
            for number, trace in enumerate(traces, 1):
                yield Entry(name, number, Origin.SPANS, trace=trace)
        elif strict:
            yield from _strict_lines(path)
        else:
            yield from _lenient_lines(path, max_line_bytes)


def _streamed(path: Path, read: Callable[[IO[bytes], str], Iterator[Entry]]) -> Iterator[Entry]:
    source = Source(path)
    try:
        yield from read(source.stream, str(path))
    except _STREAM_ERRORS as exc:
        raise TraceFormatError(f"cannot be read or decompressed ({exc}).", file=str(path)) from None
    finally:
        source.close()


# --- fairtrace: strict ---------------------------------------------------------------------


def _is_fairtrace_trace(value: object) -> bool:
    return isinstance(value, Mapping) and "trace_id" in value


def _strict_lines(path: Path) -> Iterator[Entry]:
    def read(stream: IO[bytes], name: str) -> Iterator[Entry]:
        for number, value in json_lines(stream, name):
            if not _is_fairtrace_trace(value):
                yield Entry(name, number, row=value)
                continue
            try:
                trace = AgentTrace.from_dict(value)
            except InputError as exc:
                raise Entry(name, number).locate(exc) from None
            yield Entry(name, number, trace=trace)

    return _streamed(path, read)


def _document(path: Path) -> Iterator[Entry]:
    name = str(path)
    source = Source(path)
    try:
        data = parse_json(read_bounded(source.stream, name).decode("utf-8"))
    except InputError:  # over the size limit, already named
        raise
    except _STREAM_ERRORS as exc:
        raise TraceFormatError(
            f"cannot be read: {getattr(exc, 'strerror', None) or exc}.", file=name
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"is not valid JSON: {exc}.", file=name) from None
    finally:
        source.close()
    if isinstance(data, dict) and "spanguard" in data and "metric_results" in data:
        # spanguard's own report holds verdicts, not the traces they came from (fairtrace's
        # report.json, without that block, stays an input: its scenario_results are records)
        raise TraceFormatError(
            "is a fairness report written by spanguard: it holds verdicts, not the traces they "
            "came from; pass those traces (agent traces, fairtrace records or a span file) "
            "instead.",
            file=name,
        )
    items = data.get("scenario_results") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise TraceFormatError(
            "must hold a JSON list of scenario records or a report with scenario_results.",
            file=name,
        )
    for index, value in enumerate(items):
        if not _is_fairtrace_trace(value):
            yield Entry(name, index, Origin.DOCUMENT, row=value)
            continue
        try:
            trace = AgentTrace.from_dict(value)
        except InputError as exc:
            raise Entry(name, index, Origin.DOCUMENT).locate(exc) from None
        yield Entry(name, index, Origin.DOCUMENT, trace=trace)


# --- trace2eval: lenient -------------------------------------------------------------------


def _is_trace2eval_trace(data: dict[str, Any]) -> bool:
    return "trace_id" in data and "trace" in data and data.keys() <= AGENT_TRACE_KEYS


def _capped_lines(stream: IO[bytes], cap: int) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, bytes or None when over the cap, length); memory stays bounded."""
    for number, chunk, whole in numbered_reads(stream, cap):
        if whole:
            yield number, chunk, len(chunk)
            continue
        size = len(chunk)
        while not chunk.endswith(b"\n"):
            chunk = stream.readline(1 << 20)
            if not chunk:
                break
            size += len(chunk)
        yield number, None, size


def _lenient_lines(path: Path, cap: int) -> Iterator[Entry]:
    def read(stream: IO[bytes], name: str) -> Iterator[Entry]:
        for number, raw, size in _capped_lines(stream, cap):
            if raw is None:
                yield Entry(
                    name, number, problem=f"is {size} bytes long, over the {cap}-byte line cap"
                )
                continue
            entry = _lenient_line(name, number, raw)
            if entry is not None:
                yield entry

    return _streamed(path, read)


def _lenient_line(name: str, number: int, raw: bytes) -> Entry | None:
    if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Entry(name, number, problem=f"is not valid UTF-8 (byte {exc.start + 1})")
    text = text.strip()
    if not text:
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return Entry(name, number, problem=f"is not valid JSON ({exc.msg}, column {exc.colno})")
    if not isinstance(data, dict):
        return Entry(name, number, problem="is not a JSON object")
    if not _is_trace2eval_trace(data):
        return Entry(name, number, row=data)
    try:
        return Entry(name, number, trace=AgentTrace.from_dict(data))
    except TraceFormatError as exc:
        return Entry(name, number, problem=exc.detail, field=exc.field)
