"""Counterfactual fairness evaluation: suites, metrics, paired statistics, gate and reports.

Library first: :func:`load_suite` → observations (:func:`read_observations`, or
:func:`observation_from_trace`) → :func:`evaluate` → reports in :mod:`.reports`.
"""

from __future__ import annotations

from .evaluate import evaluate
from .gate import GATE_MODES, GateConfig
from .metrics import MetricDefinition, register_metric, register_record_metric
from .records import Observation, observation_from_record, observation_from_trace, read_observations
from .results import Evaluation, GroupStat, MetricResult
from .suite import (
    MetricConfig,
    Suite,
    Variant,
    load_suite,
    parse_suite,
    starter_suite,
    suite_variants,
)

__all__ = [
    "GATE_MODES",
    "Evaluation",
    "GateConfig",
    "GroupStat",
    "MetricConfig",
    "MetricDefinition",
    "MetricResult",
    "Observation",
    "Suite",
    "Variant",
    "evaluate",
    "load_suite",
    "observation_from_record",
    "observation_from_trace",
    "parse_suite",
    "read_observations",
    "register_metric",
    "register_record_metric",
    "starter_suite",
    "suite_variants",
]
