"""The metrics: the registry (:mod:`.registry`: what a metric is, how one is registered and
found) with every built-in in it (:mod:`.builtin`, registered on import of this package), the
per-record signals they read (:mod:`.signals`), which records carry them (:mod:`.diagnosis`)
and fairtrace's exact formulas (:mod:`.compat`).

Import the registry's functions from here: this package registers the built-ins first.
"""

from __future__ import annotations

from .builtin import BUILTIN_METRICS, FAIRTRACE_METRICS
from .registry import (
    Compute,
    MetricDefinition,
    MetricValues,
    get_metric,
    metric_names,
    register_metric,
    register_record_metric,
    unregister_metric,
)

__all__ = [
    "BUILTIN_METRICS",
    "FAIRTRACE_METRICS",
    "Compute",
    "MetricDefinition",
    "MetricValues",
    "get_metric",
    "metric_names",
    "register_metric",
    "register_record_metric",
    "unregister_metric",
]
