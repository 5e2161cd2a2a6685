"""The assembled agent trace: one request of an agent, as both evaluators read it.

One JSON object per request. Field names follow the two formats we stay compatible with
(fairtrace scenario records and trace2eval log rows); :mod:`spanguard_processor.traces.formats`
converts to both. ``from_dict`` is strict: unknown keys, wrong types and non-finite numbers are
rejected with a :class:`~spanguard.exceptions.TraceFormatError` that names the field. The
trace's parts (the process, tool calls, documents, model calls) are :mod:`.parts`, re-exported
here; the validation helpers are :mod:`._validate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from spanguard.exceptions import TraceFormatError

from ..common._json import kind_of
from ._validate import (
    JSONScalar,
    boolean,
    list_of,
    mapping,
    nonneg_int,
    opt_number,
    opt_str,
    reject_unknown,
    scalar,
    str_tuple,
    string,
)
from .evaluations import EvaluationResult
from .parts import LLMCall, ProcessTrace, RetrievedDocument, ToolCall, Unread, usage_totals

__all__ = [
    "AGENT_TRACE_KEYS",
    "AgentTrace",
    "JSONScalar",
    "LLMCall",
    "ProcessTrace",
    "RetrievedDocument",
    "ToolCall",
    "Unread",
    "usage_totals",
]

_TRACE_KEYS = (
    "trace_id",
    "request_id",
    "seed_id",
    "variant_id",
    "assignments",
    "repeat",
    "input",
    "output",
    "latency_ms",
    "cost_usd",
    "feedback",
    "retried",
    "expect",
    "metadata",
    "trace",
    "partial",
    "source",
    "input_source",
    "output_source",
    "llm_calls",
    "usage",
    "unread",
    "evaluations",
    "user_id",
    "session_id",
    "root_span_id",
)
AGENT_TRACE_KEYS = frozenset(_TRACE_KEYS)  # every key an agent-trace JSON object may have


@dataclass(frozen=True, slots=True)
class AgentTrace:
    """One assembled agent request (docs/concepts.md, "From spans to agent traces")."""

    trace_id: str
    request_id: str | None = None
    seed_id: str | None = None
    variant_id: str | None = None
    assignments: Mapping[str, str] = field(default_factory=dict)
    repeat: int = 0
    input: str | None = None
    output: str | None = None
    latency_ms: float | None = None
    cost_usd: float | None = None
    feedback: JSONScalar = None
    retried: bool = False
    expect: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    trace: ProcessTrace = field(default_factory=ProcessTrace)
    partial: bool = False
    source: tuple[str, ...] = ()
    input_source: str | None = None
    output_source: str | None = None
    llm_calls: tuple[LLMCall, ...] = ()
    # keys seen that look like a signal but are not read (a NO_SIGNAL diagnosis names them)
    unread: tuple[Unread, ...] = ()
    # verdicts sent back into the trace (gen_ai.evaluation.result events), in time order
    evaluations: tuple[EvaluationResult, ...] = ()
    # the root span's id when converted from spans, for results sent back into the trace
    # (``--emit-otlp``): written by to_dict only when known, so a trace read back from JSONL
    # still names the span its verdicts belong to
    root_span_id: str | None = field(default=None, compare=False)
    # the last model call's gen_ai.response.id, likewise not written by to_dict
    response_id: str | None = field(default=None, compare=False)
    # the name of the request's only span when it was one parentless span that is no agent or
    # spanguard request (a model or tool call with no parent): known only when converted from
    # spans, never serialized; `traces export` counts these
    lone_span: str | None = field(default=None, compare=False)
    # who sent it (user.id, enduser.id, langfuse.user.id) and in which conversation
    # (session.id, langfuse.session.id, gen_ai.conversation.id): `suite mine` counts people
    user_id: str | None = None
    session_id: str | None = None

    @property
    def usage(self) -> dict[str, Any]:
        """Totals over :attr:`llm_calls` (calls, tokens, cost, models)."""
        return usage_totals(self.llm_calls)

    @property
    def key(self) -> str:
        """The id a report shows for this request: request id, else variant id, else trace id."""
        return self.request_id or self.variant_id or self.trace_id

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-ready dict with a fixed key order."""
        out: dict[str, Any] = {
            "trace_id": self.trace_id,
            "request_id": self.request_id,
            "seed_id": self.seed_id,
            "variant_id": self.variant_id,
            "assignments": dict(sorted(self.assignments.items())),
            "repeat": self.repeat,
            "input": self.input,
            "output": self.output,
            "latency_ms": self.latency_ms,
            "cost_usd": self.cost_usd,
            "feedback": self.feedback,
            "retried": self.retried,
            "expect": dict(self.expect) if self.expect is not None else None,
            "metadata": dict(self.metadata),
            "trace": self.trace.to_dict(),
            "partial": self.partial,
            "source": list(self.source),
        }
        # Added keys appear only when known, so traces without them keep their old shape.
        if self.input_source is not None:
            out["input_source"] = self.input_source
        if self.output_source is not None:
            out["output_source"] = self.output_source
        if self.llm_calls:
            out["llm_calls"] = [c.to_dict() for c in self.llm_calls]
            out["usage"] = self.usage
        if self.unread:
            out["unread"] = [note.to_dict() for note in self.unread]
        if self.evaluations:
            out["evaluations"] = [result.to_dict() for result in self.evaluations]
        if self.user_id is not None:
            out["user_id"] = self.user_id
        if self.session_id is not None:
            out["session_id"] = self.session_id
        if self.root_span_id is not None:
            out["root_span_id"] = self.root_span_id
        return out

    @classmethod
    def from_dict(cls, data: object) -> AgentTrace:
        """Validate and build; raises :class:`TraceFormatError` naming the offending field."""
        obj = mapping(data, "")
        reject_unknown(obj, _TRACE_KEYS, "")
        if "trace_id" not in obj:
            raise TraceFormatError("is required and missing.", field="trace_id")
        trace_id = string(obj["trace_id"], "trace_id")
        if not trace_id.strip():
            raise TraceFormatError("must not be empty.", field="trace_id")
        assignments = mapping(obj.get("assignments", {}), "assignments")
        for key, value in assignments.items():
            if not isinstance(value, str):
                raise TraceFormatError(
                    f"must be a string, got {kind_of(value)}.", field=f"assignments.{key}"
                )
        expect = obj.get("expect")
        if expect is not None:
            expect = dict(mapping(expect, "expect"))
        return cls(
            trace_id=trace_id,
            request_id=opt_str(obj.get("request_id"), "request_id"),
            seed_id=opt_str(obj.get("seed_id"), "seed_id"),
            variant_id=opt_str(obj.get("variant_id"), "variant_id"),
            assignments=dict(assignments),
            repeat=nonneg_int(obj.get("repeat", 0), "repeat"),
            input=opt_str(obj.get("input"), "input"),
            output=opt_str(obj.get("output"), "output"),
            latency_ms=opt_number(obj.get("latency_ms"), "latency_ms"),
            cost_usd=opt_number(obj.get("cost_usd"), "cost_usd"),
            feedback=scalar(obj.get("feedback"), "feedback"),
            retried=boolean(obj.get("retried", False), "retried"),
            expect=expect,
            metadata=dict(mapping(obj.get("metadata", {}), "metadata")),
            trace=ProcessTrace.from_dict(obj.get("trace", {}), "trace"),
            partial=boolean(obj.get("partial", False), "partial"),
            source=str_tuple(obj.get("source", []), "source"),
            input_source=opt_str(obj.get("input_source"), "input_source"),
            output_source=opt_str(obj.get("output_source"), "output_source"),
            llm_calls=tuple(
                LLMCall.from_dict(item, f"llm_calls[{i}]")
                for i, item in enumerate(list_of(obj.get("llm_calls", []), "llm_calls"))
            ),
            unread=tuple(
                Unread.from_dict(item, f"unread[{i}]")
                for i, item in enumerate(list_of(obj.get("unread", []), "unread"))
            ),
            evaluations=tuple(
                EvaluationResult.from_dict(item, f"evaluations[{i}]")
                for i, item in enumerate(list_of(obj.get("evaluations", []), "evaluations"))
            ),
            user_id=opt_str(obj.get("user_id"), "user_id"),
            session_id=opt_str(obj.get("session_id"), "session_id"),
            root_span_id=opt_str(obj.get("root_span_id"), "root_span_id"),
        )  # "usage" is derived from llm_calls: accepted, recomputed
