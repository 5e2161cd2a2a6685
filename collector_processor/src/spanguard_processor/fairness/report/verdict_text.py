"""How a verdict reads: one vocabulary for the console, Markdown, HTML, JUnit and history.

Every metric ends in one of four outcomes (docs/fairness.md, "what PASS means"): PASS (the
data show the gap within the threshold), FAIL (they show it beyond), INCONCLUSIVE (neither)
and NO_SIGNAL (no record carries what the metric reads). The renderers say them with the
same words, built here from a :class:`~.results.MetricResult`:

* an interval never shows an infinite bound: it says what bounds it (a rate's scale) or why
  nothing does (a count has no maximum);
* "underpowered" is never listed on a decisive FAIL (the suite was large enough to fail);
* a NO_SIGNAL metric says what it reads and what was seen instead (its ``diagnosis``);
* an INCONCLUSIVE one says how many seeds the suite would need (``seeds_needed``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..gate.results import LEANS_FAIL, Evaluation, MetricResult, Verdict, tolerable
from ..metrics.registry import get_metric
from ..vocabulary import Scale

__all__ = [
    "MEANINGS",
    "bound_note",
    "gate_summary",
    "interval_text",
    "label",
    "legend",
    "metric_notes",
    "not_gated",
    "number",
    "reason",
    "shown_warnings",
    "tolerated",
    "verdict_counts",
]

MEANINGS: dict[str, str] = {
    Verdict.PASS: "the data show the gap within the threshold",
    Verdict.FAIL: "the data show the gap beyond the threshold",
    Verdict.INCONCLUSIVE: "the data show neither: the interval straddles the threshold, or "
    "lies beyond it while the test adjusted across the run's metrics (Holm) does not reject "
    "(leans FAIL)",
    Verdict.NO_SIGNAL: "no record carries what the metric reads",
    Verdict.REPORT_ONLY: "reported, never gating",
}
_ORDER = (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE, Verdict.NO_SIGNAL)


def label(verdict: str) -> str:
    """``"no_signal"`` → ``"NO_SIGNAL"``: any verdict in capitals, an older report's too
    (``insufficient_data``)."""
    return str(verdict).upper()


def number(value: float | None, digits: int = 4) -> str:
    """A finite number with ``digits`` decimals, else an en dash."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}"


def _scale(r: MetricResult) -> str | None:
    definition = get_metric(r.metric)
    return getattr(definition, "scale", None) if definition is not None else None


def _upper(r: MetricResult, high: float) -> tuple[float | None, str]:
    """The upper bound to print and, when the interval's own bound is infinite, why."""
    if math.isfinite(high):
        return high, ""
    if _scale(r) == Scale.RATE:
        return 1.0, "the upper bound 1 is the rate scale's maximum: the data bound it no lower"
    return None, (
        f"no finite upper bound: the gap has no maximum on its scale and "
        f"{r.seeds} seed(s) do not bound it"
    )


def interval_text(r: MetricResult, digits: int = 4) -> str:
    """``[low, high]``, with ``unbounded`` in place of an infinite upper bound (never ``inf``);
    an en dash when there is no interval."""
    ci = r.confidence_interval
    if ci is None:
        return "–"
    low, high = ci
    upper, _ = _upper(r, high)
    lower = number(low, digits) if math.isfinite(low) else "unbounded"
    return f"[{lower}, {number(upper, digits) if upper is not None else 'unbounded'}]"


def bound_note(r: MetricResult) -> str:
    """Why the printed interval has no (or only the scale's) upper bound; "" when it has one."""
    ci = r.confidence_interval
    return "" if ci is None else _upper(r, ci[1])[1]


_INF_BOUND = re.compile(r"upper bound inf ≥ [^,;)]+")
_INF = re.compile(r"(?<![\w.])-?inf(?![\w])")


def reason(r: MetricResult) -> str:
    """The gate's reason for the verdict as a reader needs it: no "underpowered" remark on a
    FAIL, no ``inf`` (an infinite bound reads "no finite upper bound"), and for a NO_SIGNAL
    metric what it reads (:func:`metric_notes` gives what was seen instead)."""
    if r.verdict == Verdict.NO_SIGNAL:
        return f"no record carries {r.signal or 'what this metric reads'}"
    text = r.reason_text
    if r.verdict == Verdict.FAIL:
        text = text.replace(" (underpowered)", "").replace("; underpowered", "")
    text = _INF_BOUND.sub("no finite upper bound", text)
    return _INF.sub("unbounded", text)


def shown_warnings(r: MetricResult) -> tuple[str, ...]:
    """The warnings worth showing beside the verdict: "underpowered" is dropped where the
    suite was large enough to decide (a FAIL) or where there was nothing to measure."""
    if r.verdict in (Verdict.FAIL, Verdict.NO_SIGNAL, Verdict.REPORT_ONLY):
        return tuple(w for w in r.warnings if not w.startswith("underpowered"))
    return r.warnings


def metric_notes(r: MetricResult) -> list[str]:
    """What a reader needs beside the verdict and its reason: what a NO_SIGNAL metric saw
    instead (its diagnosis), the suite size an INCONCLUSIVE one would need (unless the reason
    says it), and why an interval has no finite upper bound."""
    notes: list[str] = []
    if r.verdict == Verdict.NO_SIGNAL:
        if r.diagnosis:
            notes.append(r.diagnosis)
        if r.optional:
            notes.append("optional: reported, not gated")
        return notes
    if (
        r.verdict == Verdict.INCONCLUSIVE
        and r.seeds_needed is not None
        and f"{r.seeds_needed} seeds" not in r.reason_text
    ):
        notes.append(
            f"needs about {r.seeds_needed} seeds (this suite has {r.seeds}) for "
            f"its MDE to reach the threshold {r.threshold:g}"
        )
    note = bound_note(r)
    if note:
        notes.append(note)
    return notes


def tolerated(ev: Evaluation) -> list[MetricResult]:
    """INCONCLUSIVE gating metrics that ``allow_inconclusive`` let through."""
    if not getattr(ev.config, "allow_inconclusive", False):
        return []
    return [r for r in ev.results if r.gating and tolerable(r) and not r.passed]


def not_gated(ev: Evaluation) -> list[MetricResult]:
    """Optional metrics without signal: reported, not gated (report-only metrics, which
    never gate, are not listed)."""
    return [r for r in ev.results if not r.gating and r.verdict == Verdict.NO_SIGNAL]


def verdict_counts(results: Sequence[MetricResult]) -> dict[str, int]:
    """How many metrics ended in each outcome, the four outcomes first."""
    counts = {str(v): 0 for v in _ORDER}
    for r in results:
        counts[str(r.verdict)] = counts.get(str(r.verdict), 0) + 1
    return counts


def legend(results: Sequence[MetricResult]) -> str:
    """What each outcome present means, in order: ``PASS: the data show …; FAIL: …``."""
    present = {str(r.verdict) for r in results}
    text = "; ".join(
        f"{label(v)}: {MEANINGS[v]}" for v in (*_ORDER, Verdict.REPORT_ONLY) if v in present
    )
    if present & {str(Verdict.FAIL), str(Verdict.INCONCLUSIVE), str(Verdict.PASS)}:
        text += (
            ". Intervals are each metric's own (unadjusted) bounds, the ones PASS uses; FAIL "
            "also needs the Holm-adjusted p below alpha"
        )
    return text


def gate_summary(ev: Evaluation) -> str:
    """``PASSED`` or ``FAILED: a, b (INCONCLUSIVE), c (NO_SIGNAL)`` — a FAIL is named alone,
    any other blocking verdict with its label — plus what was allowed or not gated."""
    by_name = {r.metric: r for r in ev.results}
    parts = []
    for name in ev.failed_metrics:
        r = by_name.get(name)
        parts.append(
            name
            if r is None or r.verdict == Verdict.FAIL
            else f"{name} ({label(r.verdict)}{', leans FAIL' if r.reason == LEANS_FAIL else ''})"
        )
    text = "PASSED" if ev.passed else "FAILED" + (f": {', '.join(parts)}" if parts else "")
    allowed = tolerated(ev)
    if allowed:
        text += f"; {len(allowed)} INCONCLUSIVE allowed by `allow_inconclusive`: " + ", ".join(
            r.metric for r in allowed
        )
    skipped = not_gated(ev)
    if skipped:
        text += "; not gated (optional, NO_SIGNAL): " + ", ".join(r.metric for r in skipped)
    return text
