"""The regression report as self-contained HTML, in the fairness report's style: inline CSS
and SVG, no scripts, no external assets, every piece of text escaped.

Charts: pass rate, p95 latency and average cost (and trace-check compliance when recorded),
baseline beside current on one axis, with the limit the tolerance allows; then, per case that
went from pass to fail, baseline and current side by side with the failing checks marked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from ...common.charts import round_ticks
from ...common.tracelinks import trace_link
from ..gate.diff import CaseDiff
from ..gate.gate import Comparison
from ..gate.rules import RULES
from ..run.results import Metrics

__all__ = ["CheckReport", "render_check_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1b1f24}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #d0d7de;padding:4px 8px}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f37}.fail{color:#cf222e}
section{margin:1.5rem 0;padding-top:.5rem;border-top:1px solid #d0d7de}
svg text{font-size:12px;fill:#1b1f24}svg text.tick{font-size:10px;fill:#57606a}
table.diff{table-layout:fixed;width:100%;max-width:1100px}
table.diff td,table.diff th{overflow-wrap:anywhere;vertical-align:top;text-align:left}
table.diff th:first-child{width:12rem}tr.changed td,tr.changed th{background:#fff8c5}
tr.failing th{color:#cf222e}tr.failing td{background:#ffebe9}span.note{font-weight:600}
code{font-size:.9em}
"""
_LEFT, _PLOT, _RIGHT = 110, 440, 130
_CHARTED = ("pass_rate", "trace_compliance_rate", "p95_latency_ms", "avg_cost_usd")
_TITLES = {
    "pass_rate": "pass rate",
    "trace_compliance_rate": "trace-check compliance",
    "p95_latency_ms": "p95 latency (ms)",
    "avg_cost_usd": "average cost (USD)",
}


@dataclass(frozen=True)
class CheckReport:
    """Everything the page shows: both runs' metrics, the verdict and the case diffs."""

    baseline_path: str
    current_path: str
    baseline: Metrics
    current: Metrics
    comparison: Comparison
    tolerance_scale: float
    diffs: Sequence[CaseDiff] = ()
    trace_url: str | None = None  # a --trace-url template: trace ids become links


def _fmt(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    if value != 0 and abs(value) < 0.001:
        return f"{value:.3g}"
    return f"{value:.4g}"


def _limit(metric: str, base: float, scale: float) -> tuple[float, bool] | None:
    for rule in RULES:
        if rule.metric == metric:
            allowed = rule.allowance * scale * (base if rule.relative else 1)
            higher = rule.higher_is_better
            return (base - allowed if higher else base + allowed), higher
    return None


def _x(value: float, lo: float, hi: float) -> float:
    return round(_LEFT + (value - lo) / (hi - lo) * _PLOT, 2)


def _chart(metric: str, base: float, cur: float, scale: float, failed: bool) -> str:
    found = _limit(metric, base, scale)
    limit, higher = found if found else (base, True)
    rate = metric.endswith("_rate")
    lo = 0.0
    hi = 1.0 if rate else max(base, cur, limit) * 1.15 or 1.0
    width, height = _LEFT + _PLOT + _RIGHT, 92
    xl, xb, xc = _x(limit, lo, hi), _x(base, lo, hi), _x(cur, lo, hi)
    band = (min(xl, xb), abs(xb - xl))
    colour = "#cf222e" if failed else "#1a7f37"
    side = "≥" if higher else "≤"
    parts = [
        f'<rect x="{band[0]}" y="8" width="{band[1]}" height="52" fill="#ddf4ff"/>',
        f'<line x1="{xl}" y1="4" x2="{xl}" y2="64" stroke="#57606a" stroke-dasharray="4 3"/>',
        f'<text x="{_LEFT + _PLOT + 8}" y="22">allowed {side} {escape(_fmt(limit))}</text>',
        f'<text x="{_LEFT - 8}" y="24" text-anchor="end">baseline</text>',
        f'<circle cx="{xb}" cy="20" r="5" fill="#57606a"/>',
        f'<text x="{_LEFT + _PLOT + 8}" y="42">{escape(_fmt(base))} → {escape(_fmt(cur))}</text>',
        f'<text x="{_LEFT - 8}" y="50" text-anchor="end">current</text>',
        f'<circle cx="{xc}" cy="46" r="5" fill="{colour}"/>',
        f'<line x1="{_LEFT}" y1="68" x2="{_LEFT + _PLOT}" y2="68" stroke="#d0d7de"/>',
    ]
    for value in round_ticks(lo, hi):
        x = _x(value, lo, hi)
        parts.append(f'<line x1="{x}" y1="68" x2="{x}" y2="72" stroke="#8c959f"/>')
        parts.append(
            f'<text class="tick" x="{x}" y="84" text-anchor="middle">{escape(_fmt(value))}</text>'
        )
    title = escape(
        f"{_TITLES[metric]}: baseline {_fmt(base)}, current {_fmt(cur)}, "
        f"allowed {side} {_fmt(limit)}"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>{title}</title>'
        + "".join(parts)
        + "</svg>"
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _charts(report: CheckReport, failed: set[str]) -> str:
    out = []
    for metric in _CHARTED:
        b, c = _number(report.baseline.get(metric)), _number(report.current.get(metric))
        if b is None or c is None:
            continue
        status = "fail" if metric in failed else "pass"
        out.append(
            f'<section id="{metric}"><h2>{escape(_TITLES[metric])} '
            f'<span class="{status}">{status}</span></h2>'
            f"{_chart(metric, b, c, report.tolerance_scale, metric in failed)}</section>"
        )
    return "".join(out)


def _summary(report: CheckReport) -> str:
    rows = []
    by_metric = {v.metric: v for v in report.comparison.violations}
    names = [
        name
        for name in (rule.metric for rule in RULES)
        if report.baseline.get(name) is not None or report.current.get(name) is not None
    ]
    names += [m for m in by_metric if m not in names]
    for name in names:
        v = by_metric.get(name)
        base = v.baseline if v else report.baseline.get(name)
        cur = v.current if v else report.current.get(name)
        status = "fail" if v else "pass"
        rule = v.rule if v else "within tolerance"
        rows.append(
            f'<tr><td>{escape(name)}</td><td class="n">{escape(_cell(base))}</td>'
            f'<td class="n">{escape(_cell(cur))}</td><td>{escape(rule)}</td>'
            f'<td class="{status}">{status}</td></tr>'
        )
    head = "<tr><th>Metric</th><th>Baseline</th><th>Current</th><th>Rule</th><th>Verdict</th></tr>"
    return "<table>" + head + "".join(rows) + "</table>"


def _cell(value: object) -> str:
    number = _number(value)
    return _fmt(number) if number is not None else ("–" if value is None else str(value))


def _trace(trace_id: str | None, url: str | None) -> str:
    if trace_id is None:
        return "–"
    ident = f"<code>{escape(trace_id)}</code>"
    link = trace_link(url, trace_id)
    return f'<a href="{escape(link)}" rel="noreferrer">{ident}</a>' if link else ident


def _diff(d: CaseDiff, url: str | None) -> str:
    checks = "".join(
        f"<li><code>{escape(t)}</code>" + (f": {escape(x)}" if x else "") + "</li>"
        for t, x in d.failed_checks
    )
    rows = ["<tr><th></th><th>baseline</th><th>current</th></tr>"]
    if d.baseline_trace or d.current_trace:
        rows.append(
            f"<tr><th>trace</th><td>{_trace(d.baseline_trace, url)}</td>"
            f"<td>{_trace(d.current_trace, url)}</td></tr>"
        )
    for r in d.rows:
        cls = " ".join(c for c, on in (("changed", r.changed), ("failing", r.failing)) if on)
        note = f' <span class="note">({escape(r.note)})</span>' if r.note else ""
        mark = "✗ " if r.failing else ""
        rows.append(
            f'<tr class="{cls}"><th>{mark}{escape(r.name)}</th>'
            f"<td>{escape(r.baseline)}</td><td>{escape(r.current)}{note}</td></tr>"
        )
    question = f"<p>Question: {escape(d.input)}</p>" if d.input else ""
    return (
        f'<section id="case-{escape(d.case_id)}" class="case"><h3>{escape(d.case_id)}</h3>'
        f"{question}<p>Failing checks:</p><ul>{checks}</ul>"
        f'<table class="diff">{"".join(rows)}</table></section>'
    )


def render_check_html(report: CheckReport) -> str:
    cmp = report.comparison
    passed = not cmp.violations
    verdict = "PASSED" if passed else "FAILED"
    failed = {v.metric for v in cmp.violations}
    flipped = ""
    if cmp.pass_to_fail:
        flipped = (
            f"<h2>Cases that went from pass to fail ({len(cmp.pass_to_fail)})</h2>"
            "<p>Baseline beside current; changed rows shaded, rows a failing check is "
            "about marked ✗.</p>" + "".join(_diff(d, report.trace_url) for d in report.diffs)
        )
        missing = [c for c in cmp.pass_to_fail if c not in {d.case_id for d in report.diffs}]
        if missing:
            flipped += (
                "<p>No recorded evidence (runs written before it was kept, or by "
                "trace2eval): " + escape(", ".join(missing)) + "</p>"
            )
    if cmp.within_noise:
        flipped += (
            "<p>Beyond the tolerance but within run-to-run noise (not a regression):</p>"
            "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in cmp.within_noise) + "</ul>"
        )
    if cmp.fail_to_pass:
        flipped += (
            f"<p>Cases that went from fail to pass ({len(cmp.fail_to_pass)}): "
            + escape(", ".join(cmp.fail_to_pass))
            + "</p>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>spanguard regression report</title>"
        f"<style>{_CSS}</style></head><body>"
        f'<h1>spanguard regression report: <span class="{"pass" if passed else "fail"}">'
        f"{verdict}</span></h1>"
        f"<p>Baseline <code>{escape(report.baseline_path)}</code> "
        f"({escape(_cell(report.baseline.get('total')))} cases), current "
        f"<code>{escape(report.current_path)}</code> "
        f"({escape(_cell(report.current.get('total')))} cases); tolerances × "
        f"{report.tolerance_scale:g}.</p>"
        + _summary(report)
        + _charts(report, failed)
        + flipped
        + "</body></html>\n"
    )
