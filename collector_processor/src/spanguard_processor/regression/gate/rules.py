"""The regression gate's rules: one :class:`Rule` per aggregate figure of a run.

trace2eval 0.5.1's tolerances, each × ``tolerance_scale``: ``pass_rate``,
``format_compliance_rate`` and ``trace_compliance_rate`` may drop by 0.02, ``fallback_rate``
may rise by 0.02, p95 latency and mean cost may rise by 20 % of the baseline.
:mod:`.gate` applies them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ..checks import CheckFamily, CheckKind, check_types

__all__ = ["RULES", "TIMING_CHECKS", "Better", "Rule"]

TIMING_CHECKS = frozenset(ct.name for ct in check_types(CheckFamily.TIMING))
_TRACE_CHECKS = frozenset(ct.name for ct in check_types(CheckFamily.PROCESS, CheckFamily.TIMING))


class Better(StrEnum):
    """Which way a figure improves."""

    HIGHER = "higher"
    LOWER = "lower"


@dataclass(frozen=True)
class Rule:
    """One aggregate figure of a run and how the gate judges a change in it.

    A change beyond ``allowance`` (× the tolerance scale, × the baseline when ``relative``) is
    a regression only when it is also beyond run-to-run noise: for a *rate*, McNemar's test on
    the cases ``bad`` (from a failing case's failed check types) says is worse; for a *timing*
    figure, a case bootstrap of ``statistic`` over the per-case figure ``per_case``.
    ``latency_floor``: a rise below ``min_latency_change_ms`` is never a regression.
    """

    metric: str
    better: Better
    allowance: float
    relative: bool = False
    bad: Callable[[Sequence[str]], bool] | None = None
    per_case: str | None = None
    statistic: str | None = None
    latency_floor: bool = False

    @property
    def higher_is_better(self) -> bool:
        return self.better is Better.HIGHER

    def change(self, base: float, current: float) -> float:
        """How much worse ``current`` is than ``base`` (negative: better)."""
        return base - current if self.higher_is_better else current - base


def _any_case(checks: Sequence[str]) -> bool:
    return True


def _fell_back(checks: Sequence[str]) -> bool:
    return CheckKind.NOT_FALLBACK in checks


def _broke_format(checks: Sequence[str]) -> bool:
    return CheckKind.JSON in checks


def _broke_trace(checks: Sequence[str]) -> bool:
    return any(c in _TRACE_CHECKS for c in checks)


#: trace2eval 0.5.1's tolerances, in the order ``check`` lists them.
RULES: tuple[Rule, ...] = (
    Rule("pass_rate", Better.HIGHER, 0.02, bad=_any_case),
    Rule("format_compliance_rate", Better.HIGHER, 0.02, bad=_broke_format),
    Rule("fallback_rate", Better.LOWER, 0.02, bad=_fell_back),
    Rule(
        "p95_latency_ms",
        Better.LOWER,
        0.20,
        relative=True,
        per_case="latency_ms",
        statistic="p95",
        latency_floor=True,
    ),
    Rule("avg_cost_usd", Better.LOWER, 0.20, relative=True, per_case="cost_usd", statistic="mean"),
    Rule("trace_compliance_rate", Better.HIGHER, 0.02, bad=_broke_trace),
)
