"""Verdicts out as OpenTelemetry: ``gen_ai.evaluation.result`` log records over OTLP.

:mod:`.events` turns an evaluation (fairness metrics and their counterfactual pairs) or a case
run's outcomes into :class:`~.events.EvaluationEvent` s (pure); :mod:`.otlp` sends them through
the OpenTelemetry Logs SDK and its OTLP/HTTP or OTLP/gRPC log exporter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.lazy import lazy_exports

if TYPE_CHECKING:
    from .events import EvaluationEvent, case_events, fairness_events
    from .otlp import emit_events

__all__ = [
    "EvaluationEvent",
    "case_events",
    "emit_events",
    "fairness_events",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EvaluationEvent": ".events",
        "case_events": ".events",
        "emit_events": ".otlp",
        "fairness_events": ".events",
    },
)
