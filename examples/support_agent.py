"""An example customer-support agent that emits every spanguard signal.

``answer(prompt, assignments)`` is the entry point the demo and ``spanguard run`` call: it
returns the reply text. It is deterministic: the same prompt, assignments and bias give the same
reply and the same spans. No real model is called; a tiny rule-based "model" stands in.

Signals: the request root (``@spanguard.request``), a plan with steps, an LLM call with token
usage and cost, a retrieval with ranked documents (id, group, rank, score), a tool call
(``lookup_order``), friction (``"extra identity check"``), escalation to a human, response
metadata (``helpfulness_score``), expectations, and feedback/retry marks by request id
(:func:`give_feedback`).

Decision questions (any prompt with "should", as in the DiscrimEval data ``spanguard demo``
uses) are checked with the ``check_eligibility`` tool against the decision policy pages; a fair
agent still escalates about 5% of them to a human, at random — noise a sound fairness gate must
not mistake for bias.

Bias setting (for fairness demos): ``bias`` — a number in [0, 1], from the ``bias=`` argument
or else the ``SUPPORT_AGENT_BIAS`` environment variable (default 0: fair). With bias > 0, a
request whose assignments contain the value ``bias_against`` (argument, else the
``SUPPORT_AGENT_BIAS_AGAINST`` variable, default ``"female"``) is, with probability ``bias``
each: escalated to a human, given an extra identity check, denied the order-lookup tool, and
shown the community forum ahead of the official help pages.

Run it: ``python examples/support_agent.py`` prints a few answers (with a console exporter).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

import spanguard

__all__ = ["BIAS_AGAINST_ENV", "BIAS_ENV", "answer", "give_feedback"]

BIAS_ENV = "SUPPORT_AGENT_BIAS"
BIAS_AGAINST_ENV = "SUPPORT_AGENT_BIAS_AGAINST"
MODEL = "support-rules-1"
COST_PER_TOKEN_USD = 0.000002

_HELP_CENTER = (
    {
        "id": "kb-refunds",
        "group": "official",
        "topic": "refund",
        "text": "Refunds are issued within 5 business days to the original payment method.",
    },
    {
        "id": "kb-shipping",
        "group": "official",
        "topic": "order",
        "text": "Orders ship within 24 hours; tracking arrives by email.",
    },
    {
        "id": "kb-account",
        "group": "official",
        "topic": "account",
        "text": "Reset your password from the sign-in page.",
    },
    {
        "id": "forum-1042",
        "group": "community",
        "topic": "refund",
        "text": "A user says refunds took two weeks for them.",
    },
    {
        "id": "forum-2210",
        "group": "community",
        "topic": "order",
        "text": "Someone suggests calling the courier directly.",
    },
    {
        "id": "kb-decisions",
        "group": "official",
        "topic": "decision",
        "text": "Requests are decided on the documented criteria only.",
    },
    {
        "id": "kb-appeals",
        "group": "official",
        "topic": "decision",
        "text": "Every decision can be appealed within 30 days.",
    },
    {
        "id": "forum-3307",
        "group": "community",
        "topic": "decision",
        "text": "A user thinks approvals depend on who you are.",
    },
)
BASE_ESCALATION_RATE = 0.05  # a fair agent still hands some requests to a human, at random


def _unit(*parts: str) -> float:
    """A deterministic number in [0, 1) from the given strings."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _bias(bias: float | None) -> float:
    if bias is None:
        try:
            bias = float(os.environ.get(BIAS_ENV, "0") or 0)
        except ValueError:
            bias = 0.0
    return min(1.0, max(0.0, bias))


def _topic(prompt: str) -> str:
    text = prompt.lower()
    if "should" in text:
        return "decision"  # a decision question, as in the DiscrimEval demo data
    for topic in ("refund", "order", "account"):
        if topic in text:
            return topic
    return "order"


@spanguard.retrieval("help_center")
def search_help_center(topic: str, community_first: bool) -> list[dict[str, object]]:
    """Rank help-center pages for ``topic`` (official first, unless ``community_first``)."""
    hits = [doc for doc in _HELP_CENTER if doc["topic"] == topic] or list(_HELP_CENTER[:2])
    hits.sort(key=lambda doc: (doc["group"] == "official") == community_first)
    return [
        {
            "id": doc["id"],
            "group": doc["group"],
            "rank": rank,
            "score": round(1.0 / rank, 3),
            "content": doc["text"],
        }
        for rank, doc in enumerate(hits, start=1)
    ]


@spanguard.tool("lookup_order", description="look up an order's status")
def lookup_order(prompt: str) -> str:
    """The order status for the order number in the prompt (a fake back end)."""
    digits = "".join(ch for ch in prompt if ch.isdigit()) or "0000"
    return f"order {digits} shipped yesterday"


@spanguard.tool("check_eligibility", description="check a request against the criteria")
def check_eligibility(prompt: str) -> str:
    """The outcome of the (fake) criteria check; the same for every applicant."""
    return "has been checked against the documented criteria"


def _classify(prompt: str) -> str:
    with spanguard.llm_call(MODEL, provider="example") as call:
        call.set_input([{"role": "user", "content": prompt}])
        topic = _topic(prompt)
        input_tokens = max(1, len(prompt) // 4)
        call.record_usage(input_tokens, 3, cost_usd=(input_tokens + 3) * COST_PER_TOKEN_USD)
        call.set_output(topic)
    return topic


@spanguard.request("support_agent")
def answer(
    prompt: str,
    assignments: Mapping[str, str],
    *,
    bias: float | None = None,
    bias_against: str | None = None,
) -> str:
    """Answer one support request; see the module docstring for the bias setting."""
    strength = _bias(bias)
    target = bias_against or os.environ.get(BIAS_AGAINST_ENV, "female")
    disfavoured = strength > 0 and target in assignments.values()
    key = prompt + "|" + ",".join(f"{k}={v}" for k, v in sorted(assignments.items()))

    def unlucky(signal: str) -> bool:
        return disfavoured and _unit(key, signal) < strength

    with spanguard.plan():
        for step in ("classify", "retrieve", "act", "reply"):  # the plan, then its deviations
            spanguard.plan_step(step)
        topic = _classify(prompt)
        docs = search_help_center(topic, community_first=unlucky("ranking"))
        facts = [docs[0]["content"]]
        if unlucky("friction"):
            spanguard.friction("extra identity check")
        if unlucky("tool"):
            spanguard.plan_step("skip the back-end check")
        elif topic == "decision":
            facts.append(f"The request {check_eligibility(prompt)}.")
        elif topic in ("order", "refund"):
            facts.append(lookup_order(prompt))
        else:
            spanguard.plan_step("skip order lookup")
    escalated = (
        unlucky("escalate")
        or "human" in prompt.lower()
        or (topic == "decision" and _unit(key, "base") < BASE_ESCALATION_RATE)
    )
    if escalated:
        spanguard.escalate(reason="the customer needs a human agent")
        reply = "I have passed your request to a colleague who will contact you shortly."
    else:
        reply = " ".join(str(fact) for fact in facts)
    request = spanguard.current_request()
    if request is not None:
        request.set_metadata("helpfulness_score", 0.2 if escalated else 0.8 + 0.1 * len(facts))
        request.expect(min_chars=20, not_contains=["error"])
    return reply


def give_feedback(request_id: str, thumbs_up: bool, retried: bool = False) -> None:
    """What the app does when its user rates an answer, possibly long after it was sent."""
    spanguard.feedback(request_id, 1 if thumbs_up else 0)
    if retried:
        spanguard.mark_retried(request_id)


def main() -> None:
    spanguard.configure(exporter="console", service_name="support-agent")
    for gender in ("male", "female"):
        with spanguard.request(
            "support_agent",
            seed_id="refund-1",
            variant_id=f"refund-1-{gender}",
            assignments={"gender": gender},
        ) as req:
            print(
                gender,
                "->",
                answer("Where is my refund for order 1234?", {"gender": gender}, bias=1.0),
            )
        give_feedback(req.request_id, thumbs_up=gender == "male")
    spanguard.shutdown()


if __name__ == "__main__":
    main()
