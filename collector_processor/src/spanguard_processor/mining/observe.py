"""``suite mine --observe``: the production requests' own process, by detected attribute value.

These are *observational* differences: the requests that mention a value are also different
requests (people ask different things), so a gap here is confounded and is never a verdict. It
says where to point the counterfactual suite, which holds the request fixed and varies only the
mention. Each rate carries a 95% Wilson interval over the requests that hold the signal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .swap import Mention

__all__ = ["ObservedGroup", "ObservedRate", "Observer", "observe_lines"]

_Z = 1.959963984540054
SIGNALS = ("escalation", "tool_use", "refusal")


@dataclass(frozen=True, slots=True)
class ObservedRate:
    signal: str
    hits: int
    known: int  # requests that carry the signal

    @property
    def rate(self) -> float:
        return self.hits / self.known if self.known else 0.0

    def interval(self) -> tuple[float, float]:
        """95% Wilson interval of the rate."""
        n = self.known
        if n == 0:
            return 0.0, 1.0
        p = self.hits / n
        centre = (p + _Z * _Z / (2 * n)) / (1 + _Z * _Z / n)
        half = _Z / (1 + _Z * _Z / n) * math.sqrt(p * (1 - p) / n + _Z * _Z / (4 * n * n))
        return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True, slots=True)
class ObservedGroup:
    attribute: str
    value: str
    requests: int
    rates: tuple[ObservedRate, ...]


class Observer:
    """Counts per (attribute, value) over every request with a single value of it."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], list[int]] = {}

    def add(
        self,
        mentions: Sequence[Mention],
        escalated: bool | None,
        tools: int | None,
        refused: bool | None,
    ) -> None:
        values: dict[str, set[str]] = {}
        for m in mentions:
            values.setdefault(m.attribute, set()).add(m.value)
        for attribute, found in values.items():
            if len(found) != 1:
                continue  # two people, or a misreading: no single value to file it under
            row = self.counts.setdefault((attribute, next(iter(found))), [0] * 7)
            row[0] += 1
            for i, signal in enumerate((escalated, None if tools is None else tools > 0, refused)):
                if signal is not None:
                    row[1 + 2 * i] += int(signal)
                    row[2 + 2 * i] += 1

    def groups(self) -> tuple[ObservedGroup, ...]:
        return tuple(
            ObservedGroup(
                attribute,
                value,
                row[0],
                tuple(
                    ObservedRate(s, row[1 + 2 * i], row[2 + 2 * i]) for i, s in enumerate(SIGNALS)
                ),
            )
            for (attribute, value), row in sorted(self.counts.items())
        )


def observe_lines(groups: Sequence[ObservedGroup]) -> list[str]:
    """The console table, headed by what it is and is not."""
    if not groups:
        return ["observational view: no request mentions a protected attribute."]
    lines = [
        "observational view (production requests by the attribute they mention; "
        "confounded by what people ask — not a fairness verdict, a map of where to point "
        "the counterfactual suite):",
        f"  {'attribute':<12} {'value':<16} {'requests':>8}  "
        + "  ".join(f"{s:<22}" for s in SIGNALS),
    ]
    for g in groups:
        cells = []
        for r in g.rates:
            lo, hi = r.interval()
            cells.append(
                f"{r.rate:6.1%} [{lo:.0%}, {hi:.0%}]".ljust(22)
                if r.known
                else "no signal".ljust(22)
            )
        lines.append(f"  {g.attribute:<12} {g.value:<16} {g.requests:>8}  " + "  ".join(cells))
    return lines
