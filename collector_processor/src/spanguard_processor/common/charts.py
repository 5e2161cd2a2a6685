"""Helpers shared by the HTML reports' SVG charts (fairness and regression)."""

from __future__ import annotations

import math

__all__ = ["round_ticks"]


def round_ticks(lo: float, hi: float) -> list[float]:
    """Round values (steps of 1, 2, 2.5 or 5 times a power of ten) inside ``[lo, hi]``."""
    raw = (hi - lo) / 4
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]
