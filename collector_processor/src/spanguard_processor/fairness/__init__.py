"""Counterfactual fairness evaluation: suites, metrics, paired statistics, gate and reports.

Library first: :func:`load_suite` → observations (:func:`read_observations`, or
:func:`observation_from_trace`) → :func:`evaluate` → reports (:func:`write_reports`). From a
sufficient-statistics table instead of records (an engine's, or observations reduced as they
stream: :mod:`.stream`): :func:`evaluate_sufficient`.

The subpackages follow the data path: :mod:`.design` (the suite, its variants and its power
before any app call) → :mod:`.run` (the app over the variants, in-process) → :mod:`.records`
(one observation per request) → :mod:`.metrics` (the registry and the built-in metrics) →
:mod:`.kinds` (how each metric kind is evaluated over one :class:`~.kinds.RecordIndex`) →
:mod:`.stats` (intervals, tests, bounds: pure numpy) → :mod:`.gate` (verdicts) →
:mod:`.report` (report files, comparisons, history). :func:`evaluate` orchestrates the
middle; :mod:`.pipeline` chains matching, evaluation and gate; :mod:`.testing` is
``assert_fair``.
"""

from __future__ import annotations

from .design.suite import (
    MetricConfig,
    Suite,
    Variant,
    load_suite,
    parse_suite,
    starter_suite,
    suite_variants,
)
from .evaluate import evaluate
from .evaluate_table import evaluate_sufficient
from .gate.config import GATE_MODES, GateConfig
from .gate.results import Evaluation, MetricResult, Verdict
from .metrics import MetricDefinition, register_metric, register_record_metric
from .records import Observation, observation_from_record, observation_from_trace, read_observations
from .report.reports import write_reports
from .stats.groups import GroupStat

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
    "Verdict",
    "evaluate",
    "evaluate_sufficient",
    "load_suite",
    "observation_from_record",
    "observation_from_trace",
    "parse_suite",
    "read_observations",
    "register_metric",
    "register_record_metric",
    "starter_suite",
    "suite_variants",
    "write_reports",
]
