"""A stochastic loan agent and its cases, for bench_regression_gate.py (in-process, seeded).

24 cases in contract C1's shape: 8 application templates × 3 outcome paths (approve: credit
bureau + income check; decline: credit bureau; refer: credit bureau + fraud check, escalated to
an underwriter by design). Per call the agent escalates at random (rate p), retries a tool call
(3 %), picks one of three paraphrases, and its latency is lognormal (σ = 0.25) times the
machine's load factor.
"""

from __future__ import annotations

import math
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spanguard_processor.common.stats import clopper_pearson_upper  # noqa: E402
from spanguard_processor.regression.case import Case, Evidence  # noqa: E402
from spanguard_processor.regression.gate.runfile import RunFile, run_file  # noqa: E402
from spanguard_processor.regression.gate.verdict import (  # noqa: E402
    MetricOutcome,
    RegressionOptions,
    decide,
)
from spanguard_processor.regression.run.outputs import Outputs  # noqa: E402
from spanguard_processor.regression.run.run import RunResult, run_cases, score_repeats  # noqa: E402
from spanguard_processor.traces.model import ProcessTrace, ToolCall  # noqa: E402

TEMPLATES = 8
PATHS = {
    "approve": (("credit_bureau", "income_check"), "approved", 900.0),
    "decline": (("credit_bureau",), "declined", 600.0),
    "refer": (("credit_bureau", "fraud_check"), "referred to an underwriter", 1200.0),
}
PHRASES = (
    "Your application is {word}.",
    "Thanks for applying: the loan is {word}, details follow by email.",
    "Decision: {word}. Reach out with any question.",
)
REFUSAL = "I'm sorry, but I cannot help with that."
DEFAULT_REPEATS = 16


@dataclass(frozen=True)
class Agent:
    """One version of the agent: its random behaviour and an optional planted change."""

    escalation: float = 0.04
    retry: float = 0.03
    load: float = 1.0
    change: str | None = None
    refusal: float = 0.0  # a share of calls answered with a refusal, at random (every case)


def make_cases() -> list[Case]:
    cases = []
    for t in range(TEMPLATES):
        for path, (tools, word, _) in PATHS.items():
            refer = path == "refer"
            props = [
                {
                    "check": {"type": "tools_include", "value": list(tools)},
                    "held": 24,
                    "of": 24,
                    "stable": True,
                },
                {
                    "check": {"type": "escalated", "value": refer},
                    "held": 23,
                    "of": 24,
                    "stable": refer,
                },
            ]
            cases.append(
                Case.from_dict(
                    {
                        "id": f"case-t{t}-{path}",
                        "input": f"loan application template {t}, amount band {path}",
                        "checks": [{"type": "not_fallback"}, {"type": "contains", "value": [word]}],
                        "trace_checks": [{"type": "tools_include", "value": list(tools)}],
                        "properties": props,
                    }
                )
            )
    return cases


def _behaviour(agent: Agent, case: Case) -> tuple[list[str], str, float, bool]:
    """Tools, answer word, base latency and designed escalation, after the planted change."""
    t, path = case.id.removeprefix("case-t").split("-", 1)
    tools, word, latency = PATHS[path]
    tools_l = list(tools)
    change = agent.change
    if change == "drop_tool" and (t, path) == ("0", "approve"):
        tools_l.remove("income_check")
    if change == "declined_slot_range" and (t, path) == ("5", "approve"):
        tools_l, word = list(PATHS["decline"][0]), PATHS["decline"][1]
    if change == "plus_one_tool":
        tools_l.append("audit_log")
    if change == "latency_1.5x":
        latency *= 1.5
    if change == "latency_1.5x_one_path" and path == "approve":
        latency *= 1.5
    return tools_l, word, latency, path == "refer"


def call(agent: Agent, case: Case, rng: random.Random) -> Evidence:
    """One call of the agent on one case."""
    tools, word, latency, escalated = _behaviour(agent, case)
    if rng.random() < agent.retry and tools:
        i = rng.randrange(len(tools))
        tools.insert(i, tools[i])
    if not escalated and rng.random() < agent.escalation:
        escalated = True
    output = rng.choice(PHRASES).format(word=word)
    if agent.change == "refusal_one_question" and case.id == "case-t3-decline":
        output = REFUSAL
    if agent.refusal > 0 and rng.random() < agent.refusal:  # drawn only then: same streams
        output = REFUSAL
    process = ProcessTrace(
        tool_calls=tuple(ToolCall(name) for name in tools),
        plan_steps=tuple(f"step {i}" for i in range(len(tools) + 1)),
        escalated=escalated,
    )
    ms = latency * agent.load * math.exp(rng.gauss(0.0, 0.25))
    cost = 0.0004 * len(tools) * math.exp(rng.gauss(0.0, 0.05))
    return Evidence(output, process, ms, cost)


def replay(agent: Agent, cases: Sequence[Case], k: int, rng: random.Random) -> RunResult:
    evidence = {c.id: [call(agent, c, rng) for _ in range(k)] for c in cases}
    return score_repeats(cases, evidence)


def recorded(agent: Agent, cases: Sequence[Case], k: int, rng: random.Random) -> RunResult:
    """Production traffic: each case's question asked a varying number of times (k/2 … 3k/2),
    written as outputs lines and matched to the cases by question."""
    outputs = Outputs()
    for case in cases:
        for n in range(rng.randint(max(2, k // 2), k + k // 2)):
            e = call(agent, case, rng)
            assert e.process is not None
            line = {
                "input": case.input,
                "output": e.output,
                "latency_ms": e.latency_ms,
                "cost_usd": e.cost_usd,
                "trace": {
                    "tool_calls": [{"name": t.name} for t in e.process.tool_calls],
                    "plan_steps": list(e.process.plan_steps),
                    "escalated": e.process.escalated,
                },
            }
            outputs.add(f"{case.id}-{rng.getrandbits(48):012x}-{n}", line)
    return run_cases(cases, outputs)


#: (name, baseline agent, candidate agent): the null designs first, then the real changes.
NULLS = (
    ("unchanged, 2 % escalations", Agent(0.02), Agent(0.02)),
    ("unchanged, 4 % escalations, 3 % retries", Agent(0.04), Agent(0.04)),
    ("unchanged, 10 % escalations", Agent(0.10), Agent(0.10)),
    ("unchanged, baseline under 1.5× load", Agent(0.04, load=1.5), Agent(0.04)),
    ("unchanged, candidate under 1.5× load", Agent(0.04), Agent(0.04, load=1.5)),
)
CHANGES = (
    ("dropped tool call on one path (1 case)", Agent(), Agent(change="drop_tool")),
    ("refusal on one question (1 case)", Agent(), Agent(change="refusal_one_question")),
    ("declined on one slot range (1 case)", Agent(), Agent(change="declined_slot_range")),
    ("+1 tool call", Agent(), Agent(change="plus_one_tool")),
    ("1.5× latency, one path (8 cases)", Agent(), Agent(change="latency_1.5x_one_path")),
    ("1.5× latency, every case", Agent(), Agent(change="latency_1.5x")),
)


def _file(result: RunResult, folder: Path, name: str) -> RunFile:
    """In process: the run file ``check`` would read (tests/regression/test_repeats.py checks
    that run_file equals load_run of the written file)."""
    return run_file(result, name)


def _tally(designs, mode: str, trials: int, k: int, folder: Path, same_machine: bool) -> list:
    cases = make_cases()
    run = replay if mode == "replay" else recorded
    rows = []
    for name, base_agent, cur_agent in designs:
        outcomes: Counter[str] = Counter()
        named = 0
        for trial in range(trials):
            rng = random.Random(f"{name}/{mode}/{trial}")
            base = _file(run(base_agent, cases, k, rng), folder, "base")
            cur = _file(run(cur_agent, cases, k, rng), folder, "cur")
            v = decide(base, cur, RegressionOptions(same_machine=same_machine))
            states = {m.outcome for m in v.metrics if m.gating}
            verdict = (
                "FAIL" if MetricOutcome.FAIL in states else "PASS" if v.passed else "INCONCLUSIVE"
            )
            outcomes[verdict] += 1
            named += verdict == "FAIL" and any(c.case_id in _planted(cur_agent) for c in v.changes)
        rows.append((name, outcomes, named))
    return rows


def _planted(agent: Agent) -> tuple[str, ...]:
    return {
        "drop_tool": ("case-t0-approve",),
        "refusal_one_question": ("case-t3-decline",),
        "declined_slot_range": ("case-t5-approve",),
    }.get(agent.change or "", ())


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Two-sided Wilson score interval (95 % at the default z)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def cp_interval(k: int, n: int) -> tuple[float, float]:
    """Two-sided 95 % Clopper–Pearson interval."""
    from scipy.stats import beta

    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else clopper_pearson_upper(k, n, 0.025)
    return lo, hi


def _cell(k: int, n: int) -> str:
    lo, hi = cp_interval(k, n)
    return f"{k}/{n} [{lo:.2f}, {hi:.2f}]"


def calibrate(trials: int, modes: Sequence[str], repeats: int | None) -> None:
    k = repeats or DEFAULT_REPEATS
    started = time.perf_counter()
    print(f"{trials} trials per design, 24 cases, K = {k} repeats per case (recorded: K/2…3K/2)")
    print("| design | mode | FAIL | PASS (exit 0) | INCONCLUSIVE | FAIL names the case |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            for same in (False, True):
                if mode == "recorded":  # the acceptance designs: nulls, and the 1-case changes
                    designs = (NULLS[1], NULLS[3], CHANGES[0], CHANGES[2]) if not same else ()
                else:
                    designs = (*NULLS, *CHANGES) if not same else (NULLS[3], CHANGES[-1])
                for name, out, named in _tally(designs, mode, trials, k, Path(tmp), same):
                    label = name + (" (same_machine)" if same else "")
                    planted = (
                        "–" if not any(n == name for n, *_ in CHANGES[:3]) else _cell(named, trials)
                    )
                    print(
                        f"| {label} | {mode} | {_cell(out['FAIL'], trials)} | "
                        f"{_cell(out['PASS'], trials)} | {_cell(out['INCONCLUSIVE'], trials)} | "
                        f"{planted} |",
                        flush=True,
                    )
    print(f"\n{time.perf_counter() - started:.1f} s")
