"""The regression gate's acceptance measured end to end (issue 46): traffic → cases → check.

Unlike bench_regression_gate.py (hand-written cases), every case here is built by ``cases
build`` (:func:`build_evalset`, in-process) from recorded production traffic of a stochastic
templated loan agent (``tests/regression/stochastic_loan.py``: the applications of
``tests/regression/loan_agent.py``, approve / escalate / decline by amount over income, two tool
paths), which escalates 4 % of requests at random, retries 3 % of its credit checks, words each
answer one of three ways and jitters its latency (±30 %, simulated clock). Per trial:

- **recorded**: day 1 is the traffic the cases come from; day 2 is the same applications served
  again by the unchanged agent (new randomness). Both are scored as ``cases run --traces`` does
  (:func:`run_cases` over :func:`outputs_from_traces`: a case's repeats are its cluster's
  requests, paired across the two days by their input) and gated as ``check`` does
  (:func:`decide`, default options). The baseline is in-sample: the cases were selected on it.
- **recorded, baseline from another day** (a diagnostic, not the acceptance's design): the
  same, with the baseline scored on a third day of the unchanged agent's traffic instead of the
  traffic the cases were built from (on which every stable property holds by construction).
- **fresh day 2** (task day2): day 2 is *new* applications (other incomes, amounts, names,
  ids) of the same templates — production traffic does not repeat its questions. Day 1 builds
  the cases and is the baseline; day 2 is scored as ``cases run --traces`` does, where its
  requests reach the cases by template and input range (``match``). Candidates on day 2: the
  unchanged agent and the two planted changes below.
- **support agent, fresh day 2**: a shape the gate was not built around
  (``tests/regression/support_agent.py``: six free-form questions, an order number in each,
  its two tools in random order, three wordings, 5 % escalations); day 1 builds the cases and
  is the baseline, day 2 asks the same questions about other orders; candidates: the
  unchanged agent, and one that stops looking up the order on the returns question.
- **replay**: the agent as an app (``app(prompt)``: it reads income and amount from the
  question) replayed on the cases at the default repeats (``cases run --app``:
  :func:`replay_cases` + :func:`score_repeats`), baseline and candidate, then ``check``.
  Candidates: the unchanged agent, one that stops calling ``verify_income`` on the approve path,
  and one that declines what the baseline approved on a slot range (amount over income in
  (0.2, 0.3], the upper half of the approve range).

A trial's verdict is FAIL (a gating metric FAILs), PASS (exit 0) or INCONCLUSIVE (exit 1, no
FAIL); after the table, how many FAILs no failing metric's own (aggregate) test decided — only
cases' own tests, after Holm. Rates come with Clopper–Pearson 95 % intervals. For a real
change, "named" counts the FAILs whose last line ("moved most: …") shows a case the change
touched and the change itself (``verify_income`` missing; ``answer_class=approve`` no longer
held).

    nice -n 10 .venv/bin/python bench/bench_regression_e2e.py --trials 100
    nice -n 10 .venv/bin/python bench/bench_regression_e2e.py --quick
    nice -n 10 .venv/bin/python bench/bench_regression_e2e.py --trials 100 --designs fresh,support
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import spanguard  # noqa: E402
from bench._regression_sim import cp_interval  # noqa: E402
from spanguard.testing import SpanCapture, use_clock  # noqa: E402
from spanguard_processor.cli._cases_plan import DEFAULT_REPEATS  # noqa: E402
from spanguard_processor.regression.case import Case  # noqa: E402
from spanguard_processor.regression.gate.gate import check_comparable  # noqa: E402
from spanguard_processor.regression.gate.runfile import run_file  # noqa: E402
from spanguard_processor.regression.gate.verdict import (  # noqa: E402
    MetricOutcome,
    RegressionOptions,
    RegressionVerdict,
    decide,
)
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset  # noqa: E402
from spanguard_processor.regression.outcome import classify_answer  # noqa: E402
from spanguard_processor.regression.report.verdict_report import verdict_summary  # noqa: E402
from spanguard_processor.regression.run.outputs import outputs_from_traces  # noqa: E402
from spanguard_processor.regression.run.replay import replay_cases  # noqa: E402
from spanguard_processor.regression.run.run import (  # noqa: E402
    RunResult,
    load_cases,
    run_cases,
    score_repeats,
)
from spanguard_processor.traces.convert import traces_from_readable_spans  # noqa: E402
from tests.regression.loan_agent import Application, SimClock, applications, credit_check  # noqa: E402
from tests.regression.stochastic_loan import decide as outcome_of  # noqa: E402
from tests.regression.stochastic_loan import tool_path, verify_income  # noqa: E402
from tests.regression.support_agent import DROP_LOOKUP, SupportAgent, questions  # noqa: E402

#: Three wordings per outcome (each read as its outcome by the answer classifier).
WORDINGS = {
    "approve": (
        "Approved: we can lend you {amount} USD; the offer is in your account.",
        "Good news: a loan of {amount} USD is approved, and the offer is in your account.",
        "We can lend you {amount} USD. The offer and the monthly payment are in your account.",
    ),
    "decline": (
        "We are sorry: a loan of {amount} USD is too high for your income.",
        "Unfortunately we cannot lend {amount} USD on your income.",
        "Sorry, {amount} USD is more than we can lend on your income.",
    ),
    "escalate": (
        "Your application has been passed to an underwriter, who will contact you soon.",
        "An underwriter will review your application and contact you within two days.",
        "We have referred your application to an underwriter; expect a call soon.",
    ),
}
_INCOME = re.compile(r"(?:earn \$|annual income |income is \$)([\d,]+)")
_AMOUNT = re.compile(r"(?:borrow \$|requested amount |get a \$)([\d,]+)")
#: The planted changes: (tool dropped on the approve path, approvals declined in a ratio range).
DROP_TOOL, DECLINE_RANGE = "drop_verify_on_approve", "decline_ratio_0.2_0.3"


def read_application(prompt: str) -> Application:
    """What the agent reads from a question: the income and the amount asked."""
    income, amount = (int(rx.search(prompt).group(1).replace(",", "")) for rx in (_INCOME, _AMOUNT))  # type: ignore[union-attr]
    return Application("", 0, prompt, "", income, amount)


def planned(app: Application, change: str | None) -> str:
    outcome = outcome_of(app)
    if change == DECLINE_RANGE and outcome == "approve" and app.amount / app.income > 0.2:
        return "decline"
    return outcome


@dataclass
class Agent:
    """The stochastic loan agent (one version), on a simulated clock."""

    seed: int
    change: str | None = None
    escalate_rate: float = 0.04
    retry_rate: float = 0.03
    clock: SimClock = field(default_factory=SimClock)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def respond(self, prompt: str) -> str:
        """One answer, its spans emitted through the SDK inside the caller's request."""
        app, rng = read_application(prompt), self.rng
        escalate, retry = rng.random() < self.escalate_rate, rng.random() < self.retry_rate
        outcome = "escalate" if escalate else planned(app, self.change)
        with spanguard.llm_call("loan-model-1", provider="example"):
            self.clock.sleep(800 * rng.uniform(0.7, 1.3))
        for _ in range(2 if retry else 1):
            credit_check(app.income)
        dropped = self.change == DROP_TOOL and outcome == "approve"
        if tool_path(app) == "verify" and not dropped:
            verify_income(app.income)
        if outcome == "escalate":
            spanguard.friction("income verification")
            spanguard.escalate(reason="needs an underwriter")
        return rng.choice(WORDINGS[outcome]).format(amount=app.amount)

    def serve(self, apps: Sequence[Application]) -> list[dict[str, Any]]:
        """Production traffic: each application served once, as assembled agent traces."""
        with use_clock(self.clock), SpanCapture(capture_content=True) as capture:
            for app in apps:
                with spanguard.request("loan", request_id=app.request_id, input=app.prompt) as r:
                    r.set_output(self.respond(app.prompt))
        return [t.to_dict() for t in traces_from_readable_spans(capture.readable_spans())]

    def replay(self, cases: Sequence[Case], repeats: int) -> RunResult:
        """``cases run --app`` on this agent: every case's input ``repeats`` times."""
        with use_clock(self.clock):
            replay = replay_cases(cases, self.respond, repeats=repeats)
        assert not replay.failures, replay.failures[:1]
        return score_repeats(cases, replay.evidence)


def _log(folder: Path, name: str, traces: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Outcome:
    verdict: str  # FAIL, PASS or INCONCLUSIVE
    blocking: tuple[str, ...]  # the gating metrics that were not PASS, with their outcome
    summary: str
    named: bool  # the FAIL line names a touched case and the change
    by_cases: bool = False  # a FAIL decided only by cases' own tests (no metric's own test)


def gate(base: RunResult, cur: RunResult, touched: set[str], words: Sequence[str]) -> Outcome:
    """``check``'s decision (default options) on two runs, classified."""
    b, c = run_file(base, "base.json"), run_file(cur, "cur.json")
    check_comparable(b, c, False)
    v: RegressionVerdict = decide(b, c, RegressionOptions())
    fails = any(m.outcome is MetricOutcome.FAIL for m in v.metrics if m.gating)
    verdict = "FAIL" if fails else "PASS" if v.passed else "INCONCLUSIVE"
    summary = verdict_summary(v)
    moved = summary.partition("moved most: ")[2]
    named = fails and moved.split(" ", 1)[0] in touched and any(w in moved for w in words)
    blocking = tuple(f"{m.metric} {m.outcome}" for m in v.blocking())
    failed = [m for m in v.metrics if m.gating and m.outcome is MetricOutcome.FAIL]
    by_cases = fails and not any(m.p_value is not None and m.p_value < 0.05 for m in failed)
    return Outcome(verdict, blocking, summary, named, by_cases)


def _touched(cases: Sequence[Case], change: str) -> set[str]:
    """The cases whose question the change answers differently."""
    out = set()
    for case in cases:
        app = read_application(case.input or "")
        approve_verify = outcome_of(app) == "approve" and tool_path(app) == "verify"
        if (change == DROP_TOOL and approve_verify) or planned(app, change) != outcome_of(app):
            out.add(case.id)
    return out


#: What the FAIL line's case must show for the change to count as named.
CHANGE_WORDS = {DROP_TOOL: ("verify_income",), DECLINE_RANGE: ("answer_class=approve",)}


#: The designs a trial can run (``--designs``, comma-separated prefixes of these).
DESIGNS = ("recorded", "fresh", "support", "replay")


def _fresh_touched(cases: Sequence[Case], change: str) -> set[str]:
    """The cases whose path a change answers differently on new traffic: the approve cases
    (for the drop, those whose day-1 requests called ``verify_income``, always or some)."""
    out = set()
    for case in cases:
        if classify_answer(case.reference_output) != "approve":
            continue
        checks = json.dumps([p.check.to_dict() for p in case.properties])
        if change != DROP_TOOL or "verify_income" in checks:
            out.add(case.id)
    return out


def _recorded(number: int, apps: list[Application], day1: Path, cases: list[Case], folder: Path):
    day2 = _log(folder, "day2", Agent(20_000 + number).serve(apps))
    day0 = _log(folder, "day0", Agent(60_000 + number).serve(apps))
    day0_run, day1_run, day2_run = (
        run_cases(cases, outputs_from_traces([log])) for log in (day0, day1, day2)
    )
    return {
        "recorded: unchanged": gate(day1_run, day2_run, set(), ()),
        "recorded, baseline from another day (diagnostic): unchanged": gate(
            day0_run, day2_run, set(), ()
        ),
    }


def _fresh(number: int, requests: int, day1: Path, cases: list[Case], folder: Path):
    """Day 2: new applications (another seed: new values, names and ids)."""
    fresh = applications(requests, seed=100_000 + number)
    base = run_cases(cases, outputs_from_traces([day1]))
    out = {}
    for change in (None, DROP_TOOL, DECLINE_RANGE):
        log = _log(folder, f"fresh-{change}", Agent(20_000 + number, change).serve(fresh))
        cur = run_cases(cases, outputs_from_traces([log]))
        if change is None:
            out["fresh day 2: unchanged"] = gate(base, cur, set(), ())
        else:
            touched = _fresh_touched(cases, change)
            out[f"fresh day 2: {change}"] = gate(base, cur, touched, CHANGE_WORDS[change])
    return out


def _support(number: int, requests: int, folder: Path) -> dict[str, Outcome]:
    day1 = _log(
        folder, "s1", SupportAgent(10_000 + number).serve(questions(requests, number), "d1")
    )
    build_evalset([day1], BuildOptions(out=folder / "sev"))
    cases = load_cases(folder / "sev" / "cases.jsonl")
    base = run_cases(cases, outputs_from_traces([day1]))
    day2 = questions(requests, 100_000 + number)
    returns = {c.id for c in cases if (c.input or "").startswith("Can I return")}
    out = {}
    for change in (None, DROP_LOOKUP):
        agent = SupportAgent(20_000 + number, change)
        cur = run_cases(cases, outputs_from_traces([_log(folder, "s2", agent.serve(day2, "d2"))]))
        name = "unchanged" if change is None else change
        out[f"support agent, fresh day 2: {name}"] = gate(
            base, cur, returns if change else set(), ("lookup_order",)
        )
    return out


def trial(
    number: int,
    requests: int,
    repeats: int,
    folder: Path,
    designs: Sequence[str] = DESIGNS,
    support_requests: int | None = None,
) -> dict[str, Outcome]:
    results: dict[str, Outcome] = {}
    if "support" in designs:
        results.update(_support(number, support_requests or requests, folder))
    if not set(designs) & {"recorded", "fresh", "replay"}:
        return results
    apps = applications(requests, seed=number)
    day1 = _log(folder, "day1", Agent(10_000 + number).serve(apps))
    build_evalset([day1], BuildOptions(out=folder / "ev"))
    cases = load_cases(folder / "ev" / "cases.jsonl")
    results["cases"] = Outcome(str(len(cases)), (), "", False)
    if "recorded" in designs:
        results.update(_recorded(number, apps, day1, cases, folder))
    if "fresh" in designs:
        results.update(_fresh(number, requests, day1, cases, folder))
    if "replay" not in designs:
        return results
    base = Agent(30_000 + number).replay(cases, repeats)
    cur = Agent(40_000 + number).replay(cases, repeats)
    results["replay: unchanged"] = gate(base, cur, set(), ())
    for change in (DROP_TOOL, DECLINE_RANGE):
        candidate = Agent(50_000 + number, change).replay(cases, repeats)
        results[f"replay: {change}"] = gate(
            base, candidate, _touched(cases, change), CHANGE_WORDS[change]
        )
    return results


def _cell(k: int, n: int) -> str:
    lo, hi = cp_interval(k, n)
    return f"{k}/{n} = {k / n:.2f} [{lo:.2f}, {hi:.2f}]"


def report(rows: dict[str, list[Outcome]], trials: int) -> None:
    print("| design | FAIL | PASS (exit 0) | INCONCLUSIVE | FAIL line names case and change |")
    print("| --- | --- | --- | --- | --- |")
    for name, outs in rows.items():
        counts = Counter(o.verdict for o in outs)
        named = sum(o.named for o in outs) if "unchanged" not in name else None
        print(
            f"| {name} | {_cell(counts['FAIL'], trials)} | {_cell(counts['PASS'], trials)} | "
            f"{_cell(counts['INCONCLUSIVE'], trials)} | "
            f"{_cell(named, trials) if named is not None else '–'} |"
        )
    print("\nblocking gating metrics (trials in which each was not PASS):")
    for name, outs in rows.items():
        blocked = Counter(b for o in outs for b in o.blocking)
        print(f"  {name}: {dict(blocked.most_common(6))}")
    print("\nFAILs decided only by cases' own tests (no failing metric's aggregate test rejected):")
    for name, outs in rows.items():
        fails = sum(o.verdict == "FAIL" for o in outs)
        if fails:
            print(f"  {name}: {sum(o.by_cases for o in outs)} of {fails}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="10 trials")
    parser.add_argument("--requests", type=int, default=240, help="applications per day")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="replay K")
    parser.add_argument("--verbose", action="store_true", help="print each non-PASS line")
    parser.add_argument(
        "--support-requests", type=int, default=None, help="support agent requests per day"
    )
    parser.add_argument(
        "--designs", default=",".join(DESIGNS), help=f"comma-separated, of {', '.join(DESIGNS)}"
    )
    args = parser.parse_args(argv)
    designs = [d.strip() for d in args.designs.split(",") if d.strip()]
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown:
        parser.error(f"--designs: unknown {unknown[0]!r}; choose from {', '.join(DESIGNS)}")
    trials = 10 if args.quick else args.trials
    started = time.perf_counter()
    rows: dict[str, list[Outcome]] = {}
    cases: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(trials):
            folder = Path(tmp) / f"t{number}"
            folder.mkdir()
            result = trial(
                number, args.requests, args.repeats, folder, designs, args.support_requests
            )
            if "cases" in result:
                cases.append(int(result.pop("cases").verdict))
            for name, outcome in result.items():
                rows.setdefault(name, []).append(outcome)
                expected = "PASS" if "unchanged" in name else "FAIL"
                if args.verbose and outcome.verdict != expected:
                    print(f"trial {number} {name}: {outcome.summary}", flush=True)
    spread = (
        f"loan cases per trial {min(cases)}–{max(cases)} (mean {sum(cases) / len(cases):.1f}), "
        if cases
        else ""
    )
    print(
        f"{trials} trials, designs {','.join(designs)}, {args.requests} requests per day "
        f"(support agent: {args.support_requests or args.requests}), "
        f"{spread}replay K = {args.repeats}, {time.perf_counter() - started:.0f} s\n"
    )
    report(rows, trials)


if __name__ == "__main__":
    main()
