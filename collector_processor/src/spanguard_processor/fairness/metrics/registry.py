"""The metric registry: what a metric is, and how one is registered and found.

A metric turns the observations into a value matrix once (records × columns, plus which records
are valid for it, :class:`MetricValues`); the statistics do the rest. The built-in metrics
register themselves in :mod:`.builtin` (import that module, not this one, to see them); plugins
call :func:`register_metric` or :func:`register_record_metric`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from spanguard.exceptions import SuiteError

from ..records import Observation
from ..vocabulary import Category, Direction, Kind, Scale

__all__ = [
    "Category",
    "Compute",
    "Direction",
    "Kind",
    "MetricDefinition",
    "MetricValues",
    "Scale",
    "get_metric",
    "metric_names",
    "number",
    "register_metric",
    "register_record_metric",
    "unregister_metric",
]


@dataclass(frozen=True)
class MetricValues:
    """Per-record values of one metric: ``values`` (n, C), ``valid`` (n,), column labels."""

    values: NDArray[np.float64]
    valid: NDArray[np.bool_]
    columns: tuple[str, ...] = ("value",)
    score_source: str | None = None
    missing_field_records: int = 0


Compute = Callable[[Sequence[Observation], Mapping[str, Any]], MetricValues]


@dataclass(frozen=True, kw_only=True)
class MetricDefinition:
    """A registered metric. ``compute`` maps observations and the suite entry's options to values.

    ``detail_key`` names fairtrace's per-group dict in ``details`` (e.g. ``rates``);
    ``missing_key`` its counter of records with a missing or empty field (None for text metrics).
    ``scale`` is "rate" (values in [0, 1]), "count" (values ≥ 0) or "real": it bounds intervals
    and sets the worst-case variance; None infers it from the values. ``signal`` names what the
    metric reads, one of :data:`~.diagnosis.SIGNALS` (e.g. "tool calls", "output text"); the
    evaluation counts the records carrying it (``MetricResult.signal_records``) and, when none
    does, says why. "" (custom metrics): not counted.
    """

    name: str
    threshold: float
    direction: Direction
    compute: Compute
    category: str = Category.OTHER
    kind: Kind = Kind.GAP
    detail_key: str = "rates"
    missing_key: str | None = None
    options: frozenset[str] = field(default_factory=frozenset)
    scale: Scale | None = None
    signal: str = ""


_REGISTRY: dict[str, MetricDefinition] = {}


def register_metric(definition: MetricDefinition) -> MetricDefinition:
    """Add a metric type; a name can be registered once."""
    if not definition.name or not definition.name.strip():
        raise ValueError("a metric name must be a non-empty string")
    if definition.name in _REGISTRY:
        raise ValueError(f"the metric type {definition.name!r} is already registered")
    _REGISTRY[definition.name] = definition
    return definition


def register_record_metric(
    name: str,
    scorer: Callable[[dict[str, Any]], object],
    *,
    threshold: float,
    direction: Direction = Direction.LOWER,
    category: str = Category.OTHER,
) -> MetricDefinition:
    """Register a custom gap metric from a per-record scorer.

    ``scorer(record)`` gets the fairtrace scenario record and returns a number or a boolean,
    or None to leave the record out; the gap of group means is tested like every built-in.
    """

    def compute(obs: Sequence[Observation], options: Mapping[str, Any]) -> MetricValues:
        values = np.zeros((len(obs), 1))
        valid = np.ones(len(obs), dtype=bool)
        for i, o in enumerate(obs):
            raw = scorer(o.record())
            if raw is None:
                valid[i] = False
                continue
            values[i, 0] = number(raw, f"the {name} scorer", o.id)
        return MetricValues(values, valid, score_source="evaluator")

    return register_metric(
        MetricDefinition(
            name=name, threshold=threshold, direction=direction, compute=compute, category=category
        )
    )


def unregister_metric(name: str) -> None:
    """Remove a registered metric type (for tests and plugins that reload)."""
    _REGISTRY.pop(name, None)


def get_metric(name: str) -> MetricDefinition | None:
    return _REGISTRY.get(name)


def metric_names() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def number(raw: object, what: str, record_id: str, *, unit: bool = False) -> float:
    """A hook's or field's value as a finite float (booleans as 0/1; ``unit``: in [0, 1]);
    anything else is a :class:`SuiteError` naming ``what`` and the record."""
    if isinstance(raw, bool | np.bool_):
        return 1.0 if raw else 0.0
    if isinstance(raw, int | float | np.integer | np.floating):
        value = float(raw)
        if not math.isfinite(value):
            raise SuiteError(
                f"{what} returned {value} for record '{record_id}'; return a finite number."
            )
        if unit and not 0.0 <= value <= 1.0:
            raise SuiteError(
                f"{what} returned {value} for record '{record_id}'; "
                "return a boolean or a number between 0 and 1."
            )
        return value
    raise SuiteError(
        f"{what} returned {raw!r} for record '{record_id}'; return a boolean or a number."
    )
