"""Case diffs as text: Markdown sections, JUnit ``<failure>`` bodies and console lines."""

from __future__ import annotations

from collections.abc import Sequence

from ...common.markdown import md_inert
from ...common.tracelinks import trace_link
from ..gate.diff import CaseDiff

__all__ = ["console_lines", "diffs_markdown", "junit_text"]


def _md(text: str) -> str:
    return md_inert(text)  # app text inert: no link, image or HTML


def _cell(text: str, note: str = "") -> str:
    return _md(text) + (f" (**{_md(note)}**)" if note else "")


def _trace(trace_id: str | None, url: str | None) -> str:
    if trace_id is None:
        return "–"
    link = trace_link(url, trace_id)
    return f"[`{trace_id}`]({link})" if link else f"`{trace_id}`"


def _traces(d: CaseDiff, url: str | None) -> str:
    if not (d.baseline_trace or d.current_trace):
        return ""
    return (
        f"Traces: baseline {_trace(d.baseline_trace, url)}, current {_trace(d.current_trace, url)}."
    )


def diffs_markdown(diffs: Sequence[CaseDiff], trace_url: str | None = None) -> str:
    """One section per flipped case: failing checks, then baseline beside current."""
    if not diffs:
        return ""
    lines = [
        "## Cases that went from pass to fail",
        "",
        "Baseline beside current; rows that changed in bold, rows a failing check is "
        "about marked ❌.",
    ]
    for d in diffs:
        lines += ["", f"### {_md(d.case_id)}", ""]
        if d.input:
            lines.append(f"Question: {_md(d.input)}")
        traces = _traces(d, trace_url)
        if traces:
            lines.append(traces)
        lines += ["", "Failing checks:"]
        lines += [
            f"- ❌ `{_md(t)}`" + (f": {_md(detail)}" if detail else "")
            for t, detail in d.failed_checks
        ]
        lines += ["", "| | baseline | current |", "|---|---|---|"]
        for r in d.rows:
            name = f"❌ {r.name}" if r.failing else r.name
            if r.changed:
                lines.append(
                    f"| **{_md(name)}** | **{_md(r.baseline)}** | **{_cell(r.current, r.note)}** |"
                )
            else:
                lines.append(f"| {_md(name)} | {_md(r.baseline)} | {_md(r.current)} |")
    return "\n".join(lines) + "\n"


def junit_text(d: CaseDiff, trace_url: str | None = None) -> str:
    """The body of a pass→fail case's ``<failure>``: checks, then each changed signal."""
    lines = [f"failed: {t}" + (f" ({detail})" if detail else "") for t, detail in d.failed_checks]
    for r in d.rows:
        if r.changed or r.failing:
            mark = "!" if r.failing else " "
            note = f"  [{r.note}]" if r.note else ""
            lines.append(f"{mark} {r.name}: baseline {r.baseline} | current {r.current}{note}")
    if d.baseline_trace or d.current_trace:
        base = trace_link(trace_url, d.baseline_trace) or d.baseline_trace or "–"
        cur = trace_link(trace_url, d.current_trace) or d.current_trace or "–"
        lines.append(f"traces: baseline {base}, current {cur}")
    return "\n".join(lines)


def console_lines(diffs: Sequence[CaseDiff]) -> list[str]:
    return [f"  {d.case_id}: {d.summary}" for d in diffs]
