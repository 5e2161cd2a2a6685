"""A run's results as data: what ``cases run`` writes and ``check`` reads back.

:class:`Metrics` (with a :class:`Failure` per failing case) is what a run file holds under
``metrics``; :class:`CaseOutcome` is one case's entry under ``case_details``.

:meth:`Metrics.to_dict` writes trace2eval 0.5.1's keys in its order (then spanguard's trace-check
figures and ``skipped_output_lines`` when there are any, then ``failures``), so a run file's
``metrics`` stay byte-identical to trace2eval's for the same cases and outputs.
:meth:`Metrics.from_dict` reads them back from a file ``regression/runfile.load_run`` has
validated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ...traces.model import ProcessTrace, RetrievedDocument, ToolCall

__all__ = ["CaseEvidence", "CaseOutcome", "Failure", "Metrics", "loose_process"]


@dataclass(frozen=True, slots=True)
class Failure:
    """A case that did not pass: ``missing_output``, or ``check_failed`` with its checks."""

    case_id: str
    reason: str
    failed_checks: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "case_id": self.case_id,
            "reason": self.reason,
            "failed_checks": list(self.failed_checks),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Failure:
        checks = data.get("failed_checks")
        return cls(
            str(data["case_id"]),
            str(data.get("reason", "")),
            tuple(str(c) for c in checks) if isinstance(checks, list) else (),
        )


@dataclass(frozen=True)
class Metrics:
    """trace2eval 0.5.1's run metrics, plus spanguard's trace-check figures (None when the run
    had no trace checks) and the count of unreadable outputs lines (None when there were
    none)."""

    total: int
    passed: int
    failed: int
    missing: int
    pass_rate: float
    fallback_count: int
    fallback_rate: float
    json_cases: int
    json_passed: int
    format_compliance_rate: float | None
    avg_latency_ms: float | None
    p95_latency_ms: float | None
    avg_cost_usd: float | None
    total_cost_usd: float | None
    avg_output_chars: float | None
    trace_check_cases: int | None = None
    trace_check_passed: int | None = None
    trace_compliance_rate: float | None = None
    trace_checks_unverified: int | None = None
    skipped_output_lines: int | None = None
    failures: tuple[Failure, ...] = ()

    def get(self, name: str) -> float | None:
        """A figure by its key (``pass_rate``, ``p95_latency_ms`` …); None when unrecorded or
        not a figure."""
        value = getattr(self, name, None) if name in _FIGURES else None
        return value if isinstance(value, int | float) else None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for name in _FIGURES:
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                out[name] = value
        out["failures"] = [f.to_dict() for f in self.failures]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Metrics:
        """Metrics from a validated run file (every trace2eval key present, counts whole)."""
        values: dict[str, Any] = {name: data.get(name) for name in _FIGURES}
        failures = tuple(Failure.from_dict(f) for f in data.get("failures", []))
        return cls(**values, failures=failures)


_FIGURES = tuple(f.name for f in fields(Metrics) if f.name != "failures")
_OPTIONAL = frozenset(f.name for f in fields(Metrics) if f.default is None)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


def loose_process(raw: Mapping[str, Any], tool_calls: tuple[ToolCall, ...]) -> ProcessTrace:
    """A process trace read from JSON (a run file, an outputs line), every part of the wrong
    type left out; the tool calls, spelled differently by the two, are the caller's."""
    return ProcessTrace(
        tool_calls=tool_calls,
        retrieved_documents=tuple(
            RetrievedDocument(
                _str(d.get("id")),
                _str(d.get("group")),
                r if isinstance(r := d.get("rank"), int) else None,
            )
            for d in _items(raw.get("retrieved_documents"))
            if isinstance(d, Mapping)
        ),
        plan_steps=tuple(str(s) for s in _items(raw.get("plan_steps"))),
        escalated=bool(raw.get("escalated", False)),
        escalation_reason=_str(raw.get("escalation_reason")),
        friction_points=tuple(str(s) for s in _items(raw.get("friction_points"))),
    )


@dataclass(frozen=True, slots=True)
class CaseEvidence:
    """What a case's record showed, for ``check``'s case diffs (``case_details.<id>.evidence``):
    the question, and when a record was found (``recorded``) its trace, root span and model
    answer ids, an output excerpt and its process — tool names, documents without scores."""

    input: str | None = None
    recorded: bool = False
    trace_id: str | None = None
    span_id: str | None = None
    response_id: str | None = None
    output: str = ""
    process: ProcessTrace | None = None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"input": self.input}
        if not self.recorded:
            return out
        out["trace_id"] = self.trace_id
        if self.span_id is not None:  # the root span and model answer, for --emit-otlp
            out["span_id"] = self.span_id
        if self.response_id is not None:
            out["response_id"] = self.response_id
        out["output"] = self.output
        p = self.process
        out["process"] = (
            None
            if p is None
            else {
                "tool_calls": [t.name for t in p.tool_calls],
                "escalated": p.escalated,
                "escalation_reason": p.escalation_reason,
                "plan_steps": list(p.plan_steps),
                "friction_points": list(p.friction_points),
                "retrieved_documents": [
                    {"id": d.id, "group": d.group, "rank": d.rank} for d in p.retrieved_documents
                ],
            }
        )
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> CaseEvidence:
        """Evidence from a run file; a part of the wrong type reads as absent."""
        raw = data.get("process")
        process = None
        if isinstance(raw, Mapping):
            tools = tuple(ToolCall(str(t)) for t in _items(raw.get("tool_calls")))
            process = loose_process(raw, tools)
        output = data.get("output")
        return cls(
            _str(data.get("input")),
            "output" in data or "trace_id" in data,
            _str(data.get("trace_id")),
            _str(data.get("span_id")),
            _str(data.get("response_id")),
            output if isinstance(output, str) else "",
            process,
        )


@dataclass(frozen=True, slots=True)
class CaseOutcome:
    """One case of a run: its outcome, how its record was found, and what the record showed."""

    case_id: str
    outcome: str  # "pass" | "fail" | "missing"
    matched_by: str | None = None  # one of MATCH_KINDS, None when missing
    failed_checks: tuple[str, ...] = ()
    details: tuple[str, ...] = ()  # "check: why", one per failed check
    latency_ms: float | None = None
    cost_usd: float | None = None
    unverified: tuple[str, ...] = ()  # trace checks whose evidence the record lacks
    evidence: CaseEvidence | None = None  # what the record did, for check's case diffs

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "outcome": self.outcome,
            "matched_by": self.matched_by,
            "failed_checks": list(self.failed_checks),
            "details": list(self.details),
            "unverified_checks": list(self.unverified),
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
        }
        if self.evidence is not None:
            out["evidence"] = self.evidence.to_dict()
        return out

    @classmethod
    def from_dict(cls, case_id: str, data: Mapping[str, Any]) -> CaseOutcome:
        """A case's entry under ``case_details`` of a run file; a field of the wrong type (a
        file edited by hand) reads as absent."""
        matched = data.get("matched_by")
        evidence = data.get("evidence")
        return cls(
            case_id,
            str(data.get("outcome", "")),
            matched if isinstance(matched, str) else None,
            _texts(data.get("failed_checks")),
            _texts(data.get("details")),
            _finite(data.get("latency_ms")),
            _finite(data.get("cost_usd")),
            _texts(data.get("unverified_checks")),
            CaseEvidence.from_dict(evidence) if isinstance(evidence, Mapping) else None,
        )


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
