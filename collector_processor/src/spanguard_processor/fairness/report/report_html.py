"""A self-contained HTML report: inline CSS and one inline SVG chart per metric, no scripts,
no fonts, no external assets. Every piece of text is escaped."""

from __future__ import annotations

import math
from html import escape

from ...common.charts import round_ticks
from ..gate.results import Evaluation, MetricResult, Verdict
from ..vocabulary import Direction
from .evidence_report import EVIDENCE_CSS, ReportOptions, evidence_html
from .verdict_text import (
    MEANINGS,
    gate_summary,
    interval_text,
    label,
    legend,
    metric_notes,
    reason,
    shown_warnings,
    verdict_counts,
)

__all__ = ["render_html"]

_PLOT = 426  # width of the plotting area
_LEFT = 190  # the narrowest label column; it widens for long (intersectional) group labels
_RIGHT = 24
_ROW = 22
_CHAR = 7.0  # a generous average glyph width of 12px system-ui, for sizing the label column

_COLOURS: dict[str, str] = {Verdict.PASS: "#1a7f37", Verdict.FAIL: "#cf222e"}
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1b1f24}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #d0d7de;padding:4px 8px}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.pass{color:#1a7f37}.fail{color:#cf222e}.inconclusive,.insufficient_data{color:#9a6700}
.no_signal,.report_only{color:#57606a}.note{color:#57606a}
section{margin:1.5rem 0;padding-top:.5rem;border-top:1px solid #d0d7de}
svg text{font-size:12px;fill:#1b1f24}svg text.tick{font-size:10px;fill:#57606a}
svg text.head{font-weight:600}.warn{color:#9a6700}h2 span{font-size:.8em}
"""


def _fmt(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    return f"{0.0 if abs(value) < 1e-12 else value:.4g}"  # no 6.9e-18 from float noise


def _scale(lo: float, hi: float) -> tuple[float, float]:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return 0.0, 1.0
    if hi - lo < 1e-12:
        pad = max(abs(hi), 1.0) * 0.1
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.08
    return lo - pad, hi + pad


def _x(value: float, lo: float, hi: float, left: float) -> float:
    return round(left + (value - lo) / (hi - lo) * _PLOT, 2)


def _row(
    label: str,
    y: float,
    point: float,
    low: float,
    high: float,
    lo: float,
    hi: float,
    colour: str,
    left: float,
) -> list[str]:
    x0, x1, xp = _x(low, lo, hi, left), _x(high, lo, hi, left), _x(point, lo, hi, left)
    return [
        f'<text x="{left - 8}" y="{y + 4}" text-anchor="end">{escape(label)}</text>',
        f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="{colour}" stroke-width="2"/>',
        f'<line x1="{x0}" y1="{y - 5}" x2="{x0}" y2="{y + 5}" stroke="{colour}"/>',
        f'<line x1="{x1}" y1="{y - 5}" x2="{x1}" y2="{y + 5}" stroke="{colour}"/>',
        f'<circle cx="{xp}" cy="{y}" r="4" fill="{colour}"/>',
    ]


def _axis(y: float, lo: float, hi: float, left: float) -> list[str]:
    """A light baseline with tick labels at round values of the scale."""
    parts = [f'<line x1="{left}" y1="{y}" x2="{left + _PLOT}" y2="{y}" stroke="#d0d7de"/>']
    for value in round_ticks(lo, hi):
        x = _x(value, lo, hi, left)
        parts.append(f'<line x1="{x}" y1="{y}" x2="{x}" y2="{y + 4}" stroke="#8c959f"/>')
        parts.append(
            f'<text class="tick" x="{x}" y="{y + 14}" text-anchor="middle">'
            f"{escape(_fmt(value))}</text>"
        )
    return parts


def _chart(r: MetricResult) -> str:
    """The score with its interval against the threshold, then each group's mean and interval."""
    ci = r.confidence_interval or (r.score, r.score)
    finite = [v for v in (*ci, r.score) if math.isfinite(v)]
    lo, hi = _scale(min(0.0, *finite, r.threshold), max(*finite, r.threshold))
    # an unbounded end runs to the plot's edge (the tables say why it is unbounded)
    ci = (ci[0] if math.isfinite(ci[0]) else lo, ci[1] if math.isfinite(ci[1]) else hi)
    colour = _COLOURS.get(r.verdict, "#9a6700")
    what = "gap (max − min)" if r.direction == Direction.LOWER else "score"
    labels = [f"{g.label} (n={g.records})" for g in r.groups]
    left = max(_LEFT, round(16 + _CHAR * max((len(t) for t in labels), default=0)))
    width = left + _PLOT + _RIGHT
    parts: list[str] = []
    y = 24.0
    tx = _x(r.threshold, lo, hi, left)
    parts += _row(what, y, r.score, ci[0], ci[1], lo, hi, colour, left)
    parts.append(
        f'<line x1="{tx}" y1="6" x2="{tx}" y2="{y + 10}" stroke="#57606a" stroke-dasharray="4 3"/>'
    )
    anchor, dx = ("end", -4) if tx > left + _PLOT - 90 else ("start", 4)
    parts.append(
        f'<text x="{tx + dx}" y="12" text-anchor="{anchor}">threshold '
        f"{escape(_fmt(r.threshold))}</text>"
    )
    parts += _axis(y + 12, lo, hi, left)
    y += 12 + 18
    if r.groups:
        glo, ghi = _scale(min(g.low for g in r.groups), max(g.high for g in r.groups))
        y += 16
        parts.append(
            f'<text class="head" x="{left - 8}" y="{y}" text-anchor="end">group means</text>'
        )
        for g, text in zip(r.groups, labels, strict=True):
            y += _ROW
            parts += _row(text, y, g.mean, g.low, g.high, glo, ghi, "#0969da", left)
        parts += _axis(y + 12, glo, ghi, left)
        y += 12 + 18
    height = int(y + 4)
    title = escape(f"{r.metric}: {what} {_fmt(r.score)} with its interval, and group means")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img"><title>{title}</title>'
        + "".join(parts)
        + "</svg>"
    )


def _verdict(r: MetricResult) -> str:
    text = label(r.verdict) + (
        " (optional, not gated)" if not r.gating and r.verdict == Verdict.NO_SIGNAL else ""
    )
    return f'<span class="{escape(r.verdict)}">{escape(text)}</span>'


def _summary_table(ev: Evaluation) -> str:
    rows = []
    for r in ev.results:
        silent = r.verdict == Verdict.NO_SIGNAL
        rows.append(
            f'<tr><td><a href="#{escape(r.metric)}">{escape(r.metric)}</a></td>'
            f'<td class="n">{"–" if silent else _fmt(r.score)}</td>'
            f'<td class="n">{"–" if silent else escape(interval_text(r))}</td>'
            f'<td class="n">{_fmt(r.threshold)} ({escape(r.direction)})</td>'
            f'<td class="n">{_fmt(r.p_value)}</td><td class="n">{_fmt(r.p_holm)}</td>'
            f'<td class="n">{_fmt(r.mde)}</td><td>{_verdict(r)}</td></tr>'
        )
    head = (
        "<tr><th>Metric</th><th>Score</th><th>Interval</th><th>Threshold</th><th>p</th>"
        "<th>p (Holm)</th><th>MDE</th><th>Verdict</th></tr>"
    )
    return "<table>" + head + "".join(rows) + "</table>"


def _section(r: MetricResult, options: ReportOptions) -> str:
    """A metric: its verdict and why, the notes a reader needs, its chart (none without
    signal: there is nothing to draw), warnings and evidence."""
    why = reason(r) or MEANINGS.get(r.verdict, "")
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in metric_notes(r))
    warnings = "".join(f'<p class="warn">⚠ {escape(w)}</p>' for w in shown_warnings(r))
    chart = (
        ""
        if r.verdict == Verdict.NO_SIGNAL
        else (f"{_chart(r)}<p>p-value: {escape(r.p_method or 'not applicable')}.</p>")
    )
    evidence = (
        "" if r.verdict == Verdict.NO_SIGNAL else evidence_html(r.metric, r.evidence, options)
    )
    return (
        f'<section id="{escape(r.metric)}"><h2>{escape(r.metric)} {_verdict(r)}</h2>'
        f"<p>{escape(why)}</p>{notes}{chart}{warnings}{evidence}</section>"
    )


def render_html(ev: Evaluation, options: ReportOptions | None = None) -> str:
    options = options or ReportOptions()
    cfg = ev.config
    verdict = "PASSED" if ev.passed else "FAILED"
    counts = ", ".join(f"{n} {label(v)}" for v, n in verdict_counts(ev.results).items() if n)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>spanguard fairness report</title>"
        f"<style>{_CSS}{EVIDENCE_CSS}</style></head><body>"
        f'<h1>spanguard fairness report: <span class="{"pass" if ev.passed else "fail"}">'
        f"{verdict}</span></h1>"
        f"<p>{escape(counts)}. Gate: {escape(gate_summary(ev))}.</p>"
        f"<p>Generated at {escape(ev.generated_at)}; {ev.variant_count} variants, "
        f"{ev.record_count} records, {ev.seeds} seeds. Gate <code>{escape(cfg.mode)}</code>"
        f", alpha {cfg.alpha:g}; {cfg.level:.0%} simultaneous intervals of the largest "
        f"difference between true group means (seed-cluster bootstrap-t, "
        f"{max(cfg.bootstrap_samples, 2000)} resamples).</p>"
        + _summary_table(ev)
        + f'<p class="note">{escape(legend(ev.results))}.</p>'
        + "".join(_section(r, options) for r in ev.results)
        + "</body></html>\n"
    )
