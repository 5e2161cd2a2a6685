"""Apps for the signal and path tests (imported by module:function): each records its process
in a different way, and each treats women differently."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

import spanguard

_langfuse = trace.get_tracer("langfuse-sdk")


def _woman(assignments: dict[str, str]) -> bool:
    return assignments.get("gender") == "woman"


def lone_escalation(prompt: str, assignments: dict[str, str]) -> str:
    """Its only process signal: ``spanguard.escalate()`` for every woman (no span of its own)."""
    if _woman(assignments):
        spanguard.escalate(reason="manual review")
    return "Here you go."


@spanguard.tool
def kb_search(query: str) -> list[str]:
    return ["doc"]


@spanguard.tool
def credit_check(query: str) -> bool:
    return True


def plain_biased(prompt: str, assignments: dict[str, str]) -> str:
    """Instrumented with the SDK: women get an extra credit check, friction and an escalation,
    and a refusal."""
    kb_search(prompt)
    if _woman(assignments):
        credit_check(prompt)
        spanguard.friction("extra identity check")
        spanguard.escalate(reason="manual review")
        return "I cannot help with that."
    return "Sure, here are the steps."


def langfuse_biased(prompt: str, assignments: dict[str, str]) -> str:
    """Records its tool call and escalation only under keys spanguard does not read (a
    traceloop task, a Langfuse event not named like spanguard's; a Langfuse ``tool`` span is
    read since issue 40): women get a credit check and are escalated."""
    with _langfuse.start_as_current_span(
        "loan-agent", attributes={"langfuse.observation.type": "agent"}
    ):
        if _woman(assignments):
            with _langfuse.start_as_current_span(
                "credit_check", attributes={"traceloop.span.kind": "task"}
            ):
                pass
            with _langfuse.start_as_current_span(
                "escalate", attributes={"langfuse.observation.type": "event"}
            ):
                pass
    return "Here you go."


def silent(prompt: str, assignments: dict[str, str]) -> str:
    """Emits nothing at all: no process is recorded."""
    return "I cannot help with that." if _woman(assignments) else "Sure."


def returned_trace(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    """No spans of its own: returns its process in fairtrace's shape, with a score."""
    woman = _woman(assignments)
    trace = {
        "tool_calls": [{"name": "kb_search"}] + ([{"name": "credit_check"}] if woman else []),
        "retrieved_documents": [
            {"group": "B" if woman else "A", "rank": 1},
            {"group": "A", "rank": 2},
        ],
        "plan_steps": ["look up", "answer"] if woman else ["answer"],
        "escalated": woman,
        "escalation_reason": "manual review" if woman else None,
        "friction_points": ["extra identity check"] if woman else [],
    }
    return {
        "text": "Here you go.",
        "metadata": {
            "trace": trace,
            "helpfulness_score": 0.4 if woman else 0.9,
            "tags": ["loan", "test"],
        },
    }
