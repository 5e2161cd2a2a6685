"""The rate bound's coverage, measured (bench_regression_gate.py --coverage): does the one-sided
95 % bound of a rate's contrast cover the true weighted D, and how often does the metric PASS
when D is at its tolerance (a false PASS)?

The agent of :mod:`bench._regression_sim` (24 hand-written cases) with a known change: a
candidate that refuses a share r of calls at random on every case (``pass_rate``'s true D = r,
whatever the weights), or escalates at random more often on the 16 cases not escalated by design
(``escalation_rate``'s true D = Σ w_c Δp_c / Σ w_c over the run's own case weights
:func:`~spanguard_processor.regression.gate.paired.case_weights`: (16/24)·Δp in a replay).
Replay (K repeats a case) and recorded (K/2 … 3K/2 requests a case and day, unpaired).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._regression_sim import Agent, make_cases, recorded, replay  # noqa: E402
from bench._regression_sim import _cell as cell  # noqa: E402
from spanguard_processor.regression.gate.paired import case_weights  # noqa: E402
from spanguard_processor.regression.gate.runfile import RunFile, run_file  # noqa: E402
from spanguard_processor.regression.gate.verdict import MetricOutcome, decide  # noqa: E402

#: (name, metric, baseline, candidate)
DESIGNS = (
    ("unchanged", "pass_rate", Agent(), Agent()),
    ("refuses 2 % at random (D = 2 pts)", "pass_rate", Agent(), Agent(refusal=0.02)),
    ("refuses 5 % at random (D = τ = 5 pts)", "pass_rate", Agent(), Agent(refusal=0.05)),
    ("unchanged", "escalation_rate", Agent(), Agent()),
    ("escalates 4 → 10 % (D = 4 pts)", "escalation_rate", Agent(), Agent(0.10)),
    ("escalates 4 → 19 % (D = τ = 10 pts)", "escalation_rate", Agent(), Agent(0.19)),
)


def true_d(metric: str, base_agent: Agent, cur_agent: Agent, base: RunFile, cur: RunFile) -> float:
    """The weighted D the gate estimates, from the agents' known shares and the run's weights."""
    ids = [c for c in base.repeats if c in cur.repeats]
    weights = case_weights([len(base.repeats[c]) for c in ids], [len(cur.repeats[c]) for c in ids])
    if metric == "pass_rate":
        return cur_agent.refusal - base_agent.refusal
    moved = [w for c, w in zip(ids, weights, strict=True) if not c.endswith("-refer")]
    return sum(moved) * (cur_agent.escalation - base_agent.escalation) / sum(weights)


def coverage(trials: int, modes: Sequence[str], k: int) -> None:
    started = time.perf_counter()
    cases = make_cases()
    print(f"{trials} trials per design, 24 cases, K = {k} (recorded: K/2…3K/2 a day, unpaired)")
    print(
        "| design | metric | mode | mean true D | upper ≥ D | lower ≤ D | metric PASS | "
        "metric FAIL |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for mode in modes:
        run = replay if mode == "replay" else recorded
        for name, metric, base_agent, cur_agent in DESIGNS:
            up = low = passed = failed = 0
            total_d = 0.0
            for trial in range(trials):
                rng = random.Random(f"coverage/{name}/{metric}/{mode}/{trial}")
                base = run_file(run(base_agent, cases, k, rng), "base")
                cur = run_file(run(cur_agent, cases, k, rng), "cur")
                m = next(v for v in decide(base, cur).metrics if v.metric == metric)
                d = true_d(metric, base_agent, cur_agent, base, cur)
                assert m.bound is not None
                total_d += d
                up += m.bound.upper >= d - 1e-12
                low += m.bound.lower <= d + 1e-12
                passed += m.outcome is MetricOutcome.PASS
                failed += m.outcome is MetricOutcome.FAIL
            print(
                f"| {name} | {metric} | {mode} | {100 * total_d / trials:.1f} pts | "
                f"{cell(up, trials)} | {cell(low, trials)} | {cell(passed, trials)} | "
                f"{cell(failed, trials)} |",
                flush=True,
            )
    print(f"\n{time.perf_counter() - started:.1f} s")
