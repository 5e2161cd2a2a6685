"""``cases run``: a case set plus candidate outputs (or agent traces) → metrics JSON.

Metrics and rounding are trace2eval 0.5.1's (docs/regression.md). Additions: trace checks (process,
latency, cost) are evaluated when a record carries the evidence; outputs lines that cannot be
read are counted (``skipped_output_lines``) instead of dropped silently; every case's outcome is
written under ``case_results`` so ``check`` can list pass→fail cases and missing ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from spanguard.exceptions import CaseFormatError

from ...common.jsonio import iter_jsonl
from ..case import Case
from ..checks import CheckKind, percentile, run_text_checks, run_trace_check
from ..vocabulary import FailureReason, Outcome
from .outputs import MATCH_KINDS, OutputRecord, Outputs, case_evidence
from .results import CaseOutcome, Failure, Metrics

__all__ = [
    "METRICS_VERSION",
    "PRODUCER",
    "RunResult",
    "load_cases",
    "run_cases",
    "score_case",
]

METRICS_VERSION = "0.5.1"
#: Written into every run result so that ``check`` can tell a run from any other JSON.
PRODUCER = "spanguard cases run"


def load_cases(path: Path) -> list[Case]:
    """Every case, validated; a bad line or a repeated id is an error naming file and line."""
    cases: list[Case] = []
    seen: dict[str, int] = {}
    name = path.as_posix()
    for number, value in iter_jsonl(path, CaseFormatError):
        if not isinstance(value, dict):
            raise CaseFormatError("is not a JSON object.", file=name, line=number)
        case_id = value.get("id")
        if not isinstance(case_id, str) or not case_id:
            raise CaseFormatError("must be a non-empty string.", file=name, line=number, field="id")
        if case_id in seen:
            raise CaseFormatError(
                f"repeats case id {case_id!r} (first on line {seen[case_id]}).",
                file=name,
                line=number,
                field="id",
            )
        seen[case_id] = number
        for key in ("checks", "trace_checks"):
            checks = value.get(key, [])
            if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
                raise CaseFormatError(
                    "must be a list of check objects.", file=name, line=number, field=key
                )
        cases.append(Case.from_dict(value))
    return cases


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class RunResult:
    """A scored run: trace2eval's metrics plus every case's outcome (``case_details``)."""

    metrics: Metrics
    outcomes: tuple[CaseOutcome, ...]

    @property
    def case_results(self) -> dict[str, str]:
        return {o.case_id: o.outcome for o in self.outcomes}

    @property
    def matching(self) -> dict[str, int]:
        counts: dict[str, int] = {kind: 0 for kind in MATCH_KINDS}
        for o in self.outcomes:
            if o.matched_by is not None:
                counts[o.matched_by] += 1
        counts["unmatched"] = sum(1 for o in self.outcomes if o.matched_by is None)
        return counts

    def to_dict(self) -> dict[str, object]:
        return {
            "version": METRICS_VERSION,
            "producer": PRODUCER,
            "metrics": self.metrics.to_dict(),
            "case_results": self.case_results,
            "matching": self.matching,
            "case_details": {o.case_id: o.to_dict() for o in self.outcomes},
        }

    def payload(self) -> dict[str, object]:
        return self.to_dict()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def score_case(
    case: Case, record: OutputRecord | None, matched_by: str | None = None
) -> CaseOutcome:
    """Run one case's text and trace checks against its record (None: the output is missing)."""
    if record is None:
        return CaseOutcome(case.id, Outcome.MISSING, evidence=case_evidence(case.input, None))
    failed: list[str] = []
    details: list[str] = []
    unverified: list[str] = []
    run = record.evidence
    results = run_text_checks(case.checks, run.output)
    results += [run_trace_check(check, run) for check in case.trace_checks]
    for result in results:
        if result.passed is None:
            unverified.append(result.type)
        elif not result.passed:
            failed.append(result.type)
            details.append(f"{result.type}: {result.detail}" if result.detail else result.type)
    return CaseOutcome(
        case.id,
        Outcome.FAIL if failed else Outcome.PASS,
        matched_by,
        tuple(failed),
        tuple(details),
        _number(run.latency_ms),
        _number(run.cost_usd),
        tuple(unverified),
        case_evidence(case.input, record),
    )


def run_cases(cases: Sequence[Case], outputs: Outputs) -> RunResult:
    total = len(cases)
    passed = failed = missing = fallback = json_cases = json_passed = 0
    trace_cases = trace_passed = unverified = 0
    latencies: list[float] = []
    costs: list[float] = []
    chars: list[int] = []
    failures: list[Failure] = []
    outcomes: list[CaseOutcome] = []
    for case in cases:
        record, matched_by = outputs.find(case)
        outcome = score_case(case, record, matched_by)
        outcomes.append(outcome)
        if record is None:
            failed += 1
            missing += 1
            failures.append(Failure(outcome.case_id, FailureReason.MISSING_OUTPUT))
            continue
        bad = list(outcome.failed_checks)
        if case.trace_checks:
            trace_cases += 1
            unverified += len(outcome.unverified)
            trace_types = {c.type for c in case.trace_checks}
            trace_passed += not any(b in trace_types for b in bad)
        run = record.evidence
        for value, values in ((run.latency_ms, latencies), (run.cost_usd, costs)):
            if value is not None:
                values.append(value)
        chars.append(len(run.output.strip()))
        if bad:
            failed += 1
            failures.append(Failure(outcome.case_id, FailureReason.CHECK_FAILED, tuple(bad)))
        else:
            passed += 1
        fallback += bool(bad) and CheckKind.NOT_FALLBACK in bad
        if any(c.get("type") == CheckKind.JSON for c in case.checks):
            json_cases += 1
            json_passed += CheckKind.JSON not in bad
    denominator = total or 1
    metrics = Metrics(
        total=total,
        passed=passed,
        failed=failed,
        missing=missing,
        pass_rate=round(passed / denominator, 4),
        fallback_count=fallback,
        fallback_rate=round(fallback / denominator, 4),
        json_cases=json_cases,
        json_passed=json_passed,
        format_compliance_rate=round(json_passed / json_cases, 4) if json_cases else None,
        avg_latency_ms=_round(sum(latencies) / len(latencies), 2) if latencies else None,
        p95_latency_ms=_round(percentile(latencies, 0.95), 2) if latencies else None,
        avg_cost_usd=_round(sum(costs) / len(costs), 8) if costs else None,
        total_cost_usd=_round(sum(costs), 6) if costs else None,
        avg_output_chars=_round(sum(chars) / len(chars), 1) if chars else None,
        trace_check_cases=trace_cases or None,
        trace_check_passed=trace_passed if trace_cases else None,
        trace_compliance_rate=round(trace_passed / trace_cases, 4) if trace_cases else None,
        trace_checks_unverified=unverified if trace_cases else None,
        skipped_output_lines=len(outputs.skipped) or None,
        failures=tuple(failures),
    )
    return RunResult(metrics, tuple(outcomes))
