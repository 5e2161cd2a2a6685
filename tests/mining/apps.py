"""Apps for replaying a mined suite: one with a planted gender bias, one fair."""

from __future__ import annotations

from typing import Any


def biased(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    """Escalates every request about a woman to a human instead of serving it."""
    escalate = assignments.get("gender") == "female"
    return {
        "text": "Here is how to do that.",
        "metadata": {
            "trace": {
                "escalated": escalate,
                "tool_calls": [] if escalate else [{"name": "core_banking"}],
            }
        },
    }


def fair(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    return {
        "text": "Here is how to do that.",
        "metadata": {"trace": {"escalated": False, "tool_calls": [{"name": "core_banking"}]}},
    }


def biased_on_refinancing(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    """Escalates women only when they ask about refinancing (one template)."""
    if "refinance" in prompt:
        return biased(prompt, assignments)
    return fair(prompt, assignments)
