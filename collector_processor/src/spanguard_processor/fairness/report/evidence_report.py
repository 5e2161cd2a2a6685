"""Counterfactual pairs in the reports: JSON objects, Markdown tables and HTML tables.

``ReportOptions`` carries what only the report writer knows: a trace-viewer URL template
(``--trace-url``, e.g. ``http://localhost:16686/trace/{trace_id}``) and ``redact`` (drop prompts
and responses). Every string that reaches HTML is escaped; links are plain ``<a href>`` with
an http(s) URL, nothing is fetched when the page opens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from ...common.markdown import md_text
from ...common.tracelinks import trace_link, validate_template
from ..gate.results import CounterfactualPair, Variant
from ..kinds.evidence import SIGNAL_NAMES, prompt_segments

__all__ = ["ReportOptions", "evidence_html", "evidence_json", "evidence_markdown"]


@dataclass(frozen=True)
class ReportOptions:
    """How reports show evidence: ``trace_url`` holds ``{trace_id}``; ``redact`` drops text."""

    trace_url: str | None = None
    redact: bool = False

    def __post_init__(self) -> None:
        validate_template(self.trace_url)

    def link(self, trace_id: str | None) -> str | None:
        return trace_link(self.trace_url, trace_id)


# --- JSON -------------------------------------------------------------------------------------


def _variant_json(v: Variant, side: str, options: ReportOptions) -> dict[str, Any]:
    out: dict[str, Any] = {
        "side": side,
        "group": v.group,
        "assignments": dict(v.assignments),
        "record_id": v.record_id,
        "variant_id": v.variant_id,
        "value": v.value,
        "trace_id": v.trace_id,
    }
    link = options.link(v.trace_id)
    if link is not None:
        out["trace_url"] = link
    if not options.redact:
        if v.prompt is not None:
            out["prompt"] = v.prompt
        if v.response is not None:
            out["response_excerpt"] = v.response
    out["signals"] = None if v.signals is None else dict(v.signals)
    return out


def evidence_json(
    pairs: tuple[CounterfactualPair, ...], options: ReportOptions
) -> list[dict[str, Any]]:
    return [
        {
            "seed_id": p.seed_id,
            "column": p.column,
            "difference": p.difference,
            "summary": p.summary,
            "differing_signals": [
                s for s in p.differing if not (options.redact and s == "response")
            ],
            "variants": [
                _variant_json(p.high, "high", options),
                _variant_json(p.low, "low", options),
            ],
        }
        for p in pairs
    ]


# --- shared wording ---------------------------------------------------------------------------


def _docs(docs: list[Mapping[str, Any]]) -> str:
    return ", ".join(f"{d['id'] or '?'} ({d['group'] or '–'}) #{d['rank']}" for d in docs) or "none"


def _signal_text(name: str, value: Any) -> str:
    if name == "escalated":
        return "yes" if value else "no"
    if name == "escalation_reason":
        return str(value) if value else "–"
    if name == "retrieved_documents":
        return _docs(value)
    if name == "tool_calls":
        return " → ".join(value) if value else "none"
    return "; ".join(value) if value else "none"


_LABELS = {
    "escalated": "escalated",
    "escalation_reason": "escalation reason",
    "friction_points": "friction points",
    "tool_calls": "tool calls (in order)",
    "plan_steps": "plan steps",
    "retrieved_documents": "retrieved documents (rank)",
}


def _rows(p: CounterfactualPair) -> list[tuple[str, str, str, bool]]:
    """(label, high, low, differs) for every signal; differing ones are marked."""
    hs, ls = p.high.signals, p.low.signals
    rows = []
    if hs is None or ls is None:
        rows.append(
            (
                "process trace",
                "recorded" if hs else "missing",
                "recorded" if ls else "missing",
                True,
            )
        )
        return rows
    for name in SIGNAL_NAMES:
        rows.append(
            (
                _LABELS[name],
                _signal_text(name, hs[name]),
                _signal_text(name, ls[name]),
                name in p.differing,
            )
        )
    return rows


def _value(v: float) -> str:
    return f"{0.0 if abs(v) < 1e-12 else v:.4g}"


# --- Markdown ---------------------------------------------------------------------------------


def _md(text: str) -> str:
    """A Markdown table cell: app text inert (no link, image, HTML), one line."""
    return md_text(text)


def _condense(segments: list[tuple[str, bool]], words: int = 4) -> list[tuple[str, bool]]:
    """Only the changed runs with a few words of context each side (long prompts stay short
    in a step summary); elided text becomes "…"."""
    out: list[tuple[str, bool]] = []
    for i, (text, changed) in enumerate(segments):
        if changed:
            out.append((text, True))
            continue
        tokens = text.split(" ")
        after = i > 0  # follows a change: keep its first words
        before = i + 1 < len(segments)  # precedes a change: keep its last words
        if len(tokens) <= 2 * words + 1 or not (after or before):
            out.append((text, False))
            continue
        head = " ".join(tokens[:words]) + " … " if after else "… "
        tail = " ".join(tokens[-words:]) if before else ""
        out.append((head + tail if before else head.rstrip(" …") + " …", False))
    return out


def _md_prompt(segments: list[tuple[str, bool]]) -> str:
    out = []
    for text, changed in _condense(segments):
        core = text.strip()
        if changed and core:
            lead = text[: len(text) - len(text.lstrip())]
            tail = text[len(text.rstrip()) :]
            out.append(f"{_md(lead)}**{_md(core)}**{_md(tail)}")
        else:
            out.append(_md(text))
    return "".join(out)


def _md_trace(v: Variant, options: ReportOptions) -> str:
    if v.trace_id is None:
        return f"`{_md(v.record_id)}`"
    link = options.link(v.trace_id)
    ident = f"`{_md(v.trace_id)}`"
    return f"[{ident}]({link})" if link else ident


def evidence_markdown(
    metric: str, pairs: tuple[CounterfactualPair, ...], options: ReportOptions
) -> list[str]:
    """A section per metric: one table per pair, differing signals in bold."""
    if not pairs:
        return []
    lines = ["", f"### {metric}: counterfactual pairs", ""]
    for n, p in enumerate(pairs, 1):
        column = f" ({p.column})" if p.column else ""
        lines += [
            f"{n}. seed `{_md(p.seed_id)}`{column}: {_md(p.summary)} "
            f"(within-seed difference {_value(p.difference)})",
            "",
        ]
        lines += [f"| | {_md(p.high.group)} | {_md(p.low.group)} |", "|---|---|---|"]
        lines.append(f"| trace | {_md_trace(p.high, options)} | {_md_trace(p.low, options)} |")
        lines.append(f"| {metric} | {_value(p.high.value)} | {_value(p.low.value)} |")
        if not options.redact and p.high.prompt is not None and p.low.prompt is not None:
            a, b = prompt_segments(p.high.prompt, p.low.prompt)
            lines.append(f"| prompt | {_md_prompt(a)} | {_md_prompt(b)} |")
        for label, h, lo, differs in _rows(p):
            if differs:
                lines.append(f"| **{label}** | **{_md(h)}** | **{_md(lo)}** |")
        if (
            not options.redact
            and "response" in p.differing
            and p.high.response is not None
            and p.low.response is not None
        ):
            lines.append(f"| **response** | {_md(p.high.response)} | {_md(p.low.response)} |")
        lines.append("")
    return lines


# --- HTML -------------------------------------------------------------------------------------

EVIDENCE_CSS = """
table.pair{table-layout:fixed;width:100%;max-width:1100px;margin:.5rem 0 1rem}
table.pair td,table.pair th{overflow-wrap:anywhere;vertical-align:top;text-align:left}
table.pair th:first-child{width:11rem}
table.pair tr.diff td,table.pair tr.diff th{background:#fff8c5}
mark{background:#ffd8b5;padding:0 1px}p.pairhead{margin:.75rem 0 .25rem}
code{font-size:.9em}
"""


def _html_prompt(segments: list[tuple[str, bool]]) -> str:
    return "".join(
        f"<mark>{escape(t)}</mark>" if changed and t.strip() else escape(t)
        for t, changed in segments
    )


def _html_trace(v: Variant, options: ReportOptions) -> str:
    if v.trace_id is None:
        return f"record <code>{escape(v.record_id)}</code>"
    ident = f"<code>{escape(v.trace_id)}</code>"
    link = options.link(v.trace_id)
    return f'<a href="{escape(link)}" rel="noreferrer">{ident}</a>' if link else ident


def _html_pair(metric: str, n: int, p: CounterfactualPair, options: ReportOptions) -> str:
    column = f" ({escape(p.column)})" if p.column else ""
    head = (
        f'<p class="pairhead"><b>{n}. seed <code>{escape(p.seed_id)}</code>{column}</b>: '
        f"{escape(p.summary)} (within-seed difference {_value(p.difference)})</p>"
    )
    rows = [
        f"<tr><th></th><th>{escape(p.high.group)}</th><th>{escape(p.low.group)}</th></tr>",
        f"<tr><th>trace</th><td>{_html_trace(p.high, options)}</td>"
        f"<td>{_html_trace(p.low, options)}</td></tr>",
        f"<tr><th>{escape(metric)}</th><td>{_value(p.high.value)}</td>"
        f"<td>{_value(p.low.value)}</td></tr>",
    ]
    if not options.redact and p.high.prompt is not None and p.low.prompt is not None:
        a, b = prompt_segments(p.high.prompt, p.low.prompt)
        rows.append(f"<tr><th>prompt</th><td>{_html_prompt(a)}</td><td>{_html_prompt(b)}</td></tr>")
    for label, h, lo, differs in _rows(p):
        cls = ' class="diff"' if differs else ""
        rows.append(
            f"<tr{cls}><th>{escape(label)}</th><td>{escape(h)}</td><td>{escape(lo)}</td></tr>"
        )
    if not options.redact and p.high.response is not None and p.low.response is not None:
        cls = ' class="diff"' if "response" in p.differing else ""
        rows.append(
            f"<tr{cls}><th>response (excerpt)</th><td>{escape(p.high.response)}</td>"
            f"<td>{escape(p.low.response)}</td></tr>"
        )
    return head + '<table class="pair">' + "".join(rows) + "</table>"


def evidence_html(
    metric: str, pairs: tuple[CounterfactualPair, ...], options: ReportOptions
) -> str:
    if not pairs:
        return ""
    body = "".join(_html_pair(metric, n, p, options) for n, p in enumerate(pairs, 1))
    return (
        f'<div class="evidence"><h3>Counterfactual pairs behind {escape(metric)}</h3>'
        "<p>The seeds contributing most to the gap: the same prompt for two groups, "
        "signals that differ highlighted.</p>" + body + "</div>"
    )
