"""Real run results for gate tests: synthetic cases scored by ``run_cases`` itself."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spanguard_processor.regression.case import Case
from spanguard_processor.regression.run.outputs import Outputs
from spanguard_processor.regression.run.run import RunResult, run_cases

#: A case fails exactly the check types listed for it; None means its output is missing.
Spec = Mapping[str, tuple[str, ...] | None]


def _case(case_id: str, failing: tuple[str, ...]) -> dict[str, Any]:
    checks: list[dict[str, Any]] = [{"type": "not_fallback"}, {"type": "min_chars", "value": 2}]
    if "json" in failing:
        checks.append({"type": "json"})
    trace_checks: list[dict[str, Any]] = [{"type": "tools_include", "value": ["lookup"]}]
    if "max_latency_ms" in failing:
        trace_checks.append({"type": "max_latency_ms", "value": 0})
    return {
        "id": case_id,
        "input": f"question {case_id}",
        "checks": checks,
        "trace_checks": trace_checks,
    }


def _record(failing: tuple[str, ...], latency: float, cost: float) -> dict[str, Any]:
    output = "ok, done"
    if "min_chars" in failing:
        output = "x"
    if "not_fallback" in failing:
        output = "I'm sorry, but I cannot help with that."
    tools = [] if "tools_include" in failing else [{"name": "lookup"}]
    return {
        "output": output,
        "latency_ms": latency,
        "cost_usd": cost,
        "trace": {"tool_calls": tools},
    }


def make_run(
    spec: Spec,
    latencies: Mapping[str, float] | None = None,
    costs: Mapping[str, float] | None = None,
) -> RunResult:
    cases = [Case.from_dict(_case(case_id, failing or ())) for case_id, failing in spec.items()]
    outputs = Outputs()
    for case_id, failing in spec.items():
        if failing is not None:
            latency = (latencies or {}).get(case_id, 100.0)
            cost = (costs or {}).get(case_id, 0.001)
            outputs.add(case_id, _record(failing, latency, cost))
    result = run_cases(cases, outputs)
    for case_id, failing in spec.items():
        expected = "missing" if failing is None else "fail" if failing else "pass"
        assert result.case_results[case_id] == expected, (case_id, failing)
    return result


def write_run(
    path: Path,
    spec: Spec,
    latencies: Mapping[str, float] | None = None,
    costs: Mapping[str, float] | None = None,
    trace2eval: bool = False,
) -> Path:
    """The run as ``cases run -o`` writes it (or as trace2eval 0.5.1 would: version+metrics)."""
    result = make_run(spec, latencies, costs)
    if trace2eval:
        payload: dict[str, Any] = {"version": "0.5.1", "metrics": result.metrics.to_dict()}
        path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    else:
        path.write_text(result.to_json(), encoding="utf-8")
    return path
