"""``cases run``: a case set plus candidate outputs (or agent traces) → metrics JSON.

Metrics and rounding are trace2eval 0.5.1's (docs/regression.md). Additions: trace checks (process,
latency, cost) are evaluated when a record carries the evidence; outputs lines that cannot be
read are counted (``skipped_output_lines``) instead of dropped silently; every case's outcome is
written under ``case_results`` so ``check`` can list pass→fail cases and missing ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from spanguard.exceptions import CaseFormatError

from ...common.jsonio import iter_jsonl
from ..case import Case, Evidence, Property
from ..casematch import Condition
from ..checks import CheckKind, percentile, run_text_checks, run_trace_check
from ..vocabulary import FailureReason, MatchKind, Outcome
from .outputs import MATCH_KINDS, OutputRecord, Outputs, case_evidence
from .repeats import ERROR, AppFailure, Repeat, repeat_of, request_key
from .results import CaseOutcome, Failure, Metrics
from .templated import assign_by_template

__all__ = [
    "METRICS_VERSION",
    "PRODUCER",
    "RunResult",
    "load_cases",
    "run_cases",
    "score_case",
    "score_repeats",
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
        _check_properties(value.get("properties", []), name, number)
        if "match" in value:
            _check_match(value["match"], name, number)
        cases.append(Case.from_dict(value))
    return cases


def _check_properties(value: object, name: str, number: int) -> None:
    """Contract C1's ``properties``: a list of objects, each with a check object."""
    ok = isinstance(value, list) and all(
        isinstance(p, dict)
        and isinstance(p.get("check"), dict)
        and isinstance(p["check"].get("type"), str)
        for p in value
    )
    if not ok:
        raise CaseFormatError(
            'must be a list of {"check": {"type": …}, "held": K, "of": N, "stable": bool} objects.',
            file=name,
            line=number,
            field="properties",
        )


def _check_match(value: object, name: str, number: int) -> None:
    """``match``: a template, and per level null or a condition on a slot or a word."""
    levels = value.get("when", []) if isinstance(value, dict) else None
    ok = (
        isinstance(value, dict)
        and isinstance(value.get("template"), str)
        and isinstance(levels, list)
        and all(
            level is None or (isinstance(level, dict) and Condition.from_dict(level) is not None)
            for level in levels
        )
    )
    if not ok:
        raise CaseFormatError(
            'must be {"template": "…", "when": [null or {"slot": i, …} or {"word": w, …}, …]}.',
            file=name,
            line=number,
            field="match",
        )


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class RunResult:
    """A scored run: trace2eval's metrics, every case's outcome (``case_details``), every
    case's repeats (``repeats``, contract C2) and the properties of the cases that carry them
    (``properties``: the gate's rates, with their production baseline)."""

    metrics: Metrics
    outcomes: tuple[CaseOutcome, ...]
    repeats: Mapping[str, tuple[Repeat, ...]] = field(default_factory=dict)
    properties: Mapping[str, tuple[Property, ...]] = field(default_factory=dict)
    #: Recorded traffic over cases that carry a template (``match``): per case, how many
    #: requests it got and how (``exact``: id, source_trace_id or question; ``template``).
    requests: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    #: What the run could not place (requests that fit two cases, or none).
    notes: tuple[str, ...] = ()

    @property
    def app_errors(self) -> int:
        """Repeats whose app call raised."""
        return sum(r.outcome == ERROR for runs in self.repeats.values() for r in runs)

    @property
    def case_results(self) -> dict[str, str]:
        return {o.case_id: o.outcome for o in self.outcomes}

    @property
    def matching(self) -> dict[str, int]:
        # "template" only where cases carry templates: older runs' files stay byte-identical
        kinds = [k for k in MATCH_KINDS if k != MatchKind.TEMPLATE or self.requests]
        counts: dict[str, int] = {kind: 0 for kind in kinds}
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
            "repeats": {k: [r.to_dict() for r in runs] for k, runs in self.repeats.items()},
            "properties": {k: [p.to_dict() for p in props] for k, props in self.properties.items()},
            **(
                {"requests": {k: dict(v) for k, v in self.requests.items()}}
                if self.requests
                else {}
            ),
            **({"notes": list(self.notes)} if self.notes else {}),
        }

    def payload(self) -> dict[str, object]:
        return self.to_dict()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _checked(case: Case, run: Evidence) -> tuple[list[str], list[str], list[str]]:
    """A run's failed checks, their details, and the trace checks it could not verify."""
    failed: list[str] = []
    details: list[str] = []
    unverified: list[str] = []
    results = run_text_checks(case.checks, run.output)
    results += [run_trace_check(check, run) for check in case.trace_checks]
    for result in results:
        if result.passed is None:
            unverified.append(result.type)
        elif not result.passed:
            failed.append(result.type)
            details.append(f"{result.type}: {result.detail}" if result.detail else result.type)
    return failed, details, unverified


def score_case(
    case: Case, record: OutputRecord | None, matched_by: str | None = None
) -> CaseOutcome:
    """Run one case's text and trace checks against its record (None: the output is missing)."""
    if record is None:
        return CaseOutcome(case.id, Outcome.MISSING, evidence=case_evidence(case.input, None))
    run = record.evidence
    failed, details, unverified = _checked(case, run)
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


class _Tally:
    """trace2eval 0.5.1's counting over each case's primary record."""

    def __init__(self) -> None:
        self.passed = self.failed = self.missing = self.fallback = 0
        self.json_cases = self.json_passed = 0
        self.trace_cases = self.trace_passed = self.unverified = 0
        self.latencies: list[float] = []
        self.costs: list[float] = []
        self.chars: list[int] = []
        self.failures: list[Failure] = []

    def add(self, case: Case, record: OutputRecord | None, outcome: CaseOutcome) -> None:
        if record is None:
            self.failed += 1
            self.missing += 1
            self.failures.append(Failure(outcome.case_id, FailureReason.MISSING_OUTPUT))
            return
        bad = list(outcome.failed_checks)
        if case.trace_checks:
            self.trace_cases += 1
            self.unverified += len(outcome.unverified)
            trace_types = {c.type for c in case.trace_checks}
            self.trace_passed += not any(b in trace_types for b in bad)
        run = record.evidence
        for value, values in ((run.latency_ms, self.latencies), (run.cost_usd, self.costs)):
            if value is not None:
                values.append(value)
        self.chars.append(len(run.output.strip()))
        if bad:
            self.failed += 1
            self.failures.append(Failure(outcome.case_id, FailureReason.CHECK_FAILED, tuple(bad)))
        else:
            self.passed += 1
        self.fallback += bool(bad) and CheckKind.NOT_FALLBACK in bad
        if any(c.get("type") == CheckKind.JSON for c in case.checks):
            self.json_cases += 1
            self.json_passed += CheckKind.JSON not in bad

    def metrics(self, total: int, skipped: int) -> Metrics:
        lat, costs, chars = self.latencies, self.costs, self.chars
        denominator = total or 1
        json_cases, trace_cases = self.json_cases, self.trace_cases
        return Metrics(
            total=total,
            passed=self.passed,
            failed=self.failed,
            missing=self.missing,
            pass_rate=round(self.passed / denominator, 4),
            fallback_count=self.fallback,
            fallback_rate=round(self.fallback / denominator, 4),
            json_cases=json_cases,
            json_passed=self.json_passed,
            format_compliance_rate=round(self.json_passed / json_cases, 4) if json_cases else None,
            avg_latency_ms=_round(sum(lat) / len(lat), 2) if lat else None,
            p95_latency_ms=_round(percentile(lat, 0.95), 2) if lat else None,
            avg_cost_usd=_round(sum(costs) / len(costs), 8) if costs else None,
            total_cost_usd=_round(sum(costs), 6) if costs else None,
            avg_output_chars=_round(sum(chars) / len(chars), 1) if chars else None,
            trace_check_cases=trace_cases or None,
            trace_check_passed=self.trace_passed if trace_cases else None,
            trace_compliance_rate=round(self.trace_passed / trace_cases, 4)
            if trace_cases
            else None,
            trace_checks_unverified=self.unverified if trace_cases else None,
            skipped_output_lines=skipped or None,
            failures=tuple(self.failures),
        )


def _score_all(
    cases: Sequence[Case],
    found: Sequence[tuple[Sequence[OutputRecord | AppFailure], OutputRecord | None, str | None]],
    skipped: int,
    recorded: bool = False,
) -> RunResult:
    """Each case's repeats scored; its primary record (the one trace2eval's ``run`` would
    match) gives the case's outcome and trace2eval's metrics. ``recorded``: the repeats are
    recorded requests, each keyed by its input (:func:`.repeats.request_key`)."""
    tally = _Tally()
    outcomes: list[CaseOutcome] = []
    repeats: dict[str, tuple[Repeat, ...]] = {}
    for case, (runs, primary, matched_by) in zip(cases, found, strict=True):
        outcome = score_case(case, primary, matched_by)
        outcomes.append(outcome)
        tally.add(case, primary, outcome)
        repeats[case.id] = tuple(_repeat(case, run, primary, outcome, recorded) for run in runs)
    properties = {c.id: c.properties for c in cases if c.properties}
    return RunResult(tally.metrics(len(cases), skipped), tuple(outcomes), repeats, properties)


def _repeat(
    case: Case,
    run: OutputRecord | AppFailure,
    primary: OutputRecord | None,
    outcome: CaseOutcome,
    recorded: bool,
) -> Repeat:
    if isinstance(run, AppFailure):
        return repeat_of(case, run, ())
    failed = outcome.failed_checks if run is primary else _checked(case, run.evidence)[0]
    return repeat_of(case, run.evidence, failed, request_key(run.input) if recorded else None)


def run_cases(cases: Sequence[Case], outputs: Outputs) -> RunResult:
    """Recorded traffic scored: every record matching a case is one of its repeats
    (:meth:`~.outputs.Outputs.find_all`); the one :meth:`~.outputs.Outputs.find` picks gives
    the case's outcome, so ``metrics`` stay trace2eval's. The records no case found so are
    matched by template and input range (:mod:`.templated`) to the cases that carry one; a
    case found no other way takes its first such record as its outcome's."""
    exact: list[tuple[list[OutputRecord], OutputRecord | None, str | None]] = []
    claimed: set[int] = set()
    for case in cases:
        record, matched_by = outputs.find(case)
        runs = list(outputs.find_all(case))
        if record is not None and not any(r is record for r in runs):
            runs.insert(0, record)
        claimed.update(id(r) for r in runs)
        exact.append((runs, record, matched_by))
    rest = [r for r in outputs.records if id(r) not in claimed]
    assigned = assign_by_template(cases, rest)
    templated = any(case.match is not None for case in cases)
    found: list[tuple[Sequence[OutputRecord | AppFailure], OutputRecord | None, str | None]] = []
    requests: dict[str, dict[str, int]] = {}
    for case, (runs, record, matched_by) in zip(cases, exact, strict=True):
        extra = assigned.by_case.get(case.id, [])
        if record is None and extra:
            record, matched_by = extra[0], MatchKind.TEMPLATE
        found.append(([*runs, *extra], record, matched_by))
        if templated:
            requests[case.id] = {"exact": len(runs), "template": len(extra)}
    result = _score_all(cases, found, len(outputs.skipped), recorded=True)
    return replace(result, requests=requests, notes=tuple(assigned.notes()))


def score_repeats(
    cases: Sequence[Case], evidence: Mapping[str, Sequence[Evidence | AppFailure]]
) -> RunResult:
    """Score each case's K runs (``evidence[case.id]``, in order; an :class:`AppFailure` for a
    call that raised). The first run that did not raise gives the case's outcome and
    trace2eval's metrics; a case with none is missing. Every repeat is kept in the result."""
    found: list[tuple[Sequence[OutputRecord | AppFailure], OutputRecord | None, str | None]] = []
    for case in cases:
        runs = [
            r if isinstance(r, AppFailure) else OutputRecord(r, case.input)
            for r in evidence.get(case.id, ())
        ]
        primary = next((r for r in runs if isinstance(r, OutputRecord)), None)
        found.append((runs, primary, MatchKind.CASE_ID if primary is not None else None))
    return _score_all(cases, found, 0)
