"""Reports: ``report.json`` (a superset of fairtrace's), Markdown, JUnit XML, and writing them.

JSON is strict (no NaN or Infinity anywhere: a non-finite number becomes null) and
deterministic: the same evaluation gives the same bytes (set ``SOURCE_DATE_EPOCH`` to pin
``generated_at``).
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path
from typing import Any

from ..common.jsonio import write_text_atomic
from ..common.markdown import md_text
from .evidence_report import ReportOptions, evidence_json, evidence_markdown
from .report_html import render_html
from .results import Evaluation, MetricResult, RecordMap

__all__ = ["ReportOptions", "render_json", "render_junit", "render_markdown", "report_dict",
           "write_reports"]

_PLAIN = ReportOptions()


def _version() -> str:
    try:
        return metadata.version("spanguard")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0+unknown"


def strict(value: Any) -> Any:
    """A copy of ``value`` with every non-finite float replaced by None and tuples as lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, RecordMap):
        return strict(value.to_dict())
    if isinstance(value, dict):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict(v) for v in value]
    return value


def _metric_dict(r: MetricResult, level: float, options: ReportOptions) -> dict[str, Any]:
    return {
        "metric": r.metric,
        "score": r.score,
        "threshold": r.threshold,
        "direction": r.direction,
        "passed": r.passed,
        "confidence_interval": list(r.confidence_interval) if r.confidence_interval else None,
        "details": r.details,
        "p_value": r.p_value,
        "verdict": r.verdict,
        "category": r.category,
        "severity": r.severity,
        "interval_level": level,
        "p_value_method": r.p_method,
        "p_value_holm": r.p_holm,
        "p_value_bh": r.p_bh,
        "minimum_detectable_effect": r.mde,
        "records": r.records,
        "contrast_seeds": r.seeds,
        "groups": [
            {"group": g.label, "mean": g.mean, "low": g.low, "high": g.high,
             "records": g.records}
            for g in r.groups
        ],
        "warnings": list(r.warnings),
        "evidence": evidence_json(r.evidence, options),
        "estimand": r.estimand,
        "p_value_threshold": r.p_threshold,
        "verdict_reason": r.reason,
        "verdict_reason_text": r.reason_text,
        "units": r.units,
        "worst_case_variance": r.worst_case_variance,
        "coverage": r.coverage,
        "p_value_missingness_holm": r.p_missing,
    }


def _scenario(record: dict[str, Any], options: ReportOptions) -> dict[str, Any]:
    if options.redact:  # null, not "": a redacted report is not re-read as empty answers
        record["prompt"] = None
        record["response"] = None
    return record


def report_dict(ev: Evaluation, options: ReportOptions = _PLAIN) -> dict[str, Any]:
    """fairtrace's report.json keys, then a ``spanguard`` block with provenance and verdict.

    Each metric carries ``evidence``: its counterfactual pairs (see :mod:`.evidence`)."""
    cfg = ev.config
    return strict({
        "generated_at": ev.generated_at,
        "variant_count": ev.variant_count,
        "metric_results": [_metric_dict(r, cfg.level, options) for r in ev.results],
        "scenario_results": [_scenario(o.record(), options) for o in ev.observations],
        "spanguard": {
            "version": _version(),
            "passed": ev.passed,
            "failed_metrics": ev.failed_metrics,
            "gate": cfg.mode,
            "alpha": cfg.alpha,
            "interval_level": cfg.level,
            "bootstrap_samples": cfg.bootstrap_samples,
            "permutation_samples": cfg.permutation_samples,
            "min_coverage": cfg.min_coverage,
            "allow_partial": cfg.allow_partial,
            "random_seed": cfg.seed,
            "suite_sha256": ev.suite_digest,
            "records": len(ev.observations),
            "seeds": ev.seeds,
            "errors": list(ev.errors),
            "redacted": options.redact,
        },
    })


def render_json(ev: Evaluation, options: ReportOptions = _PLAIN) -> str:
    return json.dumps(report_dict(ev, options), indent=2, allow_nan=False, default=str) + "\n"


def _num(value: float | None, digits: int = 4) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}"


def _ci(r: MetricResult) -> str:
    if r.confidence_interval is None:
        return "–"
    lo, hi = r.confidence_interval
    return f"[{_num(lo)}, {_num(hi)}]"


_STATUS = {"pass": "✅ pass", "fail": "❌ fail", "insufficient_data": "⚠️ insufficient data"}


def render_markdown(ev: Evaluation, options: ReportOptions = _PLAIN) -> str:
    """A report fit for ``$GITHUB_STEP_SUMMARY``: verdict, table, warnings, settings."""
    cfg = ev.config
    verdict = "PASSED" if ev.passed else "FAILED"
    lines = [
        "# spanguard fairness report",
        "",
        f"**{verdict}** — {len(ev.results) - len(ev.failed_metrics)} of {len(ev.results)} "
        f"metrics pass (gate `{cfg.mode}`, alpha {cfg.alpha:g}).",
        "",
        f"- Generated at: {ev.generated_at}",
        f"- Variants: {ev.variant_count}; records: {len(ev.observations)}; seeds: {ev.seeds}",
        f"- Intervals: {cfg.level:.0%} seed-cluster bootstrap, {cfg.bootstrap_samples} resamples;"
        f" p-values: within-seed permutation, Holm-adjusted for the gate",
        "",
        f"| Metric | Score | {cfg.level:.0%} CI | Threshold | p | p (Holm) | MDE | Status |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in ev.results:
        lines.append(
            f"| {r.metric} | {_num(r.score)} | {_ci(r)} | {r.threshold:g} ({r.direction}) | "
            f"{_num(r.p_value)} | {_num(r.p_holm)} | {_num(r.mde)} | "
            f"{_STATUS.get(r.verdict, r.verdict)} |"
        )
    notes = [(r.metric, w) for r in ev.results for w in r.warnings]
    failing = [r for r in ev.results if not r.passed and r.evidence]
    if failing:
        lines += ["", "## Evidence", "",
                  "The seeds contributing most to each failing metric's gap: the same prompt "
                  "for two groups; signals that differ in bold."]
        for r in failing:
            lines += evidence_markdown(r.metric, r.evidence, options)
    if notes:
        lines += ["", "## Warnings", ""]
        lines += [f"- **{m}**: {w}" for m, w in notes]
    if ev.errors:
        lines += ["", "## Errors", ""]
        lines += [f"- `{e.get('id')}`: {md_text(str(e.get('error')))}" for e in ev.errors]
    return "\n".join(lines) + "\n"


def render_junit(ev: Evaluation, options: ReportOptions = _PLAIN) -> str:
    """JUnit XML with one test case per metric (failures for fail and insufficient data)."""
    failures = sum(1 for r in ev.results if not r.passed)
    suites = ET.Element("testsuites", name="spanguard fairness", tests=str(len(ev.results)),
                        failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name="spanguard.fairness",
                          tests=str(len(ev.results)), failures=str(failures), errors="0",
                          skipped="0", timestamp=ev.generated_at)
    for r in ev.results:
        case = ET.SubElement(suite, "testcase", classname=f"fairness.{r.category}",
                             name=r.metric, time="0")
        summary = (f"score {_num(r.score)} CI {_ci(r)} threshold {r.threshold:g} "
                   f"({r.direction}) p {_num(r.p_value)} Holm p {_num(r.p_holm)}")
        if not r.passed:
            failure = ET.SubElement(case, "failure", message=f"{r.verdict}: {summary}",
                                    type=r.verdict)
            failure.text = "\n".join((summary, *r.warnings, *_pair_lines(r, options)))
        elif r.warnings:
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(r.warnings)
    ET.indent(suites)
    body = ET.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _pair_lines(r: MetricResult, options: ReportOptions) -> list[str]:
    out = []
    for p in r.evidence:
        traces = " vs ".join(options.link(v.trace_id) or v.trace_id or v.record_id
                             for v in (p.high, p.low))
        out.append(f"{p.headline} [{traces}]")
    return out


def write_reports(ev: Evaluation, directory: Path,
                  options: ReportOptions = _PLAIN) -> dict[str, Path]:
    """Write report.json, report.md, junit.xml and report.html into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    outputs = {
        "report.json": render_json(ev, options),
        "report.md": render_markdown(ev, options),
        "junit.xml": render_junit(ev, options),
        "report.html": render_html(ev, options),
    }
    paths = {}
    for name, text in outputs.items():
        path = directory / name
        write_text_atomic(path, text)
        paths[name] = path
    return paths
