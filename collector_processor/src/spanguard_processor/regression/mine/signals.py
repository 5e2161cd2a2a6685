"""Signals and scores: which log rows are worth a case (trace2eval 0.5.1, §1.2 of the spec)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..case import Signal
from ..checks import CheckKind, percentile
from ..text_checks import looks_like_json
from ..vocabulary import FeedbackLabel, SignalName
from .loader import Row

__all__ = [
    "MIN_COSTLY_EXCESS_USD",
    "MIN_SLOW_EXCESS_MS",
    "QUALITY_SIGNALS",
    "WEIGHTS",
    "LogContext",
    "Signal",
    "build_context",
    "compute_signals",
    "score",
    "short_boundary",
]

WEIGHTS: dict[SignalName, float] = {
    SignalName.NEGATIVE_FEEDBACK: 3.0,
    SignalName.USER_RETRIED: 2.5,
    SignalName.EMPTY_OUTPUT: 3.0,
    SignalName.EXPECTED_SHAPE_VIOLATED: 3.0,
    SignalName.FALLBACK_PHRASE: 2.0,
    SignalName.EXPLICIT_EXPECTATION: 2.0,
    SignalName.OUTPUT_MUCH_SHORTER: 1.5,
    SignalName.OUTPUT_MUCH_LONGER: 1.0,
    SignalName.SLOW_RESPONSE: 1.0,
    SignalName.EXPENSIVE_CALL: 1.0,
}
#: Signals that mean "something already went wrong on this row" (a failure seed).
QUALITY_SIGNALS = frozenset(
    {
        SignalName.NEGATIVE_FEEDBACK,
        SignalName.USER_RETRIED,
        SignalName.EMPTY_OUTPUT,
        SignalName.FALLBACK_PHRASE,
        SignalName.EXPECTED_SHAPE_VIOLATED,
        SignalName.OUTPUT_MUCH_SHORTER,
    }
)
_SHORT_RATIO = 0.5
_LONG_RATIO = 3.0
_MIN_PLAUSIBLE = 12
#: A request is "slow" only this far above the log's p95 (the same floor as `check`'s smallest
#: latency change): below it the machine's scheduling noise decides, and trace2eval's rule
#: flags the slowest of any few sub-millisecond requests ("0ms above p95 0ms").
MIN_SLOW_EXCESS_MS = 10.0
#: A call is "expensive" only when the excess shows at the printed precision ($0.000001).
MIN_COSTLY_EXCESS_USD = 0.000001


@dataclass(frozen=True, slots=True)
class LogContext:
    """Log-wide baselines; ``median_chars`` keeps :func:`statistics.median`'s int/float type."""

    p95_latency_ms: float | None
    p95_cost_usd: float | None
    median_chars: float


def build_context(rows: Sequence[Row]) -> LogContext:
    latencies = [r.latency_ms for r in rows if r.latency_ms is not None]
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    chars = [r.chars for r in rows if r.chars > 0]
    return LogContext(
        p95_latency_ms=percentile(latencies, 0.95),
        p95_cost_usd=percentile(costs, 0.95),
        median_chars=statistics.median(chars) if chars else 0.0,
    )


def short_boundary(median: float) -> int | None:
    """The length an output fell below to be flagged too short (the weak-reference floor)."""
    if median <= 0:
        return None
    return math.ceil(min(median * _SHORT_RATIO, _MIN_PLAUSIBLE * 2))


def compute_signals(row: Row, context: LogContext) -> list[Signal]:
    signals: list[Signal] = []

    def add(name: SignalName, detail: str) -> None:
        signals.append(Signal(name, WEIGHTS[name], detail))

    if row.feedback == FeedbackLabel.NEGATIVE:
        add(SignalName.NEGATIVE_FEEDBACK, "user gave negative feedback")
    if row.retried:
        add(SignalName.USER_RETRIED, "the same request was retried")
    chars = row.chars
    median = context.median_chars
    if chars == 0:
        add(SignalName.EMPTY_OUTPUT, "model returned an empty response")
    else:
        if row.fallback:
            add(SignalName.FALLBACK_PHRASE, f"output contains {row.fallback!r}")
        if median > 0 and chars < median * _SHORT_RATIO and chars < _MIN_PLAUSIBLE * 2:
            add(SignalName.OUTPUT_MUCH_SHORTER, f"{chars} chars vs log median {median:.0f}")
        elif median > 0 and chars > median * _LONG_RATIO:
            add(SignalName.OUTPUT_MUCH_LONGER, f"{chars} chars vs log median {median:.0f}")
    if row.expect:
        add(SignalName.EXPLICIT_EXPECTATION, "trace already carried an expectation block")
        if row.expect.get(CheckKind.JSON) and not looks_like_json(row.output):
            add(SignalName.EXPECTED_SHAPE_VIOLATED, "expected JSON output, got something else")
    p95 = context.p95_latency_ms
    if (
        p95 is not None
        and row.latency_ms is not None
        and row.latency_ms - p95 >= MIN_SLOW_EXCESS_MS
    ):
        add(SignalName.SLOW_RESPONSE, f"{row.latency_ms:.0f}ms above p95 {p95:.0f}ms")
    p95c = context.p95_cost_usd
    if (
        p95c is not None
        and row.cost_usd is not None
        and row.cost_usd - p95c >= MIN_COSTLY_EXCESS_USD
    ):
        add(SignalName.EXPENSIVE_CALL, f"${row.cost_usd:.6f} above p95 ${p95c:.6f}")
    return signals


def score(signals: Sequence[Signal]) -> float:
    return round(sum(s.weight for s in signals), 3)
