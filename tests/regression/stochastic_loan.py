"""A stochastic templated loan agent (issue 46): outcomes decided by the numbers, plus noise.

The applications are :func:`.loan_agent.applications` (three templates, amount/income ratios
cycling through approve, escalate and decline). Unlike :class:`.loan_agent.LoanAgent`, approve
and decline share one process path (``credit_check``; an outcome the process does not show),
and there are two tool paths: applicants earning at least :data:`VERIFY_INCOME` also go through
``verify_income``. Noise: with probability ``escalate_rate`` a request is escalated to an
underwriter at random, and with probability ``retry_rate`` the ``credit_check`` call fails once
and is retried — what a real agent does now and then, whatever its input.
"""

from __future__ import annotations

import random
from typing import Any

import spanguard

from .loan_agent import Application, SimClock, credit_check

#: Applicants earning at least this much take the second tool path.
VERIFY_INCOME = 100_000


@spanguard.tool(name="verify_income", description="payroll records")
def verify_income(income: int) -> str:
    return "verified" if income else "unknown"


def decide(app: Application, refer: bool = True) -> str:
    """The systematic outcome of an application: its amount against its income (without
    ``refer``, the middle range is approved: every escalation is then a random one)."""
    ratio = app.amount / app.income
    middle = "escalate" if refer else "approve"
    return "approve" if ratio <= 0.3 else middle if ratio <= 0.6 else "decline"


def tool_path(app: Application) -> str:
    return "verify" if app.income >= VERIFY_INCOME else "plain"


def _reply(app: Application, outcome: str) -> str:
    if outcome == "approve":
        return f"Approved: we can lend you {app.amount} USD; the offer is in your account."
    if outcome == "decline":
        return f"We are sorry: a loan of {app.amount} USD is too high for your income."
    return "Your application has been passed to an underwriter, who will contact you soon."


def serve(
    apps: list[Application],
    seed: int,
    escalate_rate: float = 0.0,
    retry_rate: float = 0.0,
    refer: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The assembled traces of serving ``apps`` once, and each request's actual outcome."""
    from spanguard.testing import SpanCapture, use_clock
    from spanguard_processor.traces.convert import traces_from_readable_spans

    rng, clock, outcomes = random.Random(seed), SimClock(), {}
    with use_clock(clock), SpanCapture(capture_content=True) as capture:
        for app in apps:
            escalate, retry = rng.random() < escalate_rate, rng.random() < retry_rate
            outcome = "escalate" if escalate else decide(app, refer)
            outcomes[app.request_id] = outcome
            with spanguard.request("loan", request_id=app.request_id, input=app.prompt) as req:
                with spanguard.llm_call("loan-model-1", provider="example"):
                    clock.sleep(800 * rng.uniform(0.7, 1.3))
                for _ in range(2 if retry else 1):
                    credit_check(app.income)
                if tool_path(app) == "verify":
                    verify_income(app.income)
                if outcome == "escalate":
                    spanguard.friction("income verification")
                    spanguard.escalate(reason="needs an underwriter")
                req.set_output(_reply(app, outcome))
    traces = [t.to_dict() for t in traces_from_readable_spans(capture.readable_spans())]
    return traces, outcomes
