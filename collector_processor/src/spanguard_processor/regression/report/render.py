"""Console/Markdown tables (trace2eval's layout) and JUnit XML for ``cases run`` and ``check``."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence

from ..gate.diff import CaseDiff
from ..gate.gate import Comparison, Violation
from ..mine.report import cell, number
from ..run.results import Metrics
from ..vocabulary import Outcome
from .diff_report import console_lines, junit_text

__all__ = [
    "check_junit",
    "render_check",
    "render_matching",
    "render_metrics",
    "render_violations",
    "run_junit",
    "verdict_line",
]


def render_metrics(m: Metrics) -> str:
    lines = [
        "| Metric | Value |",
        "| --- | --- |",
        f"| Cases | {m.total} |",
        f"| Passed | {m.passed} |",
        f"| Failed | {m.failed} |",
    ]
    if m.missing:
        lines.append(f"| Missing outputs | {m.missing} |")
    lines.append(f"| Pass rate | {float(m.pass_rate or 0):.2%} |")
    lines.append(f"| Fallback rate | {float(m.fallback_rate or 0):.2%} |")
    if m.format_compliance_rate is not None:
        lines.append(f"| Format compliance | {m.format_compliance_rate:.2%} |")
    if m.trace_compliance_rate is not None:
        lines.append(f"| Trace-check compliance | {m.trace_compliance_rate:.2%} |")
    lines.append(f"| Avg latency | {number(m.avg_latency_ms, 2)} ms |")
    lines.append(f"| p95 latency | {number(m.p95_latency_ms, 2)} ms |")
    lines.append(f"| Avg cost | ${number(m.avg_cost_usd, 8)} |")
    return "\n".join(lines)


def render_matching(matching: dict[str, int], total: int) -> str:
    """``matched 16 of 16 case(s): 0 by case id, 16 by source_trace_id, …``."""
    matched = total - matching.get("unmatched", 0)
    template = (
        f", {matching['template']} by template (another day's requests)"
        if "template" in matching
        else ""
    )
    return (
        f"matched {matched} of {total} case(s): {matching.get('case_id', 0)} by case id, "
        f"{matching.get('source_trace_id', 0)} by source_trace_id, "
        f"{matching.get('question', 0)} by question text{template}; "
        f"{matching.get('unmatched', 0)} without output"
    )


def render_violations(violations: list[Violation]) -> str:
    if not violations:
        return "No regressions detected."
    lines = ["| Metric | Baseline | Current | Rule |", "| --- | --- | --- | --- |"]
    for v in violations:
        lines.append(
            f"| {cell(v.metric, 24)} | {cell(number(v.baseline), 16)} | "
            f"{cell(number(v.current), 16)} | {cell(v.rule, 120)} |"
        )
    return "\n".join(lines)


def verdict_line(comparison: Comparison) -> str:
    """``PASS: no regressions detected``, or ``FAIL: 45 case(s) regressed (45 pass → fail);
    rule(s) failed: pass_rate, …``: the count is of regressed cases, the rules named apart."""
    if not comparison.violations:
        return "PASS: no regressions detected"
    regressed = comparison.regressed_cases
    kinds = [f"{len(comparison.behavioural)} pass → fail"] if comparison.behavioural else []
    if comparison.lost_record and not comparison.allow_missing:
        kinds.append(f"{len(comparison.lost_record)} without a record")
    head = (
        f"{len(regressed)} case(s) regressed ({', '.join(kinds)})"
        if regressed
        else "no case regressed"
    )
    rules = ", ".join(dict.fromkeys(v.metric for v in comparison.violations))
    return f"FAIL: {head}; rule(s) failed: {rules}"


def _as_written(text: str) -> str:
    return text


def render_check(
    base: Metrics,
    cur: Metrics,
    comparison: Comparison,
    diffs: Sequence[CaseDiff] = (),
    terms: Callable[[str], str] = _as_written,
) -> str:
    """The comparison as console text (Markdown tables). This module's own sentences name
    options as parameters in backticks (`allow_different_cases`) and ``terms`` rewrites them
    (cli/ spells the parameters as options); the comparison's notes are shown as given (the
    caller spells them once, for every report), case content never changes."""
    parts = [
        "baseline",
        render_metrics(base),
        "",
        "current",
        render_metrics(cur),
        "",
        "regressions",
        render_violations(comparison.violations),
    ]
    if comparison.within_noise:
        parts += ["", "beyond the tolerance but within run-to-run noise (not a regression)"]
        parts += [f"  {line}" for line in comparison.within_noise]
    if comparison.no_output:
        lost = set(comparison.lost_record)
        shown = ", ".join(
            c if c in lost else f"{c} (none in the baseline either)"
            for c in comparison.no_output[:10]
        )
        more = " …" if len(comparison.no_output) > 10 else ""
        parts += [
            "",
            f"cases without output in the current run ({len(comparison.no_output)}): {shown}{more}",
        ]
    if comparison.allow_missing and comparison.lost_record:
        listed = ", ".join(comparison.lost_record[:10])
        more = " …" if len(comparison.lost_record) > 10 else ""
        parts.append(
            terms(
                f"{len(comparison.lost_record)} case(s) lost their record "
                f"({listed}{more}), allowed by `allow_missing`"
            )
        )
    if comparison.missing_cases or comparison.added_cases:
        parts += [
            "",
            terms(
                f"case sets differ (`allow_different_cases`): {len(comparison.missing_cases)} "
                f"only in the baseline, {len(comparison.added_cases)} only in the current run; "
                "per-case rules compare the shared cases"
            ),
        ]
    if comparison.pass_to_fail:
        parts += [
            "",
            f"cases that went from pass to fail ({len(comparison.pass_to_fail)}): "
            + ", ".join(comparison.pass_to_fail),
            *console_lines(diffs),
        ]
    if comparison.fail_to_pass:
        parts += [
            "",
            f"cases that went from fail to pass ({len(comparison.fail_to_pass)}): "
            + ", ".join(comparison.fail_to_pass),
        ]
    return "\n".join(parts)


def _xml(suite: ET.Element) -> str:
    ET.indent(suite)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
    )


def run_junit(metrics: Metrics, case_results: dict[str, str]) -> str:
    """One testcase per regression case."""
    failures = {f.case_id: f for f in metrics.failures}
    suite = ET.Element(
        "testsuite",
        name="spanguard cases run",
        tests=str(len(case_results)),
        failures=str(len(failures)),
        errors="0",
        skipped="0",
    )
    for case_id, outcome in case_results.items():
        case = ET.SubElement(suite, "testcase", classname="spanguard.cases", name=case_id)
        if outcome != Outcome.PASS:
            info = failures.get(case_id)
            detail = (", ".join(info.failed_checks) or info.reason) if info else outcome
            ET.SubElement(case, "failure", message=f"{case_id}: {detail}", type=outcome)
    return _xml(suite)


def check_junit(
    comparison: Comparison,
    metrics: list[str],
    diffs: Sequence[CaseDiff] = (),
    trace_url: str | None = None,
) -> str:
    """One testcase per gated metric, plus one per case that went from pass to fail (its
    ``<failure>`` text is the case diff when both runs recorded case details)."""
    by_case = {d.case_id: d for d in diffs}
    by_metric = {v.metric: v for v in comparison.violations}
    names = list(dict.fromkeys(metrics + list(by_metric)))
    suite = ET.Element(
        "testsuite",
        name="spanguard check",
        tests=str(len(names) + len(comparison.pass_to_fail)),
        failures=str(len(by_metric) + len(comparison.pass_to_fail)),
        errors="0",
        skipped="0",
    )
    for name in names:
        case = ET.SubElement(suite, "testcase", classname="spanguard.check", name=name)
        if name in by_metric:
            v = by_metric[name]
            ET.SubElement(
                case,
                "failure",
                type="regression",
                message=f"{name}: {number(v.baseline)} -> {number(v.current)}, {v.rule}",
            )
    for case_id in comparison.pass_to_fail:
        case = ET.SubElement(suite, "testcase", classname="spanguard.check.cases", name=case_id)
        failure = ET.SubElement(
            case,
            "failure",
            type="pass_to_fail",
            message=f"{case_id} passed in the baseline and fails now",
        )
        if case_id in by_case:
            failure.text = junit_text(by_case[case_id], trace_url)
    return _xml(suite)
