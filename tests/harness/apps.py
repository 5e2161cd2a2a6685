"""Apps for the harness tests (``spanguard run`` and ``cases run --app``), loaded by
module:function: one- and two-argument, plain and async, instrumented with the SDK."""

from __future__ import annotations

import asyncio
from typing import Any

import spanguard


def needs_id_check(prompt: str) -> bool:
    return "account" in prompt


def angry(prompt: str) -> bool:
    return "human" in prompt


@spanguard.tool
def lookup_order(order_id: str) -> str:
    return f"order {order_id}: shipped"


@spanguard.request("support_agent")
def answer(prompt: str) -> str:
    """The README's one-argument app, as written there."""
    if needs_id_check(prompt):
        spanguard.friction("extra identity check")
    if angry(prompt):
        spanguard.escalate(reason="customer asked for a human")
    return lookup_order("A-1")


async def answer_async(prompt: str) -> str:
    await asyncio.sleep(0)
    if angry(prompt):
        spanguard.escalate(reason="customer asked for a human")
    return lookup_order("A-2")


def answer_two(prompt: str, assignments: dict[str, str]) -> dict[str, Any]:
    if angry(prompt):
        spanguard.escalate(reason="customer asked for a human")
    return {"text": lookup_order("A-3"), "metadata": {"assignments": len(assignments)}}


async def answer_two_async(prompt: str, assignments: dict[str, str]) -> str:
    await asyncio.sleep(0)
    return answer_two(prompt, assignments)["text"]


def no_arguments() -> str:
    return "hi"


def three_arguments(prompt: str, assignments: dict[str, str], user: str) -> str:
    return "hi"


def always_raises(prompt: str) -> str:
    raise RuntimeError(f"model timeout on {prompt[:12]!r}")


def raises_on_refund(prompt: str) -> str:
    if "refund" in prompt:
        raise ValueError("the refund service is down")
    return lookup_order("A-4")


def no_escalation(prompt: str) -> str:
    """A candidate that stopped handing angry customers to a human."""
    return lookup_order("A-5")


def interrupted(prompt: str) -> str:
    """Stands for a Ctrl-C while the replay runs."""
    if "refund" in prompt:
        raise KeyboardInterrupt
    return lookup_order("A-6")
