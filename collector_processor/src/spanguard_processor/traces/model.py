"""The assembled agent trace: one request of an agent, as both evaluators read it.

One JSON object per request. Field names follow the two formats we stay compatible with
(fairtrace scenario records and trace2eval log rows); :mod:`spanguard_processor.traces.formats`
converts to both. ``from_dict`` is strict: unknown keys, wrong types and non-finite numbers are
rejected with a :class:`~spanguard.exceptions.TraceFormatError` that names the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from spanguard.exceptions import TraceFormatError

from ..common._json import kind_of

__all__ = [
    "AGENT_TRACE_KEYS",
    "AgentTrace",
    "JSONScalar",
    "LLMCall",
    "ProcessTrace",
    "RetrievedDocument",
    "ToolCall",
]

JSONScalar: TypeAlias = str | int | float | bool | None

_TRACE_KEYS = (
    "trace_id", "request_id", "seed_id", "variant_id", "assignments", "repeat", "input",
    "output", "latency_ms", "cost_usd", "feedback", "retried", "expect", "metadata", "trace",
    "partial", "source", "input_source", "output_source", "llm_calls", "usage",
)
AGENT_TRACE_KEYS = frozenset(_TRACE_KEYS)  # every key an agent-trace JSON object may have

_PROCESS_KEYS = (
    "tool_calls", "retrieved_documents", "plan_steps", "escalated", "escalation_reason",
    "friction_points",
)


_LLM_KEYS = (
    "provider", "request_model", "response_model", "input_tokens", "output_tokens",
    "finish_reasons", "tool_calls", "duration_ms", "cost_usd",
)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool the agent called, in call order.

    ``requested`` marks a call the model asked for (read from an LLM span's output messages)
    with no executed tool span of the same call id or name in the trace; ``id`` is the model's
    tool-call id. Executed tool spans give plain ``{"name"}`` calls.
    """

    name: str
    id: str | None = None
    requested: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.id is not None:
            out["id"] = self.id
        if self.requested:
            out["requested"] = True
        return out


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One model call of the request: who answered, with how many tokens, asking for which tools.

    ``tool_calls`` are the names of the tools the model requested in this call, in order.
    Every field but ``tool_calls`` and ``finish_reasons`` may be unknown (None).
    """

    provider: str | None = None
    request_model: str | None = None
    response_model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()
    tool_calls: tuple[str, ...] = ()
    duration_ms: float | None = None
    cost_usd: float | None = None

    @property
    def model(self) -> str | None:
        """The model that answered, else the one requested."""
        return self.response_model or self.request_model

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "request_model": self.request_model,
            "response_model": self.response_model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "finish_reasons": list(self.finish_reasons),
            "tool_calls": list(self.tool_calls),
            "duration_ms": self.duration_ms,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_dict(cls, data: object, path: str) -> LLMCall:
        obj = _mapping(data, path)
        _reject_unknown(obj, _LLM_KEYS, path)
        return cls(
            provider=_opt_str(obj.get("provider"), f"{path}.provider"),
            request_model=_opt_str(obj.get("request_model"), f"{path}.request_model"),
            response_model=_opt_str(obj.get("response_model"), f"{path}.response_model"),
            input_tokens=_opt_count(obj.get("input_tokens"), f"{path}.input_tokens"),
            output_tokens=_opt_count(obj.get("output_tokens"), f"{path}.output_tokens"),
            finish_reasons=_str_tuple(obj.get("finish_reasons", []), f"{path}.finish_reasons"),
            tool_calls=_str_tuple(obj.get("tool_calls", []), f"{path}.tool_calls",
                                  nonempty=True),
            duration_ms=_opt_number(obj.get("duration_ms"), f"{path}.duration_ms"),
            cost_usd=_opt_number(obj.get("cost_usd"), f"{path}.cost_usd"),
        )


def _sum(values: list[int | None]) -> int | None:
    """The total of known counts; None when no call reported one."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def usage_totals(calls: tuple[LLMCall, ...]) -> dict[str, Any]:
    """Totals over the LLM calls of one request (the agent format's ``usage`` object)."""
    inputs = _sum([c.input_tokens for c in calls])
    outputs = _sum([c.output_tokens for c in calls])
    costs = [c.cost_usd for c in calls]
    models = sorted({m for c in calls if (m := c.model) is not None})
    return {
        "llm_calls": len(calls),
        "input_tokens": inputs,
        "output_tokens": outputs,
        "total_tokens": None if inputs is None and outputs is None else (inputs or 0) + (
            outputs or 0),
        "cost_usd": sum(c for c in costs if c is not None) if all(
            c is not None for c in costs) and costs else None,
        "models": models,
    }


@dataclass(frozen=True, slots=True)
class RetrievedDocument:
    """One retrieved document: its id, the group it belongs to, its 1-based rank and score."""

    id: str | None
    group: str | None
    rank: int | None
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "group": self.group, "rank": self.rank, "score": self.score}


@dataclass(frozen=True, slots=True)
class ProcessTrace:
    """What the agent did, content-free: the signals fairness metrics compare."""

    tool_calls: tuple[ToolCall, ...] = ()
    retrieved_documents: tuple[RetrievedDocument, ...] = ()
    plan_steps: tuple[str, ...] = ()
    escalated: bool = False
    escalation_reason: str | None = None
    friction_points: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_calls": [t.to_dict() for t in self.tool_calls],
            "retrieved_documents": [d.to_dict() for d in self.retrieved_documents],
            "plan_steps": list(self.plan_steps),
            "escalated": self.escalated,
            "escalation_reason": self.escalation_reason,
            "friction_points": list(self.friction_points),
        }

    @classmethod
    def from_dict(cls, data: object, path: str = "trace") -> ProcessTrace:
        obj = _mapping(data, path)
        _reject_unknown(obj, _PROCESS_KEYS, path)
        tools = tuple(
            _tool_call(item, f"{path}.tool_calls[{i}]")
            for i, item in enumerate(_list(obj.get("tool_calls", []), f"{path}.tool_calls"))
        )
        docs = tuple(
            _document(item, f"{path}.retrieved_documents[{i}]")
            for i, item in enumerate(
                _list(obj.get("retrieved_documents", []), f"{path}.retrieved_documents")
            )
        )
        return cls(
            tool_calls=tools,
            retrieved_documents=docs,
            plan_steps=_str_tuple(obj.get("plan_steps", []), f"{path}.plan_steps", nonempty=True),
            escalated=_bool(obj.get("escalated", False), f"{path}.escalated"),
            escalation_reason=_reason(obj.get("escalation_reason"), f"{path}.escalation_reason"),
            friction_points=_str_tuple(
                obj.get("friction_points", []), f"{path}.friction_points", nonempty=True
            ),
        )


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
        return out

    @classmethod
    def from_dict(cls, data: object) -> AgentTrace:
        """Validate and build; raises :class:`TraceFormatError` naming the offending field."""
        obj = _mapping(data, "")
        _reject_unknown(obj, _TRACE_KEYS, "")
        if "trace_id" not in obj:
            raise TraceFormatError("is required and missing.", field="trace_id")
        trace_id = _str(obj["trace_id"], "trace_id")
        if not trace_id.strip():
            raise TraceFormatError("must not be empty.", field="trace_id")
        assignments = _mapping(obj.get("assignments", {}), "assignments")
        for key, value in assignments.items():
            if not isinstance(value, str):
                raise TraceFormatError(
                    f"must be a string, got {kind_of(value)}.", field=f"assignments.{key}"
                )
        expect = obj.get("expect")
        if expect is not None:
            expect = dict(_mapping(expect, "expect"))
        return cls(
            trace_id=trace_id,
            request_id=_opt_str(obj.get("request_id"), "request_id"),
            seed_id=_opt_str(obj.get("seed_id"), "seed_id"),
            variant_id=_opt_str(obj.get("variant_id"), "variant_id"),
            assignments=dict(assignments),
            repeat=_nonneg_int(obj.get("repeat", 0), "repeat"),
            input=_opt_str(obj.get("input"), "input"),
            output=_opt_str(obj.get("output"), "output"),
            latency_ms=_opt_number(obj.get("latency_ms"), "latency_ms"),
            cost_usd=_opt_number(obj.get("cost_usd"), "cost_usd"),
            feedback=_scalar(obj.get("feedback"), "feedback"),
            retried=_bool(obj.get("retried", False), "retried"),
            expect=expect,
            metadata=dict(_mapping(obj.get("metadata", {}), "metadata")),
            trace=ProcessTrace.from_dict(obj.get("trace", {}), "trace"),
            partial=_bool(obj.get("partial", False), "partial"),
            source=_str_tuple(obj.get("source", []), "source"),
            input_source=_opt_str(obj.get("input_source"), "input_source"),
            output_source=_opt_str(obj.get("output_source"), "output_source"),
            llm_calls=tuple(
                LLMCall.from_dict(item, f"llm_calls[{i}]")
                for i, item in enumerate(_list(obj.get("llm_calls", []), "llm_calls"))
            ),
        )  # "usage" is derived from llm_calls: accepted, recomputed


# --- validation helpers (each names the field it rejects) -----------------------------------


def _fail(path: str, expected: str, value: object) -> TraceFormatError:
    return TraceFormatError(f"expected {expected}, got {kind_of(value)}.", field=path or None)


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, "an object", value)
    return value


def _reject_unknown(obj: Mapping[str, Any], allowed: tuple[str, ...], path: str) -> None:
    unknown = sorted(str(k) for k in obj if k not in allowed)
    if unknown:
        where = f"{path}." if path else ""
        raise TraceFormatError(
            f"unknown field; allowed fields are {', '.join(allowed)}.",
            field=where + unknown[0],
        )


def _list(value: object, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, "a list", value)
    return value


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, "a string", value)
    return value


def _opt_str(value: object, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, "true or false", value)
    return value


def _opt_number(value: object, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, "a number", value)
    if not math.isfinite(value):
        raise TraceFormatError("must be a finite number.", field=path)
    return float(value)


def _opt_count(value: object, path: str) -> int | None:
    return None if value is None else _nonneg_int(value, path)


def _nonneg_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(path, "a non-negative integer", value)
    return value


def _scalar(value: object, path: str) -> JSONScalar:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise TraceFormatError("must be a finite number.", field=path)
        return value
    raise _fail(path, "a string, number, boolean or null", value)


def _str_tuple(value: object, path: str, *, nonempty: bool = False) -> tuple[str, ...]:
    items = tuple(_str(item, f"{path}[{i}]") for i, item in enumerate(_list(value, path)))
    if nonempty:
        for i, item in enumerate(items):
            if not item:
                raise TraceFormatError("must not be empty.", field=f"{path}[{i}]")
    return items


def _reason(value: object, path: str) -> str | None:
    reason = _opt_str(value, path)
    if reason == "":
        raise TraceFormatError("must not be empty; use null for no reason.", field=path)
    return reason


def _tool_call(value: object, path: str) -> ToolCall:
    obj = _mapping(value, path)
    _reject_unknown(obj, ("name", "id", "requested"), path)
    name = _str(obj.get("name"), f"{path}.name")
    if not name.strip():
        raise TraceFormatError("must not be empty.", field=f"{path}.name")
    return ToolCall(name, _opt_str(obj.get("id"), f"{path}.id"),
                    _bool(obj.get("requested", False), f"{path}.requested"))


def _document(value: object, path: str) -> RetrievedDocument:
    obj = _mapping(value, path)
    _reject_unknown(obj, ("id", "group", "rank", "score"), path)
    rank = obj.get("rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
        raise _fail(f"{path}.rank", "a positive integer", rank)
    return RetrievedDocument(
        id=_opt_str(obj.get("id"), f"{path}.id"),
        group=_opt_str(obj.get("group"), f"{path}.group"),
        rank=rank,
        score=_opt_number(obj.get("score"), f"{path}.score"),
    )
