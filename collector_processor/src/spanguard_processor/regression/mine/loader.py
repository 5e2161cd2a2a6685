"""Trace logs → rows: trace2eval log rows and agent traces, as ``spanguard cases build`` mines them.

The inputs are read by :func:`~spanguard_processor.inputs.evaluation.read_evaluation_inputs`
(``TRACE2EVAL``: line by line, so one bad byte, a BOM, binary garbage or a huge line costs that
line only; span files and stores assembled into agent traces). Here each entry becomes a
:class:`Row`: an agent trace from its typed fields (its process trace kept as it is), a
trace2eval row by its aliases (the only place a row is a dict). Each problem becomes a
one-sentence message naming the file, the line and the field; the rest of the log still counts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from spanguard.exceptions import InputError, TraceFormatError

from ...inputs.evaluation import Entry, Origin, RowFormat, read_evaluation_inputs
from ...traces.formats import trace2eval_input
from ...traces.model import AgentTrace, ProcessTrace
from ..case import Evidence
from ..textnorm import detect_fallback
from .expect import validate_expect
from .feedback import NumericFeedback, infer_scale, label_feedback, read_on_scale

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "ID_ALIASES",
    "INPUT_ALIASES",
    "OUTPUT_ALIASES",
    "LoadResult",
    "Problem",
    "Row",
    "load_entries",
    "load_logs",
]

INPUT_ALIASES = ("input", "prompt", "question", "query", "user_message")
OUTPUT_ALIASES = ("output", "response", "completion", "answer", "assistant_message")
ID_ALIASES = ("id", "trace_id", "traceId", "request_id", "requestId")
LATENCY_ALIASES = ("latency_ms", "latency", "duration_ms", "elapsed_ms")
SECONDS_ALIASES = ("latency_s", "duration_s")
COST_ALIASES = ("cost_usd", "cost", "total_cost", "price_usd")
FEEDBACK_ALIASES = ("feedback", "rating", "score", "user_feedback", "thumbs")
RETRIED_ALIASES = ("retried", "is_retry", "was_retried")
RETRY_COUNT_ALIASES = ("retry_count", "retries")

DEFAULT_MAX_LINE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Row:
    """One usable log line, normalised."""

    index: int
    id: str
    input: str
    output: str
    chars: int
    fallback: str | None
    latency_ms: float | None
    cost_usd: float | None
    feedback: str | None
    retried: bool
    expect: Mapping[str, object] | None
    process: ProcessTrace | None
    file: str
    line: int

    @property
    def evidence(self) -> Evidence:
        """What this request shows a check."""
        return Evidence(self.output, self.process, self.latency_ms, self.cost_usd)


@dataclass(frozen=True, slots=True)
class Problem:
    """A located problem; ``skipped`` tells whether the line was dropped or only warned about."""

    message: str
    skipped: bool


@dataclass
class LoadResult:
    rows: list[Row] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    agent_traces: int = 0
    duplicate_ids: int = 0
    first_duplicate: str = ""

    @property
    def skipped_count(self) -> int:
        return sum(1 for p in self.problems if p.skipped)


def _where(file: str, line: int, message: str, field: str | None = None) -> str:
    return str(InputError(message, file=file, line=line, field=field))


def _pick(data: Mapping[str, object], keys: tuple[str, ...], allow_empty: bool = False) -> object:
    for key in keys:
        if key in data:
            value = data[key]
            if value is None:
                continue
            if isinstance(value, str) and not value.strip() and not allow_empty:
                continue
            return value
    return None


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, str) and not value.strip())


def _pick_key(data: Mapping[str, object], keys: tuple[str, ...]) -> tuple[str, object]:
    for key in keys:
        value = data.get(key)
        if _present(value):
            return key, value
    return "", None


def _number(
    data: Mapping[str, object], keys: tuple[str, ...], warn: list[tuple[str, str]]
) -> float | None:
    key, value = _pick_key(data, keys)
    return _figure(key, value, warn) if key else None


def _figure(key: str, value: object, warn: list[tuple[str, str]]) -> float | None:
    """``value`` (found under ``key``) as a finite number; anything else warns, as missing."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]  # any JSON value; a bad one is a warning
    except (TypeError, ValueError):
        warn.append((key, f"expected a number, got {value!r}; treated as missing."))
        return None
    if not math.isfinite(number):
        warn.append((key, f"expected a finite number, got {value!r}; treated as missing."))
        return None
    return number


def _as_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value > 0
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "y"}
    return False


class _LineError(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


_IGNORED = " The process trace is ignored."


def _process(data: Mapping[str, object], warn: list[tuple[str, str]]) -> ProcessTrace | None:
    raw = data.get("trace")
    if not isinstance(raw, dict):
        return None
    try:
        return ProcessTrace.from_dict(raw)
    except TraceFormatError as exc:
        warn.append((exc.field or "trace", exc.detail + _IGNORED))
        return None


def _trace_process(process: ProcessTrace, warn: list[tuple[str, str]]) -> ProcessTrace | None:
    """An agent trace's process, as the process-trace reader would accept it.

    Assembling spans names a tool span without a tool-name attribute by its span name, which
    may be blank; the reader (:meth:`ProcessTrace.from_dict`) rejects a blank tool name, so
    such a process is ignored with the reader's warning, as for a trace2eval row's ``trace``.
    """
    for i, call in enumerate(process.tool_calls):
        if not call.name.strip():
            warn.append((f"trace.tool_calls[{i}].name", "must not be empty." + _IGNORED))
            return None
    return process


@dataclass(frozen=True, slots=True)
class _Request:
    """What one request says before the reader numbers it, read from a trace2eval row by its
    aliases (:meth:`_Reader.row_request`) or from an agent trace's fields
    (:meth:`_Reader.trace_request`); ``warnings`` are (field, message) pairs."""

    id: str | None  # None: named after its line (trace-00042)
    input: str
    output: str
    expect: Mapping[str, object] | None
    latency_ms: float | None
    cost_usd: float | None
    retried: bool
    feedback: tuple[str, object] | None  # (field, value)
    process: ProcessTrace | None
    warnings: tuple[tuple[str, str], ...]


def _checked_expect(expect: object) -> Mapping[str, object] | None:
    """A usable ``expect`` block, None for none; raises :class:`_LineError` for a bad one."""
    if not isinstance(expect, dict):
        return None
    problem = validate_expect(expect)
    if problem is not None:
        raise _LineError(problem[1], f"expect.{problem[0]}")
    return expect


def _trace_id(trace: AgentTrace) -> str | None:
    """The row id of an agent trace: its request id, else its trace id (the first present)."""
    for value in (trace.request_id, trace.trace_id):
        if _present(value):
            return value
    return None


class _Reader:
    def __init__(self) -> None:
        self.result = LoadResult()
        self.pending: list[tuple[int, NumericFeedback]] = []
        self.seen_ids: dict[str, str] = {}
        # Logs repeat the same questions and answers many times: keep one copy of each text,
        # and measure each distinct answer once.
        self.strings: dict[str, str] = {}
        self.outputs: dict[str, tuple[str, int, str | None]] = {}

    def skip(self, file: str, line: int, message: str, field: str | None = None) -> None:
        text = _where(file, line, message.rstrip(".") + "; line skipped.", field)
        self.result.problems.append(Problem(text, True))

    def read(self, entry: Entry) -> None:
        """One entry of the reader: a line's problem, an agent trace (from spans or a line)
        or a trace2eval row."""
        if entry.problem is not None:
            self.skip(entry.file, entry.line, entry.problem, entry.field)
            return
        try:
            if entry.trace is None:
                request = self.row_request(entry.row)
            else:
                request = self.trace_request(entry)
        except _LineError as exc:
            if entry.origin == Origin.SPANS:
                assert entry.trace is not None
                exc = _LineError(f"trace {entry.trace.trace_id}: {exc.message}")
            self.skip(entry.file, entry.line, exc.message, exc.field)
            return
        if entry.origin == Origin.SPANS:
            self.result.agent_traces += 1
        self.result.rows.append(self.build_row(request, entry.file, entry.line))

    def trace_request(self, entry: Entry) -> _Request:
        """An agent trace's request, from its fields (counted when read from a line)."""
        trace = entry.trace
        assert trace is not None
        try:
            question = trace2eval_input(trace)
        except TraceFormatError as exc:
            raise _LineError(exc.detail, exc.field) from None
        if entry.origin != Origin.SPANS:
            self.result.agent_traces += 1
        expect = _checked_expect(dict(trace.expect) if trace.expect else None)
        warn: list[tuple[str, str]] = []
        latency = _figure("latency_ms", trace.latency_ms, warn)
        cost = _figure("cost_usd", trace.cost_usd, warn)
        feedback = ("feedback", trace.feedback) if _present(trace.feedback) else None
        process = _trace_process(trace.trace, warn)
        return _Request(
            id=_trace_id(trace),
            input=question,
            output=trace.output if trace.output is not None else "",
            expect=expect,
            latency_ms=latency,
            cost_usd=cost,
            retried=_as_bool(trace.retried),
            feedback=feedback,
            process=process,
            warnings=tuple(warn),
        )

    def row_request(self, data: Mapping[str, object]) -> _Request:
        """A trace2eval row's request, read by its aliases."""
        raw_input = _pick(data, INPUT_ALIASES)
        if raw_input is None:
            raise _LineError(
                f"is missing or empty (looked for {', '.join(INPUT_ALIASES)})", "input"
            )
        raw_output = _pick(data, OUTPUT_ALIASES, allow_empty=True)
        if raw_output is None:
            raise _LineError(f"is missing (looked for {', '.join(OUTPUT_ALIASES)})", "output")
        expect = _checked_expect(data.get("expect") or data.get("assert") or data.get("checks"))
        warn: list[tuple[str, str]] = []
        latency = _number(data, LATENCY_ALIASES, warn)
        if latency is None:
            seconds = _number(data, SECONDS_ALIASES, warn)
            latency = None if seconds is None else seconds * 1000.0
        cost = _number(data, COST_ALIASES, warn)
        retried = _as_bool(_pick(data, RETRIED_ALIASES))
        if _retry_count(_pick(data, RETRY_COUNT_ALIASES)):
            retried = True
        feedback_key, feedback_value = _pick_key(data, FEEDBACK_ALIASES)
        process = _process(data, warn)
        row_id = _pick(data, ID_ALIASES)
        return _Request(
            id=str(row_id) if row_id else None,
            input=str(raw_input),
            output=str(raw_output),
            expect=expect,
            latency_ms=latency,
            cost_usd=cost,
            retried=retried,
            feedback=(feedback_key, feedback_value) if feedback_key else None,
            process=process,
            warnings=tuple(warn),
        )

    def build_row(self, request: _Request, name: str, number: int) -> Row:
        """The request as the log's next row: numbered, its feedback labelled (numbers wait for
        their field's scale), its warnings reported, its id noted."""
        feedback = (
            label_feedback(request.feedback[1], request.feedback[0])
            if request.feedback is not None
            else None
        )
        index = len(self.result.rows)
        if isinstance(feedback, NumericFeedback):
            self.pending.append((index, feedback))
            feedback = None
        for key, message in request.warnings:
            self.result.problems.append(Problem(_where(name, number, message, key), False))
        row_id = request.id or f"trace-{number:05d}"
        self.note_id(row_id, name, number)
        output, chars, fallback = self.describe(request.output)
        return Row(
            index=index,
            id=row_id,
            input=self.strings.setdefault(request.input, request.input),
            output=output,
            chars=chars,
            fallback=fallback,
            latency_ms=request.latency_ms,
            cost_usd=request.cost_usd,
            feedback=feedback,
            retried=request.retried,
            expect=request.expect,
            process=request.process,
            file=name,
            line=number,
        )

    def describe(self, output: str) -> tuple[str, int, str | None]:
        known = self.outputs.get(output)
        if known is None:
            fallback = detect_fallback(output) if output else None
            known = self.outputs[output] = (output, len(output.strip()), fallback)
        return known

    def note_id(self, row_id: str, name: str, number: int) -> None:
        if row_id in self.seen_ids:
            if not self.result.duplicate_ids:
                self.result.first_duplicate = (
                    f"'{row_id}' at {name}:{number}, first seen at {self.seen_ids[row_id]}"
                )
            self.result.duplicate_ids += 1
        else:
            self.seen_ids[row_id] = f"{name}:{number}"

    def resolve_feedback(self) -> None:
        by_key: dict[str, list[float]] = defaultdict(list)
        for _, item in self.pending:
            by_key[item.key].append(item.value)
        scales = {key: infer_scale(key, values) for key, values in by_key.items()}
        rows = self.result.rows
        for index, item in self.pending:
            label = read_on_scale(item.value, scales[item.key])
            if label is not None:
                rows[index] = replace(rows[index], feedback=label)


def _retry_count(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return False
    try:
        return bool(float(value))
    except ValueError:
        return False


def load_entries(entries: Iterable[Entry]) -> LoadResult:
    """Read the evaluators' entries (a file's lines, traces assembled from spans, or
    :class:`~spanguard_processor.inputs.evaluation.RecordedTraces` read through an engine)."""
    reader = _Reader()
    for entry in entries:
        reader.read(entry)
    reader.resolve_feedback()
    return reader.result


def load_logs(paths: list[Path], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> LoadResult:
    """Read every file; raises only when a file cannot be opened at all."""
    for path in paths:
        if not path.is_file():
            raise TraceFormatError("does not exist or is not a file.", file=path.as_posix())
    return load_entries(
        read_evaluation_inputs(paths, rows=RowFormat.TRACE2EVAL, max_line_bytes=max_line_bytes)
    )
