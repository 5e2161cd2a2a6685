"""Coverage and missingness: which of the suite's variants hold a valid record, per metric.

A gate on partial data is only sound when what is missing does not depend on the group. The
suite's expected variants (:class:`ExpectedVariants`) give each group's coverage (the share of
its variants with a valid record) and the p-value of "missingness does not depend on the
group" (within-seed permutation, :func:`..stats.groups.missingness_p`); the gate fails a metric
on low coverage or dependent missingness unless partial data are allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..gate.config import GateConfig
from ..stats.groups import missingness_p

__all__ = ["ExpectedVariants"]


@dataclass(frozen=True)
class ExpectedVariants:
    """The suite's variants (id, seed, group) for coverage and the missingness test."""

    seed: NDArray[np.int64]
    group: NDArray[np.int64]
    group_labels: list[str]
    observed_index: NDArray[np.int64]  # each expected variant's index among observed ones, or -1
    n_seeds: int
    attributes: NDArray[np.int64] | None = None  # (observed groups, attributes) value indices

    @classmethod
    def build(
        cls,
        expected: Sequence[tuple[str, str, str]] | None,
        variant_labels: list[str],
        variant_idx: NDArray[np.int64],
        seed_idx: NDArray[np.int64],
        group_labels: list[str],
        group_idx: NDArray[np.int64],
        seed_labels: list[str],
    ) -> ExpectedVariants:
        if expected is None:  # the observed variants, straight from the index arrays
            n = len(variant_labels)
            if n == variant_idx.shape[0]:  # every record its own variant: no copies
                return cls(seed_idx, group_idx, list(group_labels), variant_idx, len(seed_labels))
            seed = np.zeros(n, dtype=np.int64)
            group = np.zeros(n, dtype=np.int64)
            seed[variant_idx[::-1]] = seed_idx[::-1]  # each variant's first record decides
            group[variant_idx[::-1]] = group_idx[::-1]
            return cls(
                seed, group, list(group_labels), np.arange(n, dtype=np.int64), len(seed_labels)
            )
        where = {v: i for i, v in enumerate(variant_labels)}
        seeds = {s: i for i, s in enumerate(seed_labels)}
        groups = {g: i for i, g in enumerate(group_labels)}
        labels = list(group_labels)
        for _, _, g in expected:
            if g not in groups:
                groups[g] = len(labels)
                labels.append(g)
        for _, s, _ in expected:
            seeds.setdefault(s, len(seeds))
        return cls(
            seed=np.array([seeds[s] for _, s, _ in expected], dtype=np.int64),
            group=np.array([groups[g] for _, _, g in expected], dtype=np.int64),
            group_labels=labels,
            observed_index=np.array([where.get(v, -1) for v, _, _ in expected], dtype=np.int64),
            n_seeds=len(seeds),
        )

    def covered(self, valid_variants: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Which expected variants hold at least one valid record."""
        has = np.zeros(int(self.observed_index.max(initial=-1)) + 2, dtype=bool)
        has[valid_variants[valid_variants < has.shape[0] - 1]] = True
        return np.asarray(has[self.observed_index], dtype=bool)  # index -1 hits the False pad

    def coverage(self, covered: NDArray[np.bool_]) -> dict[str, float]:
        n = np.bincount(self.group, minlength=len(self.group_labels))
        hit = np.bincount(
            self.group, weights=covered.astype(np.float64), minlength=len(self.group_labels)
        )
        return {
            label: float(hit[g] / n[g]) for g, label in enumerate(self.group_labels) if n[g] > 0
        }

    def missingness(self, covered: Sequence[NDArray[np.bool_]], cfg: GateConfig) -> float | None:
        """p-value of "missingness does not depend on the group" (a variant is missing when
        any tested metric lacks a valid record for it); None when nothing is missing."""
        if not covered:
            return None
        missing = ~np.logical_and.reduce(list(covered))
        return missingness_p(
            self.seed,
            self.group,
            missing,
            self.n_seeds,
            len(self.group_labels),
            cfg.permutation_samples,
            cfg.seed,
        )
