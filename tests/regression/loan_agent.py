"""A templated loan-application agent, instrumented with the spanguard SDK, for gate tests.

Requests come from three templates filled with names, customer types, incomes, amounts, terms,
application ids and dates — the traffic of a real agent: mostly the same words with different
values. The agent approves (``credit_check`` then ``compute_offer``), refuses (``credit_check``)
or escalates to an underwriter (``credit_check``, an income-verification friction point, a
hand-off), depending on the amount asked against the income. Its model "thinks" for a
simulated time that depends on the template and the outcome, times a jitter factor.

Planted changes (``change=``): ``"drop_offer_tool"`` approves without calling
``compute_offer`` (same reply text), ``"escalate_self_employed"`` hands every self-employed
applicant to an underwriter, ``"slower"`` makes the model 60 % slower (for the benchmark),
``"no_bureau"`` stops calling the credit bureau (``credit_check``) and decides from the
application alone.

``expect=False`` leaves out the ``expect`` block every request otherwise carries: traffic with
no failure signal at all, as most production traffic is.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import spanguard

TEMPLATES = (
    "Hello, I am {name}, a {ctype} customer. I earn ${income:,} a year and would like to "
    "borrow ${amount:,} for {purpose}.",
    "Loan application {app_id}: {ctype} applicant, annual income {income} USD, requested "
    "amount {amount} USD over {term} months.",
    "Can I get a ${amount:,} loan over {term} months? I'm {ctype}, my income is ${income:,}, "
    "applying on {date}.",
)
NAMES = ("Ana Silva", "Ben Okafor", "Chen Wei", "Dana Levi", "Emil Novak", "Fatima Zahra")
TYPES = ("salaried", "self-employed", "retired", "student")
PURPOSES = ("a car", "home repairs", "a wedding", "tuition")
#: Simulated model time (ms) by template and outcome, before jitter.
BASE_MS = {"approve": 900.0, "refuse": 500.0, "escalate": 1400.0}
COST_PER_TOKEN_USD = 0.000002


@dataclass(frozen=True)
class Application:
    request_id: str
    template: int
    prompt: str
    ctype: str
    income: int
    amount: int


def applications(count: int = 72, seed: int = 7) -> list[Application]:
    """``count`` requests, every template with every outcome (amount/income ratios cycle)."""
    rng = random.Random(seed)
    apps: list[Application] = []
    ratios = (0.15, 0.25, 0.45, 0.55, 0.8, 1.2)  # approve, approve, escalate ×2, refuse ×2
    for i in range(count):
        template = i % len(TEMPLATES)
        income = rng.randrange(20, 200) * 1000
        amount = max(1000, int(income * ratios[(i // len(TEMPLATES)) % len(ratios)]) // 100 * 100)
        ctype = TYPES[(i // 2) % len(TYPES)]
        prompt = TEMPLATES[template].format(
            name=rng.choice(NAMES),
            ctype=ctype,
            income=income,
            amount=amount,
            purpose=rng.choice(PURPOSES),
            app_id=f"LA-{rng.randrange(10**5, 10**6)}",
            term=rng.choice((12, 24, 36, 48, 60)),
            date=f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
        )
        apps.append(Application(f"loan-{seed}-{i:03d}", template, prompt, ctype, income, amount))
    return apps


@spanguard.tool(name="credit_check", description="the applicant's credit record")
def credit_check(income: int) -> str:
    return "good" if income >= 30000 else "thin"


@spanguard.tool(name="compute_offer", description="rate and monthly payment")
def compute_offer(amount: int) -> str:
    return f"{amount} at 6.9%"


class LoanAgent:
    """``answer(app)`` serves one application; ``sleep(ms)`` advances the simulated clock."""

    def __init__(
        self,
        sleep: Callable[[float], None],
        jitter_seed: int,
        change: str | None = None,
        expect: bool = True,
    ) -> None:
        self.sleep = sleep
        self.rng = random.Random(jitter_seed)
        self.change = change
        self.expect = expect

    def decide(self, app: Application) -> str:
        if self.change == "escalate_self_employed" and app.ctype == "self-employed":
            return "escalate"
        ratio = app.amount / app.income
        return "approve" if ratio <= 0.3 else "escalate" if ratio <= 0.6 else "refuse"

    def answer(self, app: Application) -> str:
        # The application's own id is the request id (the same in every run of the agent).
        with spanguard.request("loan_agent", request_id=app.request_id, input=app.prompt) as req:
            outcome = self.decide(app)
            with spanguard.plan(["read application", "check credit", "decide", "reply"]):
                with spanguard.llm_call("loan-model-1", provider="example") as call:
                    tokens = len(app.prompt) // 4
                    call.record_usage(tokens, 40, cost_usd=(tokens + 40) * COST_PER_TOKEN_USD)
                    slower = 1.6 if self.change == "slower" else 1.0
                    self.sleep(
                        BASE_MS[outcome]
                        * (1 + 0.2 * app.template)
                        * slower
                        * self.rng.uniform(0.7, 1.3)
                    )
                if self.change != "no_bureau":
                    credit_check(app.income)
                if outcome == "approve":
                    if self.change != "drop_offer_tool":
                        compute_offer(app.amount)
                    reply = (
                        f"Approved: we can lend you {app.amount} USD; the offer and the "
                        "monthly payment are in your account."
                    )
                elif outcome == "escalate":
                    spanguard.friction("income verification")
                    spanguard.escalate(reason="needs an underwriter")
                    reply = (
                        "Your application has been passed to an underwriter, who will "
                        "contact you within two working days."
                    )
                else:
                    reply = (
                        f"We are sorry: a loan of {app.amount} USD is too high for an "
                        f"income of {app.income} USD."
                    )
            if self.expect:
                req.expect(min_chars=20)
            req.set_output(reply)
        return reply


class SimClock:
    """A nanosecond clock that moves only when the agent 'sleeps' (plus 1 µs per reading)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000_000_000_000

    def __call__(self) -> int:
        self.now += 1000
        return self.now

    def sleep(self, ms: float) -> None:
        self.now += int(ms * 1_000_000)


def serve(
    apps: list[Application], jitter_seed: int, change: str | None = None, expect: bool = True
) -> list[dict[str, Any]]:
    """Serve ``apps`` in-process; the assembled agent traces as JSON-ready dicts."""
    from spanguard.testing import SpanCapture, use_clock
    from spanguard_processor.traces.convert import traces_from_readable_spans

    clock = SimClock()
    agent = LoanAgent(clock.sleep, jitter_seed, change, expect)
    with use_clock(clock), SpanCapture(capture_content=True) as capture:
        for app in apps:
            agent.answer(app)
    return [t.to_dict() for t in traces_from_readable_spans(capture.readable_spans())]
