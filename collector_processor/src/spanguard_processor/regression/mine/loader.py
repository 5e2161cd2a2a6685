"""Trace logs → rows: trace2eval log rows and agent traces, as ``spanguard cases build`` mines them.

The inputs are read by :func:`~spanguard_processor.inputs.evaluation.read_evaluation_inputs`
(``TRACE2EVAL``: line by line, so one bad byte, a BOM, binary garbage or a huge line costs that
line only; span files and stores assembled into agent traces). Here each entry becomes a
:class:`Row`: an agent trace through
:func:`~spanguard_processor.traces.formats.to_trace2eval_row` (keeping its process trace), a
trace2eval row by its aliases. Each problem becomes a one-sentence message naming the file,
the line and the field; the rest of the log still counts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from spanguard.exceptions import InputError, TraceFormatError

from ...inputs.evaluation import Entry, Origin, RowFormat, read_evaluation_inputs
from ...traces.formats import to_trace2eval_row
from ...traces.model import ProcessTrace
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


def _pick_key(data: Mapping[str, object], keys: tuple[str, ...]) -> tuple[str, object]:
    for key in keys:
        value = data.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        return key, value
    return "", None


def _number(
    data: Mapping[str, object], keys: tuple[str, ...], warn: list[tuple[str, str]]
) -> float | None:
    key, value = _pick_key(data, keys)
    if not key or isinstance(value, bool):
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


def _process(data: Mapping[str, object], warn: list[tuple[str, str]]) -> ProcessTrace | None:
    raw = data.get("trace")
    if not isinstance(raw, dict):
        return None
    try:
        return ProcessTrace.from_dict(raw)
    except TraceFormatError as exc:
        warn.append((exc.field or "trace", exc.detail + " The process trace is ignored."))
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
                row = self.build_row(entry.row, entry.file, entry.line)
            else:
                row = self.trace_row(entry)
        except _LineError as exc:
            if entry.origin == Origin.SPANS:
                assert entry.trace is not None
                exc = _LineError(f"trace {entry.trace.trace_id}: {exc.message}")
            self.skip(entry.file, entry.line, exc.message, exc.field)
            return
        if entry.origin == Origin.SPANS:
            self.result.agent_traces += 1
        self.result.rows.append(row)

    def trace_row(self, entry: Entry) -> Row:
        """An agent trace as its trace2eval row (counted when read from a line)."""
        assert entry.trace is not None
        try:
            data = to_trace2eval_row(entry.trace)
        except TraceFormatError as exc:
            raise _LineError(exc.detail, exc.field) from None
        if entry.origin != Origin.SPANS:
            self.result.agent_traces += 1
        return self.build_row(data, entry.file, entry.line)

    def build_row(self, data: Mapping[str, object], name: str, number: int) -> Row:
        raw_input = _pick(data, INPUT_ALIASES)
        if raw_input is None:
            raise _LineError(
                f"is missing or empty (looked for {', '.join(INPUT_ALIASES)})", "input"
            )
        raw_output = _pick(data, OUTPUT_ALIASES, allow_empty=True)
        if raw_output is None:
            raise _LineError(f"is missing (looked for {', '.join(OUTPUT_ALIASES)})", "output")
        expect = data.get("expect") or data.get("assert") or data.get("checks")
        if isinstance(expect, dict):
            problem = validate_expect(expect)
            if problem is not None:
                raise _LineError(problem[1], f"expect.{problem[0]}")
        else:
            expect = None
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
        feedback = label_feedback(feedback_value, feedback_key) if feedback_key else None
        index = len(self.result.rows)
        if isinstance(feedback, NumericFeedback):
            self.pending.append((index, feedback))
            feedback = None
        process = _process(data, warn)
        for key, message in warn:
            self.result.problems.append(Problem(_where(name, number, message, key), False))
        row_id = str(_pick(data, ID_ALIASES) or f"trace-{number:05d}")
        self.note_id(row_id, name, number)
        output, chars, fallback = self.describe(str(raw_output))
        text = str(raw_input)
        return Row(
            index=index,
            id=row_id,
            input=self.strings.setdefault(text, text),
            output=output,
            chars=chars,
            fallback=fallback,
            latency_ms=latency,
            cost_usd=cost,
            feedback=feedback,
            retried=retried,
            expect=expect,
            process=process,
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


def load_logs(paths: list[Path], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> LoadResult:
    """Read every file; raises only when a file cannot be opened at all."""
    for path in paths:
        if not path.is_file():
            raise TraceFormatError("does not exist or is not a file.", file=path.as_posix())
    reader = _Reader()
    for entry in read_evaluation_inputs(
        paths, rows=RowFormat.TRACE2EVAL, max_line_bytes=max_line_bytes
    ):
        reader.read(entry)
    reader.resolve_feedback()
    return reader.result
