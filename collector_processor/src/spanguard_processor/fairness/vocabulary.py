"""The closed vocabularies of a fairness metric (string enums: JSON and text show the value).

Every stage reads these (the registry, the statistics, the gate, the reports), so they live
below all of them and import nothing.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Category", "Direction", "Kind", "Scale"]


class Kind(StrEnum):
    """How a metric is evaluated: GAP, a gap of group means over a value matrix (every
    built-in but two); STABILITY, counterfactual stability (per-seed similarities, report
    only); LEGACY_EXPOSURE, fairtrace's exposure formula (no interval)."""

    GAP = "gap"
    STABILITY = "stability"
    LEGACY_EXPOSURE = "legacy_exposure"


class Direction(StrEnum):
    """Which side of the threshold is good: LOWER (a gap) or HIGHER (a similarity)."""

    LOWER = "lower"
    HIGHER = "higher"


class Scale(StrEnum):
    """A metric's values: RATE in [0, 1], COUNT ≥ 0, REAL anything."""

    RATE = "rate"
    COUNT = "count"
    REAL = "real"


class Category(StrEnum):
    """The built-in metrics' report groups. A plugin may name its own category (the field is a
    string); ``compare`` files any category not listed here under OTHER."""

    TEXT = "Text"
    RAG = "RAG"
    AGENT = "Agent"
    OTHER = "Other"
