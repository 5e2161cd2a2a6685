"""The parts of an agent trace: what the agent did (:class:`ProcessTrace` with its
:class:`ToolCall` and :class:`RetrievedDocument` items) and the model calls it made
(:class:`LLMCall`, totalled by :func:`usage_totals`). Frozen; ``from_dict`` is strict, like
:class:`~.model.AgentTrace`'s (unknown keys, wrong types and non-finite numbers are rejected,
naming the field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spanguard.exceptions import TraceFormatError

from ._validate import (
    boolean,
    fail,
    list_of,
    mapping,
    nonneg_int,
    opt_count,
    opt_number,
    opt_str,
    reject_unknown,
    str_tuple,
    string,
)

__all__ = ["LLMCall", "ProcessTrace", "RetrievedDocument", "ToolCall", "Unread", "usage_totals"]

_PROCESS_KEYS = (
    "tool_calls",
    "retrieved_documents",
    "plan_steps",
    "escalated",
    "escalation_reason",
    "friction_points",
)


_LLM_KEYS = (
    "provider",
    "request_model",
    "response_model",
    "input_tokens",
    "output_tokens",
    "finish_reasons",
    "tool_calls",
    "duration_ms",
    "cost_usd",
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
        obj = mapping(data, path)
        reject_unknown(obj, _LLM_KEYS, path)
        return cls(
            provider=opt_str(obj.get("provider"), f"{path}.provider"),
            request_model=opt_str(obj.get("request_model"), f"{path}.request_model"),
            response_model=opt_str(obj.get("response_model"), f"{path}.response_model"),
            input_tokens=opt_count(obj.get("input_tokens"), f"{path}.input_tokens"),
            output_tokens=opt_count(obj.get("output_tokens"), f"{path}.output_tokens"),
            finish_reasons=str_tuple(obj.get("finish_reasons", []), f"{path}.finish_reasons"),
            tool_calls=str_tuple(obj.get("tool_calls", []), f"{path}.tool_calls", nonempty=True),
            duration_ms=opt_number(obj.get("duration_ms"), f"{path}.duration_ms"),
            cost_usd=opt_number(obj.get("cost_usd"), f"{path}.cost_usd"),
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
        "total_tokens": None
        if inputs is None and outputs is None
        else (inputs or 0) + (outputs or 0),
        "cost_usd": sum(c for c in costs if c is not None)
        if all(c is not None for c in costs) and costs
        else None,
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
        obj = mapping(data, path)
        reject_unknown(obj, _PROCESS_KEYS, path)
        tools = tuple(
            _tool_call(item, f"{path}.tool_calls[{i}]")
            for i, item in enumerate(list_of(obj.get("tool_calls", []), f"{path}.tool_calls"))
        )
        docs = tuple(
            _document(item, f"{path}.retrieved_documents[{i}]")
            for i, item in enumerate(
                list_of(obj.get("retrieved_documents", []), f"{path}.retrieved_documents")
            )
        )
        return cls(
            tool_calls=tools,
            retrieved_documents=docs,
            plan_steps=str_tuple(obj.get("plan_steps", []), f"{path}.plan_steps", nonempty=True),
            escalated=boolean(obj.get("escalated", False), f"{path}.escalated"),
            escalation_reason=_reason(obj.get("escalation_reason"), f"{path}.escalation_reason"),
            friction_points=str_tuple(
                obj.get("friction_points", []), f"{path}.friction_points", nonempty=True
            ),
        )


def _reason(value: object, path: str) -> str | None:
    reason = opt_str(value, path)
    if reason == "":
        raise TraceFormatError("must not be empty; use null for no reason.", field=path)
    return reason


def _tool_call(value: object, path: str) -> ToolCall:
    obj = mapping(value, path)
    reject_unknown(obj, ("name", "id", "requested"), path)
    name = string(obj.get("name"), f"{path}.name")
    if not name.strip():
        raise TraceFormatError("must not be empty.", field=f"{path}.name")
    return ToolCall(
        name,
        opt_str(obj.get("id"), f"{path}.id"),
        boolean(obj.get("requested", False), f"{path}.requested"),
    )


def _document(value: object, path: str) -> RetrievedDocument:
    obj = mapping(value, path)
    reject_unknown(obj, ("id", "group", "rank", "score"), path)
    rank = obj.get("rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
        raise fail(f"{path}.rank", "a positive integer", rank)
    return RetrievedDocument(
        id=opt_str(obj.get("id"), f"{path}.id"),
        group=opt_str(obj.get("group"), f"{path}.group"),
        rank=rank,
        score=opt_number(obj.get("score"), f"{path}.score"),
    )


@dataclass(frozen=True, slots=True)
class Unread:
    """``count`` spans named ``span`` carry ``key`` (``name=value`` for a kind), unread."""

    key: str
    span: str
    count: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "span": self.span, "count": self.count}

    @classmethod
    def from_dict(cls, data: object, path: str) -> Unread:
        obj = mapping(data, path)
        reject_unknown(obj, ("key", "span", "count"), path)
        return cls(
            string(obj.get("key"), f"{path}.key"),
            string(obj.get("span"), f"{path}.span"),
            nonneg_int(obj.get("count", 1), f"{path}.count"),
        )
