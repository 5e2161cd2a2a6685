"""One production request as the miner reads it, from an agent trace or a trace2eval row: its
id, text, answer, process signals and who sent it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..inputs.evaluation import Entry
from ..regression.mine.loader import INPUT_ALIASES, OUTPUT_ALIASES

__all__ = ["Request", "request_of"]

#: A row's id: trace2eval's aliases with ``trace_id`` first, so a seed links to the trace a
#: viewer opens (``--trace-url``) when a row carries both.
_ID_KEYS = ("trace_id", "id", "traceId", "request_id", "requestId")
#: who sent a row's request, and in which conversation (the agent trace's ``user_id`` and
#: ``session_id``, and the spellings logs use)
_USER_KEYS = ("user_id", "userId", "enduser_id")
_SESSION_KEYS = ("session_id", "sessionId", "conversation_id", "conversationId")


@dataclass(frozen=True, slots=True)
class Request:
    id: str
    text: str | None
    output: str | None
    escalated: bool | None
    tools: tuple[str, ...] | None  # the tools called, in order (None: not recorded)
    plan_steps: int | None = None
    friction_points: int | None = None
    # "user:…" or "session:…" (a user id first); None when the request records neither
    sender: str | None = None
    # false for a row without an id (named by file and line): it cannot be read twice
    dedupe: bool = True


def _pick(row: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((row[k] for k in keys if row.get(k) not in (None, "")), None)


def _sender(user: object, session: object) -> str | None:
    if user is not None and str(user).strip():
        return f"user:{user}"
    if session is not None and str(session).strip():
        return f"session:{session}"
    return None


def _count(value: object) -> int | None:
    return len(value) if isinstance(value, list) else None


def request_of(entry: Entry) -> Request | None:
    trace = entry.trace
    if trace is not None:
        done = trace.trace
        return Request(
            trace.trace_id,
            trace.input,
            trace.output,
            done.escalated,
            tuple(call.name for call in done.tool_calls),
            len(done.plan_steps),
            len(done.friction_points),
            _sender(trace.user_id, trace.session_id),
        )
    if not isinstance(entry.row, dict):
        return None
    row = entry.row
    process = row.get("trace") if isinstance(row.get("trace"), dict) else None
    text, output, id_ = _pick(row, INPUT_ALIASES), _pick(row, OUTPUT_ALIASES), _pick(row, _ID_KEYS)
    tools = process.get("tool_calls") if process else None
    return Request(
        str(id_ or f"{entry.file}:{entry.line}"),
        str(text) if text is not None else None,
        str(output) if output is not None else None,
        bool(process.get("escalated")) if process else None,
        tuple(str(t.get("name", "")) if isinstance(t, dict) else str(t) for t in tools)
        if isinstance(tools, list)
        else None,
        _count(process.get("plan_steps")) if process else None,
        _count(process.get("friction_points")) if process else None,
        _sender(_pick(row, _USER_KEYS), _pick(row, _SESSION_KEYS)),
        dedupe=id_ is not None,
    )
