"""How a metric's per-attribute results read (several protected attributes): one line per
attribute on the console, a row under the metric's in Markdown, an ``attributes`` list in
report.json. A metric with one attribute has none of them, so its output is unchanged."""

from __future__ import annotations

from typing import Any

from ..gate.results import MetricResult
from .verdict_text import interval_text, label, number

__all__ = ["attribute_json", "attribute_lines", "attribute_rows"]


def _seeds(n: int, *, varying: bool = False) -> str:
    if n == 1:
        return "1 seed" + (" that varies it" if varying else "")
    return f"{n} seeds" + (" that vary it" if varying else "")


def attribute_lines(r: MetricResult) -> list[str]:
    """``gender: FAIL 1.0000 [0.9180, 1.0000] over 35 seeds — beyond threshold: …``."""
    return [
        f"{a.attribute}: {label(a.verdict)} {number(a.score)} {interval_text(a)} over "
        f"{_seeds(a.seeds, varying=True)} — {a.reason_text}"
        for a in r.attributes
    ]


def attribute_rows(r: MetricResult, status: Any) -> list[str]:
    """Markdown table rows, one per attribute, in the metric table's columns."""
    return [
        f"| ↳ {r.metric} · {a.attribute} ({_seeds(a.seeds)}) | {number(a.score)} | "
        f"{interval_text(a)} | {a.threshold:g} ({a.direction}) | {number(a.p_value)} | "
        f"{number(a.p_holm)} | {number(a.mde)} | {status(a)} |"
        for a in r.attributes
    ]


def attribute_json(r: MetricResult) -> list[dict[str, Any]]:
    """report.json's ``attributes`` of a metric: each attribute's contrast and verdict."""
    return [
        {
            "attribute": a.attribute,
            "score": a.score,
            "confidence_interval": list(a.confidence_interval) if a.confidence_interval else None,
            "p_value": a.p_value,
            "p_value_method": a.p_method,
            "p_value_threshold": a.p_threshold,
            "p_value_holm": a.p_holm,
            "minimum_detectable_effect": a.mde,
            "contrast_seeds": a.seeds,
            "units": a.units,
            "groups": [
                {
                    "group": g.label,
                    "mean": g.mean,
                    "low": g.low,
                    "high": g.high,
                    "records": g.records,
                }
                for g in a.groups
            ],
            "verdict": a.verdict,
            "verdict_reason": a.reason,
            "verdict_reason_text": a.reason_text,
            "seeds_needed": a.seeds_needed,
            "estimand": a.estimand,
            "warnings": list(a.warnings),
            "details": a.details,
        }
        for a in r.attributes
    ]
