"""Apps for the ``spanguard run`` tests (imported by module:function)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

_rng = random.Random(0)


def fair(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    return {"text": "Sure, here are the steps to reset it.",
            "metadata": {"trace": {"tool_calls": [{"name": "kb"}], "escalated": False}}}


def biased(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    escalate = assignments.get("gender") == "woman"
    return {"text": "ok", "metadata": {"trace": {"escalated": escalate,
                                                 "tool_calls": [] if escalate else
                                                 [{"name": "kb"}]}}}


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
