"""Reports: ``report.json`` (a superset of fairtrace's), Markdown, JUnit XML, and writing them.

JSON is strict (no NaN or Infinity anywhere: a non-finite number becomes null) and
deterministic: the same evaluation gives the same bytes (set ``SOURCE_DATE_EPOCH`` to pin
``generated_at``).
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from ...common.jsonio import write_text_atomic
from ...common.markdown import md_text
from ...common.writes import write_chunks_atomic
from ..gate.results import Evaluation, MetricResult, RecordMap, Verdict
from .attribute_text import attribute_json, attribute_rows
from .evidence_report import ReportOptions, evidence_json, evidence_markdown
from .report_html import render_html
from .verdict_text import (
    MEANINGS,
    gate_summary,
    interval_text,
    label,
    legend,
    metric_notes,
    not_gated,
    number,
    reason,
    shown_warnings,
    tolerated,
    verdict_counts,
)

__all__ = [
    "ReportOptions",
    "json_chunks",
    "render_json",
    "render_junit",
    "render_markdown",
    "report_dict",
    "write_reports",
]

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


def _score(r: MetricResult) -> float:
    """The score; a metric without signal that has no number writes fairtrace's 0.0 for "no
    data" (fairtrace's readers need a number; ``verdict`` says it measured nothing)."""
    if r.verdict == Verdict.NO_SIGNAL and not math.isfinite(r.score):
        return 0.0
    return r.score


def _metric_dict(r: MetricResult, level: float, options: ReportOptions) -> dict[str, Any]:
    return {
        "metric": r.metric,
        "score": _score(r),
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
            {"group": g.label, "mean": g.mean, "low": g.low, "high": g.high, "records": g.records}
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
        "optional": r.optional,
        "gating": r.gating,
        "signal": r.signal,
        "signal_records": r.signal_records,
        "diagnosis": r.diagnosis,
        "seeds_needed": r.seeds_needed,
        # several protected attributes: each one's contrast and verdict (absent with one)
        **({"attributes": attribute_json(r)} if r.attributes else {}),
    }


def _scenario(record: dict[str, Any], options: ReportOptions) -> dict[str, Any]:
    if options.redact:  # null, not "": a redacted report is not re-read as empty answers
        record["prompt"] = None
        record["response"] = None
    return record


def report_dict(
    ev: Evaluation, options: ReportOptions = _PLAIN, *, scenarios: bool = True
) -> dict[str, Any]:
    """fairtrace's report.json keys, then a ``spanguard`` block with provenance and verdict.

    Each metric carries ``verdict`` ("pass", "fail", "inconclusive" or "no_signal"; ``passed``
    is true only for "pass"), ``gating`` (false for an optional metric without signal), what
    it reads (``signal``, ``signal_records``, ``diagnosis``), ``seeds_needed`` for an
    inconclusive one, and ``evidence``: its counterfactual pairs (see :mod:`.evidence`).
    ``scenarios=False`` leaves ``scenario_results`` empty (a record a line:
    :func:`json_chunks` writes them one at a time)."""
    cfg = ev.config
    return strict(
        {
            "generated_at": ev.generated_at,
            "variant_count": ev.variant_count,
            "metric_results": [_metric_dict(r, cfg.level, options) for r in ev.results],
            "scenario_results": [_scenario(o.record(), options) for o in ev.observations]
            if scenarios
            else [],
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
                "allow_inconclusive": cfg.allow_inconclusive,
                "verdicts": verdict_counts(ev.results),
                "allowed_inconclusive": [r.metric for r in tolerated(ev)],
                "not_gated": [r.metric for r in not_gated(ev)],
                "random_seed": cfg.seed,
                "suite_sha256": ev.suite_digest,
                "records": ev.record_count,
                "seeds": ev.seeds,
                "errors": list(ev.errors),
                "redacted": options.redact,
            },
        }
    )


def render_json(ev: Evaluation, options: ReportOptions = _PLAIN) -> str:
    return b"".join(json_chunks(ev, options)).decode("utf-8")


_HOLE = "\x00scenario_results\x00"  # where the streamed records go in the report's text


def _dumps(value: Any) -> str:
    return json.dumps(value, indent=2, allow_nan=False, default=str)


def json_chunks(ev: Evaluation, options: ReportOptions = _PLAIN) -> Iterator[bytes]:
    """report.json's text, the scenario records one at a time: the same bytes as
    ``json.dumps(report_dict(ev, options), indent=2)`` without every record's dict (or the
    whole text) in memory at once."""
    head = report_dict(ev, options, scenarios=False)
    head["scenario_results"] = _HOLE
    before, after = _dumps(head).split(json.dumps(_HOLE), 1)
    yield before.encode("utf-8")
    if not ev.observations:
        yield b"[]"
    for index, o in enumerate(ev.observations):
        record = _dumps(strict(_scenario(o.record(), options)))
        text = ("[\n" if index == 0 else ",\n") + "\n".join(
            "    " + line for line in record.split("\n")
        )
        yield text.encode("utf-8")
    if ev.observations:
        yield b"\n  ]"
    yield (after + "\n").encode("utf-8")


_STATUS: dict[str, str] = {
    Verdict.PASS: "✅ PASS",
    Verdict.FAIL: "❌ FAIL",
    Verdict.INCONCLUSIVE: "⚠️ INCONCLUSIVE",
    Verdict.NO_SIGNAL: "⛔ NO_SIGNAL",
}


def _status(r: MetricResult) -> str:
    text = _STATUS.get(r.verdict, label(r.verdict))
    return text + (
        " (optional, not gated)" if not r.gating and r.verdict == Verdict.NO_SIGNAL else ""
    )


def _counts(ev: Evaluation) -> str:
    return ", ".join(f"{n} {label(v)}" for v, n in verdict_counts(ev.results).items() if n)


def render_markdown(ev: Evaluation, options: ReportOptions = _PLAIN) -> str:
    """A report fit for ``$GITHUB_STEP_SUMMARY``: verdict, table, what keeps a metric from
    passing (the seeds an INCONCLUSIVE one needs, what a NO_SIGNAL one saw), warnings,
    settings."""
    cfg = ev.config
    lines = [
        "# spanguard fairness report",
        "",
        f"**{'PASSED' if ev.passed else 'FAILED'}** — {_counts(ev)} of {len(ev.results)} "
        f"metrics (gate `{cfg.mode}`, alpha {cfg.alpha:g}).",
        "",
        f"- Gate: {gate_summary(ev)}",
        f"- Generated at: {ev.generated_at}",
        f"- Variants: {ev.variant_count}; records: {ev.record_count}; seeds: {ev.seeds}",
        f"- Intervals: {cfg.level:.0%} seed-cluster bootstrap, {cfg.bootstrap_samples} resamples;"
        f" p-values: within-seed permutation, Holm-adjusted for the gate",
        "",
        f"| Metric | Score | {cfg.level:.0%} CI | Threshold | p | p (Holm) | MDE | Verdict |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in ev.results:
        silent = r.verdict == Verdict.NO_SIGNAL
        lines.append(
            f"| {r.metric} | {'–' if silent else number(r.score)} | "
            f"{'–' if silent else interval_text(r)} | {r.threshold:g} ({r.direction}) | "
            f"{number(r.p_value)} | {number(r.p_holm)} | {number(r.mde)} | {_status(r)} |"
        )
        lines += attribute_rows(r, _status)
    if ev.results:
        lines += ["", f"_{legend(ev.results)}._"]
    settled = (Verdict.PASS, Verdict.REPORT_ONLY)
    undecided = [
        r
        for r in ev.results
        if r.verdict not in settled and (r.verdict != Verdict.FAIL or metric_notes(r))
    ]
    if undecided:
        lines += ["", "## Why not PASS", ""]
        for r in undecided:
            why = "; ".join([reason(r) or MEANINGS.get(r.verdict, ""), *metric_notes(r)])
            lines.append(f"- **{r.metric}** ({label(r.verdict)}): {why}")
    warned = [(r.metric, w) for r in ev.results for w in shown_warnings(r)]
    failing = [
        r for r in ev.results if r.verdict in (Verdict.FAIL, Verdict.INCONCLUSIVE) and r.evidence
    ]
    if failing:
        lines += [
            "",
            "## Evidence",
            "",
            "The seeds contributing most to each metric's gap that did not pass: the same "
            "prompt for two groups; signals that differ in bold.",
        ]
        for r in failing:
            lines += evidence_markdown(r.metric, r.evidence, options)
    if warned:
        lines += ["", "## Warnings", ""]
        lines += [f"- **{m}**: {w}" for m, w in warned]
    if ev.errors:
        lines += ["", "## Errors", ""]
        lines += [f"- `{e.get('id')}`: {md_text(str(e.get('error')))}" for e in ev.errors]
    return "\n".join(lines) + "\n"


def render_junit(ev: Evaluation, options: ReportOptions = _PLAIN) -> str:
    """JUnit XML with one test case per metric. A gating metric that is not PASS (FAIL,
    INCONCLUSIVE, NO_SIGNAL) is a failure whose type is its verdict; a metric that does not
    gate (optional without signal, or INCONCLUSIVE allowed by ``allow_inconclusive``) is
    skipped with the reason, so the test count still matches the gate."""
    allowed = {r.metric for r in tolerated(ev)}
    blocking = set(ev.failed_metrics)
    skipped_names = {
        r.metric
        for r in ev.results
        if not r.passed and r.metric not in blocking and (r.metric in allowed or not r.gating)
    }
    failures = sum(1 for r in ev.results if r.metric in blocking)
    suites = ET.Element(
        "testsuites",
        name="spanguard fairness",
        tests=str(len(ev.results)),
        failures=str(failures),
        skipped=str(len(skipped_names)),
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="spanguard.fairness",
        tests=str(len(ev.results)),
        failures=str(failures),
        errors="0",
        skipped=str(len(skipped_names)),
        timestamp=ev.generated_at,
    )
    for r in ev.results:
        case = ET.SubElement(
            suite, "testcase", classname=f"fairness.{r.category}", name=r.metric, time="0"
        )
        summary = (
            f"{label(r.verdict)}: score {number(r.score)} CI {interval_text(r)} "
            f"threshold {r.threshold:g} ({r.direction}) p {number(r.p_value)} "
            f"Holm p {number(r.p_holm)}"
        )
        notes = metric_notes(r)
        if r.verdict == Verdict.NO_SIGNAL:  # what it reads and what was seen, not a score
            summary = f"{label(r.verdict)}: {reason(r)}"
        body = [
            summary,
            *([] if r.verdict == Verdict.NO_SIGNAL else [reason(r)]),
            *notes,
            *shown_warnings(r),
        ]
        body = [line for line in body if line]
        if r.metric in skipped_names:
            why = (
                "report-only: never gating"
                if r.verdict == Verdict.REPORT_ONLY
                else "an optional metric: reported, not gated"
                if not r.gating
                else "allowed by `allow_inconclusive`"
            )
            skip = ET.SubElement(case, "skipped", message=f"{label(r.verdict)}: {why}")
            skip.text = "\n".join(body)
        elif not r.passed:
            failure = ET.SubElement(case, "failure", message=summary, type=r.verdict)
            failure.text = "\n".join((*body, *_pair_lines(r, options)))
        elif shown_warnings(r):
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(shown_warnings(r))
    ET.indent(suites)
    body_xml = ET.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body_xml + "\n"


def _pair_lines(r: MetricResult, options: ReportOptions) -> list[str]:
    out = []
    for p in r.evidence:
        traces = " vs ".join(
            options.link(v.trace_id) or v.trace_id or v.record_id for v in (p.high, p.low)
        )
        out.append(f"{p.headline} [{traces}]")
    return out


def write_reports(
    ev: Evaluation, directory: Path, options: ReportOptions = _PLAIN
) -> dict[str, Path]:
    """Write report.json, report.md, junit.xml and report.html into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    write_chunks_atomic(directory / "report.json", json_chunks(ev, options))
    paths = {"report.json": directory / "report.json"}
    outputs = {
        "report.md": render_markdown(ev, options),
        "junit.xml": render_junit(ev, options),
        "report.html": render_html(ev, options),
    }
    for name, text in outputs.items():
        path = directory / name
        write_text_atomic(path, text)
        paths[name] = path
    return paths
