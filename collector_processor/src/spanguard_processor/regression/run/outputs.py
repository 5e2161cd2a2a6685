"""The candidate runs ``cases run`` scores: outputs lines or agent traces, as typed records.

An outputs line (trace2eval's shape) is the JSON edge: :meth:`OutputRecord.from_line` reads it
leniently into :class:`~.case.Evidence` (output text, process trace, latency, cost) plus what
identifies the run; an agent trace becomes one through :meth:`OutputRecord.from_trace`.
:class:`Outputs` indexes the records every way a case can find its own, and
:func:`case_evidence` keeps what a reviewer needs to see a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from spanguard.exceptions import CaseFormatError

from ...common._json import parse_json
from ...common.limits import bounded_lines
from ...traces.model import AgentTrace, ProcessTrace, RetrievedDocument, ToolCall
from ..case import Case, Evidence
from ..mine.loader import OUTPUT_ALIASES
from ..textnorm import fold
from ..vocabulary import MatchKind
from .results import CaseEvidence, loose_process

__all__ = [
    "INPUT_CHARS",
    "MATCH_KINDS",
    "OUTPUT_CHARS",
    "OutputRecord",
    "Outputs",
    "case_evidence",
    "load_outputs",
    "outputs_from_traces",
    "outputs_of",
]

#: How a case found its record, in the order tried.
MATCH_KINDS = tuple(MatchKind)


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """One candidate run for a case: what its checks read, and what identifies the run (the
    question and mined trace it answers, and the trace, root span and model answer it came
    from, for case diffs and ``--emit-otlp``)."""

    evidence: Evidence
    input: str | None = None
    source_trace_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None
    response_id: str | None = None

    @classmethod
    def from_line(cls, data: Mapping[str, object]) -> OutputRecord:
        """An outputs line (trace2eval's shape: an output under one of its aliases, latency,
        cost, and optionally the agent's process under ``trace``), read leniently: a field of
        the wrong type reads as absent."""
        source = data.get("source_trace_id")
        evidence = Evidence(
            _text(data),
            _loose_process(data.get("trace")),
            _figure(data.get("latency_ms")),
            _figure(data.get("cost_usd")),
        )
        return cls(
            evidence,
            input=_str(data.get("input")),
            source_trace_id=str(source)
            if isinstance(source, str | int) and not isinstance(source, bool)
            else None,
            trace_id=_str(data.get("trace_id")),
            span_id=_str(data.get("span_id")),
            response_id=_str(data.get("response_id")),
        )

    @classmethod
    def from_trace(cls, trace: AgentTrace) -> OutputRecord:
        evidence = Evidence(trace.output or "", trace.trace, trace.latency_ms, trace.cost_usd)
        return cls(
            evidence,
            trace.input,
            None,
            trace.trace_id,
            trace.root_span_id or None,
            trace.response_id or None,
        )


def _figure(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


def _loose_process(raw: object) -> ProcessTrace | None:
    """A process trace from an outputs line, every part of the wrong type left out."""
    if not isinstance(raw, Mapping):
        return None
    tools = tuple(
        ToolCall(str(t.get("name")))
        for t in _items(raw.get("tool_calls"))
        if isinstance(t, Mapping)
    )
    return loose_process(raw, tools)


@dataclass
class Outputs:
    """Candidate records, indexed every way a case can find its own."""

    by_id: dict[str, OutputRecord] = field(default_factory=dict)
    by_source: dict[str, OutputRecord] = field(default_factory=dict)
    by_input: dict[str, OutputRecord] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    #: Every record in file order, under each key it can be found by (several records for one
    #: key are the repeats of the case that key finds).
    all_by_id: dict[str, list[OutputRecord]] = field(default_factory=dict)
    all_by_source: dict[str, list[OutputRecord]] = field(default_factory=dict)
    all_by_input: dict[str, list[OutputRecord]] = field(default_factory=dict)
    #: Every record, in file order.
    records: list[OutputRecord] = field(default_factory=list)

    def add(self, key: str, data: Mapping[str, object]) -> None:
        """An outputs line, keyed by ``key``."""
        self.put(key, OutputRecord.from_line(data))

    def put(self, key: str, record: OutputRecord) -> None:
        self.records.append(record)
        self.by_id[key] = record
        self.all_by_id.setdefault(key, []).append(record)
        if record.source_trace_id:
            self.by_source[record.source_trace_id] = record
            self.all_by_source.setdefault(record.source_trace_id, []).append(record)
        text = record.input
        if text is not None and text.strip():
            self.by_input[fold(text)] = record
            self.all_by_input.setdefault(fold(text), []).append(record)

    def __len__(self) -> int:
        return len(self.by_id)

    def find(self, case: Case) -> tuple[OutputRecord | None, str | None]:
        """The record for ``case`` and how it was found: by case id, then by the trace the case
        was mined from (a record keyed by it, or carrying it as ``source_trace_id``), then by
        the folded question."""
        if case.id in self.by_id:
            return self.by_id[case.id], MatchKind.CASE_ID
        source = case.source_trace_id
        if source:
            record = self.by_id.get(source) or self.by_source.get(source)
            if record is not None:
                return record, MatchKind.SOURCE_TRACE_ID
        text = case.input
        if text is not None and text.strip():
            record = self.by_input.get(fold(text))
            if record is not None:
                return record, MatchKind.QUESTION
        return None, None

    def find_all(self, case: Case) -> list[OutputRecord]:
        """Every record of ``case``, its repeats, in file order, found the way :meth:`find`
        finds one: the records keyed by its id; else those keyed by, or carrying as
        ``source_trace_id``, the trace it was mined from or one of its cluster's
        (``duplicate_trace_ids``); else those asking its folded question."""
        if case.id in self.all_by_id:
            return list(self.all_by_id[case.id])
        found: list[OutputRecord] = []
        for source in filter(None, (case.source_trace_id, *case.duplicate_trace_ids)):
            found += self.all_by_id.get(source, [])
            found += self.all_by_source.get(source, [])
        if found:
            return list({id(r): r for r in found}.values())
        text = case.input
        if text is not None and text.strip():
            return list(self.all_by_input.get(fold(text), []))
        return []


def load_outputs(path: Path) -> Outputs:
    """Candidate outputs keyed like trace2eval (``id``, else ``trace_id``, else line)."""
    outputs = Outputs()
    name = path.as_posix()
    if not path.is_file():
        raise CaseFormatError("does not exist or is not a file.", file=name)
    with path.open("rb") as stream:
        for number, raw in enumerate(bounded_lines(stream, name, CaseFormatError), 1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8").strip()
                if not text:
                    continue
                data = parse_json(text)
            except ValueError as exc:
                outputs.skipped.append(
                    f"{name}:{number}: is not valid UTF-8 JSON "
                    f"({type(exc).__name__}); line skipped."
                )
                continue
            if not isinstance(data, dict):
                outputs.skipped.append(f"{name}:{number}: is not a JSON object; line skipped.")
                continue
            key = data.get("id") or data.get("trace_id")
            outputs.add(str(key) if key is not None else f"trace-{number:05d}", data)
    return outputs


def outputs_from_traces(paths: Iterable[Path]) -> Outputs:
    """Agent traces as outputs records: matched to cases by id, then by question."""
    from ...inputs.readers import read_agent_traces_any

    return outputs_of(trace for path in paths for trace in read_agent_traces_any([path]))


def outputs_of(traces: Iterable[AgentTrace]) -> Outputs:
    """Agent traces (from files, or read through an engine) as outputs records."""
    outputs = Outputs()
    for trace in traces:
        outputs.put(trace.request_id or trace.trace_id, OutputRecord.from_trace(trace))
    return outputs


OUTPUT_CHARS = 600
INPUT_CHARS = 200


def _excerpt(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _shown(process: ProcessTrace | None) -> ProcessTrace | None:
    """The process as evidence keeps it: tool names, documents without scores."""
    if process is None:
        return None
    if all(t.id is None and not t.requested for t in process.tool_calls) and all(
        d.score is None for d in process.retrieved_documents
    ):
        return process  # already as evidence keeps it (frozen: shared, not copied)
    return replace(
        process,
        tool_calls=tuple(ToolCall(t.name) for t in process.tool_calls),
        retrieved_documents=tuple(
            RetrievedDocument(d.id, d.group, d.rank) for d in process.retrieved_documents
        ),
    )


def case_evidence(question: str | None, record: OutputRecord | None) -> CaseEvidence:
    """What one case's record showed: what a reviewer needs to see a change (the question,
    the trace id, an output excerpt and the process trace)."""
    text = _excerpt(question, INPUT_CHARS) if question is not None else None
    if record is None:
        return CaseEvidence(text)
    return CaseEvidence(
        text,
        True,
        record.trace_id,
        record.span_id,
        record.response_id,
        _excerpt(record.evidence.output, OUTPUT_CHARS),
        _shown(record.evidence.process),
    )


def _text(record: Mapping[str, object]) -> str:
    for alias in OUTPUT_ALIASES:
        value = record.get(alias)
        if value:
            return str(value)
    return ""
