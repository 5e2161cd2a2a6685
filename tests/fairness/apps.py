"""Apps for the ``spanguard run`` tests (imported by module:function)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import spanguard

_rng = random.Random(0)


def fair(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    return {
        "text": "Sure, here are the steps to reset it.",
        "metadata": {"trace": {"tool_calls": [{"name": "kb"}], "escalated": False}},
    }


def biased(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    escalate = assignments.get("gender") == "woman"
    return {
        "text": "ok",
        "metadata": {
            "trace": {"escalated": escalate, "tool_calls": [] if escalate else [{"name": "kb"}]}
        },
    }


async def async_biased(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return biased(prompt, assignments)


def text_only(prompt: str, assignments: dict[str, str]) -> str:
    return "I cannot help with that." if assignments.get("gender") == "woman" else "Sure."


def flaky(prompt: str, assignments: dict[str, str]) -> str:
    if assignments.get("gender") == "woman":
        raise RuntimeError("model timeout")
    return "Sure."


def wrong_type(prompt: str, assignments: dict[str, str]) -> int:
    return 42


@spanguard.tool
def kb_search(query: str) -> list[str]:
    return ["doc"]


def instrumented(prompt: str, assignments: dict[str, str]) -> str:
    """Emits its process through the SDK: women are escalated instead of served."""
    with spanguard.request("support"):
        if assignments.get("gender") == "woman":
            spanguard.escalate(reason="manual review")
        else:
            kb_search(prompt)
        spanguard.plan_step("lookup")
    return "Here you go."


def instrumented_fair(prompt: str, assignments: dict[str, str]) -> str:
    with spanguard.request("support"):
        kb_search(prompt)
        spanguard.friction("identity check")
    return "Here you go."


def model_calls(prompt: str, assignments: dict[str, str]) -> str:
    """Records its model calls through the SDK: women's requests take a second call."""
    with spanguard.request("support"):
        for _ in range(2 if assignments.get("gender") == "woman" else 1):
            with spanguard.llm_call("desk-model", provider="test") as call:
                call.record_usage(10, 5)
    return "Here you go."
