"""An agent that calls its tools in a random order (issue 46, task day2b).

Measured on lead 252e787 (``bench/bench_regression_e2e.py --designs support``, the support
agent of ``support_agent.py``: two tools in a 50/50 order, 5 % escalations, 240 requests a
day): the unchanged agent exited 0 in only 24 of 100 trials, 75 INCONCLUSIVE on
``property: tool_sequence``. Each case checked the most common order of its day-1 requests as
a rate, so day 1's share was the larger of two coins (6, 5, 5, 6, 7, 6 of 10 in the cases
below: 0.58 on average against 0.5 the next day) — a rate biased by its own selection. When
the requests call two tools in opposite orders, a case now checks the tool set (stable) and
each tool's use, and leaves the order out; an order every request kept is checked as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spanguard_processor.regression.case import Case
from spanguard_processor.regression.gate.runfile import run_file
from spanguard_processor.regression.gate.verdict import MetricOutcome, decide
from spanguard_processor.regression.mine.build import BuildOptions, build_evalset
from spanguard_processor.regression.run.outputs import outputs_from_traces
from spanguard_processor.regression.run.run import load_cases, run_cases

from .loan_agent import applications
from .stochastic_loan import serve
from .support_agent import DROP_LOOKUP, SupportAgent, questions


def _cases(folder: Path, traces: list[dict[str, Any]]) -> tuple[Path, list[Case]]:
    log = folder / "day1.jsonl"
    log.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    build_evalset([log], BuildOptions(out=folder / "ev"))
    return log, load_cases(folder / "ev" / "cases.jsonl")


def _kinds(case: Case) -> dict[str, Any]:
    return {p.check.type: p for p in case.properties}


def test_a_random_tool_order_is_not_checked_as_the_most_common_order(tmp_path: Path) -> None:
    _, cases = _cases(tmp_path, SupportAgent(1).serve(questions(60, seed=1), "d1"))
    assert len(cases) == 6
    for case in cases:
        kinds = _kinds(case)
        assert "tool_sequence" not in kinds, case.id
        assert not any(c.type == "tool_sequence" for c in case.trace_checks)
        tools = kinds["tools_include"]  # the tool set, held by every request: asserted
        assert (tools.check.value, tools.held, tools.of, tools.stable) == (
            ["lookup_order", "search_kb"],
            10,
            10,
            True,
        )
        assert {"type": "tools_include", "value": ["lookup_order", "search_kb"]} in [
            c.to_dict() for c in case.trace_checks
        ]


def test_a_dropped_tool_still_fails_when_the_order_is_random(tmp_path: Path) -> None:
    log1, cases = _cases(tmp_path, SupportAgent(1).serve(questions(60, seed=1), "d1"))
    log2 = tmp_path / "day2.jsonl"
    traces = SupportAgent(2, DROP_LOOKUP).serve(questions(60, seed=2), "d2")
    log2.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    base = run_file(run_cases(cases, outputs_from_traces([log1])), "day1.json")
    cur = run_file(run_cases(cases, outputs_from_traces([log2])), "day2.json")
    verdict = decide(base, cur)
    failed = {m.metric for m in verdict.metrics if m.gating and m.outcome is MetricOutcome.FAIL}
    assert "tool use: lookup_order" in failed
    assert not any("tool_sequence" in m.metric for m in verdict.metrics)
    returns = next(c.id for c in cases if (c.input or "").startswith("Can I return"))
    assert verdict.changes[0].case_id == returns
    assert "lookup_order" in verdict.changes[0].diff


def test_an_order_every_request_keeps_is_still_checked(tmp_path: Path) -> None:
    # credit_check always before verify_income (retries aside), verify_income on some
    # requests only: the order is stable, the sequence is proposed as before
    traces, _ = serve(applications(120, seed=1), seed=11, escalate_rate=0.04, retry_rate=0.03)
    _, cases = _cases(tmp_path, traces)
    sequences = [_kinds(c)["tool_sequence"] for c in cases if "tool_sequence" in _kinds(c)]
    assert sequences
    assert {tuple(p.check.value) for p in sequences} == {("credit_check", "verify_income")}
