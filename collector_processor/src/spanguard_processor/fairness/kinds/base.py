"""What every metric kind's strategy works on and returns.

:class:`RecordIndex` is the run's records indexed once (each record's variant, seed and group,
with the suite's expected variants; the statistical design its valid records form, seeds and
groups, is the one ``Design``, :class:`..stats.seeds.Design`); :class:`Prepared` is one metric
after its kind's ``prepare``; :class:`KindStrategy` is the four steps a kind supplies (prepare,
bootstrap, result, evidence). Every value here is frozen: a step returns a new one instead of
filling in the last.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..design.suite import MetricConfig
from ..gate.config import GateConfig
from ..gate.results import MetricResult
from ..metrics import MetricDefinition, MetricValues
from ..metrics.signals import ObservationList
from ..records import Observation
from ..stats import inference
from .coverage import ExpectedVariants

__all__ = [
    "Attributes",
    "KindStrategy",
    "Prepared",
    "RecordIndex",
    "attribute_levels",
    "index_labels",
]


def index_labels(labels: Sequence[str]) -> tuple[list[str], NDArray[np.int64]]:
    """The distinct labels in first-seen order, and each label's index among them."""
    order: dict[str, int] = {}
    idx = np.fromiter(
        (order.setdefault(x, len(order)) for x in labels), dtype=np.int64, count=len(labels)
    )
    return list(order), idx


def _group_labels(observations: Sequence[Observation]) -> list[str]:
    # identical assignments are usually one shared dict: label each distinct object once
    cache: dict[int, str] = {}
    out = []
    for o in observations:
        key = id(o.assignments)
        label = cache.get(key)
        if label is None:
            label = cache[key] = o.group
        out.append(label)
    return out


def _variants(obs: Sequence[Observation]) -> tuple[list[str], NDArray[np.int64]]:
    """Variant labels and each record's variant index; without repeats (every record its own
    variant, the common case at scale) no dictionary of a million ids is built."""
    ids = obs.ids() if isinstance(obs, ObservationList) else [o.id for o in obs]
    if all(o.variant_id == i for o, i in zip(obs, ids, strict=True)):
        return ids, np.arange(len(ids), dtype=np.int64)
    return index_labels([o.variant_id for o in obs])


@dataclass(frozen=True)
class Attributes:
    """The protected attributes of a suite whose groups combine two or more of them."""

    names: tuple[str, ...]  # sorted
    values: tuple[tuple[str, ...], ...]  # per attribute, its value labels ("": not set)
    levels: NDArray[np.int64]  # (groups, attributes): each group's value index per attribute


def attribute_levels(
    assignments: Iterable[Mapping[str, str]], group_idx: NDArray[np.int64], n_groups: int
) -> Attributes | None:
    """Each group's value index per attribute, when groups combine two or more attributes
    (``assignments``: each record's, in the order of ``group_idx``)."""
    first: dict[int, Mapping[str, str]] = {}
    for a, g in zip(assignments, group_idx.tolist(), strict=False):
        if g not in first:
            first[g] = a
            if len(first) == n_groups:
                break
    names = sorted({k for a in first.values() for k in a})
    if len(names) < 2:
        return None
    out = np.zeros((n_groups, len(names)), dtype=np.int64)
    values = []
    for j, name in enumerate(names):
        labels, idx = index_labels([first[g].get(name, "") for g in range(n_groups)])
        out[:, j] = idx
        values.append(tuple(labels))
    return Attributes(tuple(names), tuple(values), out)


@dataclass(frozen=True, eq=False)
class RecordIndex:
    """The run's records indexed once: each record's variant, seed and group index (into the
    labels, in first-seen order), and the suite's expected variants (coverage, missingness and
    the groups' attribute levels)."""

    observations: Sequence[Observation]
    variant: NDArray[np.int64]
    seed: NDArray[np.int64]
    group: NDArray[np.int64]
    variant_labels: list[str]
    seed_labels: list[str]
    group_labels: list[str]
    expected: ExpectedVariants
    attributes: Attributes | None = None  # with two or more protected attributes

    @classmethod
    def build(
        cls, observations: Sequence[Observation], expected: Sequence[tuple[str, str, str]] | None
    ) -> RecordIndex:
        """Index ``observations``; ``expected`` lists the suite's variants as ``(variant id,
        seed id, group label)`` (None: the observed variants are the expected ones)."""
        group_labels, group = index_labels(_group_labels(observations))
        seed_labels, seed = index_labels([o.seed_id for o in observations])
        variant_labels, variant = _variants(observations)
        plan = ExpectedVariants.build(
            expected, variant_labels, variant, seed, group_labels, group, seed_labels
        )
        attributes = attribute_levels(
            (o.assignments for o in observations), group, len(group_labels)
        )
        return cls(
            observations,
            variant,
            seed,
            group,
            variant_labels,
            seed_labels,
            group_labels,
            replace(plan, attributes=None if attributes is None else attributes.levels),
            attributes,
        )

    @property
    def records(self) -> int:
        """The run's records (every one matched to the suite, valid for a metric or not)."""
        return len(self.observations)

    @property
    def n_variants(self) -> int:
        return len(self.variant_labels)

    @property
    def n_seeds(self) -> int:
        return len(self.seed_labels)

    @property
    def n_groups(self) -> int:
        return len(self.group_labels)

    def units(self, values: MetricValues) -> inference.Units:
        """A metric's variant units, built when needed and dropped after (a million-variant
        run would otherwise hold a copy per metric)."""
        keep = values.valid
        if bool(keep.all()) and self.n_variants == self.variant.shape[0]:
            # every record is its own variant: the units are the records themselves
            return inference.Units(
                values.values,
                self.seed,
                self.group,
                np.ones(1, dtype=np.int64).repeat(self.n_variants),
                self.n_seeds,
                self.n_groups,
            )
        return inference.variant_units(
            self.variant[keep],
            self.seed[keep],
            self.group[keep],
            values.values[keep],
            self.n_variants,
            self.n_seeds,
            self.n_groups,
        )


@dataclass(frozen=True, kw_only=True, eq=False)
class Prepared:
    """One metric after its kind's ``prepare``: the score and details every kind reports;
    ``covered`` (gap metrics) says which expected variants hold a valid record for it."""

    config: MetricConfig
    definition: MetricDefinition
    score: float
    details: dict[str, Any]
    covered: NDArray[np.bool_] | None = None

    def base(self, design: RecordIndex) -> dict[str, Any]:
        """The result fields every kind fills the same way."""
        d = self.definition
        return {
            "metric": d.name,
            "threshold": self.config.threshold,
            "direction": d.direction,
            "category": d.category,
            "records": design.records,
            "optional": self.config.optional,
        }


P = TypeVar("P", bound=Prepared)


class KindStrategy(Generic[P]):
    """How one metric kind is evaluated: ``prepare`` reads the records once, ``bootstrap``
    resamples every metric of the kind together (one stream of seed draws), ``result`` gives
    the estimate, interval and p-value, ``evidence`` the counterfactual pairs behind it.
    ``gap_between_groups``: its metrics measure a gap between groups, so a suite's design has a
    minimum detectable effect for them (``spanguard suite plan``)."""

    gap_between_groups = False

    def prepare(self, config: MetricConfig, definition: MetricDefinition, design: RecordIndex) -> P:
        raise NotImplementedError

    def bootstrap(self, prepared: Sequence[P], design: RecordIndex, cfg: GateConfig) -> list[P]:
        """No resampling of its own: the kind's intervals come from its ``result``."""
        return list(prepared)

    def result(
        self, prepared: P, design: RecordIndex, cfg: GateConfig, p_missing: float | None
    ) -> MetricResult:
        raise NotImplementedError

    def evidence(
        self, result: MetricResult, prepared: P, design: RecordIndex, pairs: int
    ) -> MetricResult:
        """No evidence: ``result`` unchanged."""
        return result
