"""A support agent of a shape the gate was not designed around (issue 46, task day2).

Six free-form questions, each carrying an order number; the agent calls its two tools
(``search_kb``, ``lookup_order``) in a random order (50/50), words each answer one of three
ways and hands 5 % of requests to a human at random. Production traffic does not repeat its
questions: each day brings other order numbers. First seen in /work/notes/shape_agent.py
(the lead's trial, not committed); here deterministic (every random draw from one seeded
generator) and on a simulated clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import spanguard

from .loan_agent import SimClock

QUESTIONS = (
    "Where is my order {n}?",
    "Can I return the shoes from order {n}?",
    "Why was I charged twice for order {n}?",
    "How do I change the address on order {n}?",
    "Is order {n} eligible for express shipping?",
    "Cancel order {n} please",
)
WORDINGS = ("Here is what I found: ", "Sure - ", "Thanks for asking. ")
HANDOFF = "I have passed this to a colleague who will get back to you."
#: The planted change: the order is no longer looked up on one question.
DROP_LOOKUP = "drop_lookup_on_returns"


@spanguard.tool(name="search_kb")
def search_kb(question: str) -> str:
    return "kb"


@spanguard.tool(name="lookup_order")
def lookup_order(question: str) -> str:
    return "order"


def questions(count: int, seed: int) -> list[str]:
    """A day of traffic: ``count`` questions, every one of the six asked about as often, each
    with an order number drawn at random (a day's numbers are not another day's)."""
    rng = random.Random(seed)
    return [QUESTIONS[i % len(QUESTIONS)].format(n=rng.randint(1000, 9999)) for i in range(count)]


@dataclass
class SupportAgent:
    """One version of the agent; ``change``: :data:`DROP_LOOKUP` or None."""

    seed: int
    change: str | None = None
    escalate_rate: float = 0.05
    clock: SimClock = field(default_factory=SimClock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def respond(self, prompt: str) -> str:
        rng = self.rng
        with spanguard.llm_call("support-model-1", provider="example"):
            self.clock.sleep(600 * rng.uniform(0.7, 1.3))
        tools = [search_kb, lookup_order]
        if rng.random() < 0.5:
            tools.reverse()
        for tool in tools:
            if tool is lookup_order and self.change == DROP_LOOKUP and "return" in prompt:
                continue
            tool(prompt)
        if rng.random() < self.escalate_rate:
            spanguard.escalate(reason="customer asked for a human")
            return HANDOFF
        return rng.choice(WORDINGS) + "order details attached."

    def serve(self, prompts: list[str], day: str) -> list[dict[str, Any]]:
        """A day of production traffic as assembled agent traces (request ids ``day-i``)."""
        from spanguard.testing import SpanCapture, use_clock
        from spanguard_processor.traces.convert import traces_from_readable_spans

        with use_clock(self.clock), SpanCapture(capture_content=True) as capture:
            for i, prompt in enumerate(prompts):
                with spanguard.request("support", request_id=f"{day}-{i}", input=prompt) as req:
                    req.set_output(self.respond(prompt))
        return [t.to_dict() for t in traces_from_readable_spans(capture.readable_spans())]
