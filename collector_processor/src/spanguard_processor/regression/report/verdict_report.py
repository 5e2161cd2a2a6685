"""The repeats gate's verdict (:mod:`..gate.verdict`) as console/Markdown, JUnit XML and HTML.

Every output shows the same things: one row per metric (outcome, cases, the change and its
one-sided 95 % bound against the tolerance, and what would decide an INCONCLUSIVE), then under
each FAIL the cases that moved most, as baseline → current distributions.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from html import escape

from ..gate.verdict import MetricOutcome, MetricVerdict, RegressionVerdict

__all__ = [
    "render_verdict",
    "render_verdict_html",
    "verdict_junit",
    "verdict_markdown",
    "verdict_summary",
]


def _amount(m: MetricVerdict, value: float) -> str:
    """A change on the metric's own scale: points for rates, counts, × for timings."""
    if m.kind == "rate":
        return f"{value * 100:+.1f} pts"
    if m.kind == "count":
        return f"{value:+.2f}"
    if m.kind == "timing":
        return f"×{math.exp(value):.2f}"
    return f"{value:g}"


def _row(m: MetricVerdict) -> list[str]:
    b = m.bound
    change = _amount(m, b.estimate) if b is not None else "–"
    bound = _amount(m, b.upper) if b is not None else "–"
    tolerance = _amount(m, m.tolerance) if m.kind != "cases" else "0 lost"
    gating = "" if m.gating else " (not gated)"
    return [m.metric, f"{m.outcome}{gating}", str(m.cases), change, bound, tolerance, m.note]


_HEAD = ["Metric", "Outcome", "Cases", "Change", "95% upper bound", "Tolerance", "Note"]


def _md(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _telling(v: RegressionVerdict) -> str:
    """The case that moved most, by what changed in it: its tool or property line before its
    ``pass_rate`` line, which names only the kinds of check that failed."""
    case = v.changes[0].case_id
    own = [c for c in v.changes if c.case_id == case]
    return next((c.diff for c in own if c.metric != "pass_rate"), own[0].diff)


def verdict_summary(v: RegressionVerdict) -> str:
    """The one-line verdict: PASS, or which gating metrics blocked it."""
    blocking = v.blocking()
    if not blocking:
        passed = sum(m.outcome is MetricOutcome.PASS for m in v.metrics if m.gating)
        extra = " (INCONCLUSIVE allowed)" if v.allow_inconclusive else ""
        return f"PASS: every gating metric passed ({passed} metrics){extra}"
    failed = [m.metric for m in blocking if m.outcome is MetricOutcome.FAIL]
    if failed:
        worst = (
            _telling(v) if v.changes else next((m.evidence[0] for m in blocking if m.evidence), "")
        )
        most = f"; moved most: {worst}" if worst else ""
        return f"FAIL: {len(failed)} metric(s) shown worse: {', '.join(failed)}{most}"
    names = ", ".join(f"{m.metric} ({m.outcome})" for m in blocking)
    return f"INCONCLUSIVE: {len(blocking)} gating metric(s) not shown within tolerance: {names}"


def render_verdict(v: RegressionVerdict) -> str:
    """Console and Markdown text."""
    lines = [
        f"cases compared: {v.cases}; repeats per case: baseline {v.repeats[0]:.1f}, "
        f"current {v.repeats[1]:.1f}; app errors: baseline {v.app_errors[0]}, "
        f"current {v.app_errors[1]}",
        "",
        _md(_HEAD),
        _md(["---"] * len(_HEAD)),
        *(_md(_row(m)) for m in v.metrics),
    ]
    failing = [m for m in v.metrics if m.outcome is MetricOutcome.FAIL and m.evidence]
    for m in failing:
        lines += ["", f"FAIL {m.metric}: the cases that moved most"]
        lines += [f"- {line}" for line in m.evidence]
    if v.changes:
        lines += ["", "Cases shown worse by their own test (Holm across cases and metrics):"]
        lines += [f"- {c.diff} [{c.metric}, p={c.p_value:.2g}]" for c in v.changes[:20]]
        if len(v.changes) > 20:
            lines.append(f"- … and {len(v.changes) - 20} more")
    return "\n".join(lines)


def verdict_markdown(text: str, summary: str, baseline: str, current: str) -> str:
    """The Markdown report: a heading naming both runs, the table and evidence, the verdict."""
    return (
        f"# Regression check\n\nbaseline `{baseline}` → current `{current}`\n\n"
        f"{text}\n\n**{summary}**\n"
    )


def verdict_junit(v: RegressionVerdict) -> str:
    """One test case per metric; FAIL (and a blocking INCONCLUSIVE or NO_SIGNAL) is a failure
    carrying the evidence, a metric that does not gate is skipped."""
    suite = ET.Element("testsuite", name="spanguard check", tests=str(len(v.metrics)))
    blocking = {m.metric for m in v.blocking()}
    failures = 0
    for m in v.metrics:
        case = ET.SubElement(suite, "testcase", classname="spanguard.check", name=m.metric)
        if m.metric in blocking:
            failures += 1
            text = "\n".join([m.note, *m.evidence]).strip()
            ET.SubElement(case, "failure", message=f"{m.outcome}: {m.note}".strip()).text = text
        elif not m.gating or m.outcome is MetricOutcome.REPORT_ONLY:
            ET.SubElement(case, "skipped", message=f"{m.outcome}: {m.note}".strip())
    suite.set("failures", str(failures))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, "unicode") + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1b1f24}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #d0d7de;padding:4px 8px}
th{background:#f6f8fa}.PASS{color:#1a7f37}.FAIL{color:#cf222e}.INCONCLUSIVE{color:#9a6700}
"""


def render_verdict_html(v: RegressionVerdict, baseline: str, current: str) -> str:
    """A self-contained page: inline CSS, no scripts, every text escaped."""
    rows = []
    for m in v.metrics:
        cells = _row(m)
        tds = "".join(
            f'<td class="{escape(str(m.outcome))}">{escape(c)}</td>'
            if i == 1
            else f"<td>{escape(c)}</td>"
            for i, c in enumerate(cells)
        )
        rows.append(f"<tr>{tds}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in _HEAD)
    sections = []
    for m in v.metrics:
        if m.outcome is MetricOutcome.FAIL and m.evidence:
            items = "".join(f"<li>{escape(e)}</li>" for e in m.evidence)
            sections.append(f"<h3>FAIL {escape(m.metric)}</h3><ul>{items}</ul>")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>spanguard check</title>'
        f"<style>{_CSS}</style></head><body><h1>spanguard check</h1>"
        f"<p>baseline {escape(baseline)} · current {escape(current)}</p>"
        f"<p><strong>{escape(verdict_summary(v))}</strong></p>"
        f"<table><tr>{head}</tr>{''.join(rows)}</table>{''.join(sections)}</body></html>\n"
    )
