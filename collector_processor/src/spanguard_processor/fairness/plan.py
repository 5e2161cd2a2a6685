"""A suite's power before the run: each metric's design MDE and the seeds it would need.

From the suite alone (seeds × groups × repeats, each metric's scale and threshold), before any
app call: the design MDE of :mod:`.stats.power` (a fair app's upper bound of the gap falls below it
4 times in 5, at the worst-case variance of the metric's scale; PASS needs the bound below
the threshold), a warning where it exceeds twice the threshold, and the seeds a noisy and a
deterministic app would need to PASS. ``spanguard suite plan`` prints it; ``run`` and
``fairness`` print it before they start. Pure: no I/O, no click.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass

from .design.suite import Suite
from .kinds import strategy
from .metrics import get_metric
from .records import group_label
from .stats.power import (
    COUNT_VARIANCE,
    RATE_VARIANCE,
    design_mde,
    deterministic_seeds,
    seeds_needed,
)
from .vocabulary import Direction, Scale

__all__ = ["MetricPlan", "SuitePlan", "plan_lines", "plan_suite"]

#: a design MDE above this multiple of the threshold is flagged (the issue's "underpowered")
WARN_FACTOR = 2.0
_TOO_FEW = "fewer than 2 seeds hold two groups: nothing can PASS"


@dataclass(frozen=True)
class MetricPlan:
    """One metric's design power: ``mde`` None when the design cannot be judged before the run
    (``note`` says why) or when no gap on the metric's scale would be detected."""

    metric: str
    threshold: float
    scale: Scale
    optional: bool
    mde: float | None
    seeds_needed: int | None = None  # for the MDE to reach the threshold (a noisy app)
    deterministic_seeds: int | None = None  # for a deterministic fair app's exact bound
    note: str = ""

    @property
    def underpowered(self) -> bool:
        """True when the design MDE exceeds twice the threshold (or no gap is detected)."""
        if self.note:
            return self.note == _TOO_FEW
        return self.mde is None or self.mde > WARN_FACTOR * self.threshold


@dataclass(frozen=True)
class SuitePlan:
    """The suite's design and every metric's plan, in suite order."""

    seeds: int
    groups: int
    per_group: int
    repeats: int
    variants: int
    alpha: float
    metrics: tuple[MetricPlan, ...]

    @property
    def underpowered(self) -> tuple[MetricPlan, ...]:
        return tuple(m for m in self.metrics if m.underpowered)


def _design(suite: Suite) -> tuple[int, int, int]:
    """(seeds holding two or more groups, groups, fewest variants of a group in such a seed)."""
    cells = Counter((v.seed_id, group_label(v.assignments)) for v in suite.variants)
    by_seed: dict[str, list[int]] = {}
    for (seed, _), count in cells.items():
        by_seed.setdefault(seed, []).append(count)
    contrasted = {s: counts for s, counts in by_seed.items() if len(counts) >= 2}
    groups = len({label for (_, label) in cells})
    per_group = min((min(c) for c in contrasted.values()), default=1)
    return len(contrasted), groups, per_group


def plan_suite(
    suite: Suite, repeats: int = 1, alpha: float = 0.05, power: float = 0.8
) -> SuitePlan:
    """Every metric's design MDE on ``suite`` with ``repeats`` calls per variant.

    PASS claims every gating metric is within its threshold (an intersection–union test), so
    each metric is planned at α itself. Several variants of a group in one seed average into
    that seed's group mean, dividing the worst-case variance by their number."""
    seeds, groups, per_group = _design(suite)
    plans = []
    for m in suite.metrics:
        definition = get_metric(m.type)
        assert definition is not None  # the suite was validated
        scale = definition.scale or Scale.REAL
        plan = functools.partial(MetricPlan, m.type, m.threshold, scale, m.optional)
        if (
            not strategy(definition.kind).gap_between_groups
            or definition.direction != Direction.LOWER
        ):
            plans.append(plan(None, note="not a gap between groups: no design MDE"))
            continue
        if definition.scale is None:
            plans.append(plan(None, note="scale known only from the data"))
            continue
        exact = _exact_seeds(m.threshold, scale, m.max_difference, alpha)
        if seeds < 2 or groups < 2:
            plans.append(plan(None, deterministic_seeds=exact, note=_TOO_FEW))
            continue
        worst = (RATE_VARIANCE if scale == Scale.RATE else COUNT_VARIANCE) / per_group
        mde = design_mde(seeds, groups, repeats, scale, m.threshold, alpha, power, variance=worst)
        needed = seeds_needed(
            groups, repeats, scale, m.threshold, alpha, power, observed=worst / max(repeats, 1)
        )
        plans.append(plan(mde, needed, exact))
    return SuitePlan(seeds, groups, per_group, repeats, len(suite.variants), alpha, tuple(plans))


def _exact_seeds(
    threshold: float, scale: Scale, max_difference: float | None, alpha: float
) -> int | None:
    """Seeds a deterministic fair app needs for the exact bound: M = 1 for rates, the stated
    ``max_difference`` for counts; None for a count with none (it cannot PASS that way)."""
    if scale == Scale.RATE:
        return deterministic_seeds(threshold, alpha)
    if max_difference is None:
        return None
    return deterministic_seeds(threshold, alpha, max_difference)


_NO_RANGE = "state max_difference"


def _exact_text(p: MetricPlan) -> str:
    return _NO_RANGE if p.deterministic_seeds is None else str(p.deterministic_seeds)


def _mde_text(p: MetricPlan) -> str:
    if p.note:
        return "–"
    if p.mde is None or not math.isfinite(p.mde):
        return "beyond the scale"
    return f"{p.mde:.3f}"


def plan_lines(plan: SuitePlan) -> list[str]:
    """The plan as a table: a design line, one row per metric, a warning per weak metric."""
    reps = "repeat" if plan.repeats == 1 else "repeats"
    per = f" ({plan.per_group} variants of each group per seed)" if plan.per_group > 1 else ""
    names = [p.metric + (" (optional)" if p.optional else "") for p in plan.metrics]
    width = max([len("metric"), *map(len, names)])
    lines = [
        f"design: {plan.seeds} seeds × {plan.groups} groups × {plan.repeats} {reps}{per}, "
        f"{plan.variants * plan.repeats} app calls",
        f"{'metric':<{width}} {'scale':<6} {'threshold':>9} {'design MDE':>16}  "
        "seeds to PASS (noisy / deterministic app)",
    ]
    for p, name in zip(plan.metrics, names, strict=True):
        if p.note:
            needed = p.note
        else:
            noisy = f"{p.seeds_needed:,}" if p.seeds_needed is not None else "?"
            needed = f"{noisy} / {_exact_text(p)}"
        lines.append(f"{name:<{width}} {p.scale:<6} {p.threshold:>9g} {_mde_text(p):>16}  {needed}")
    lines.append(
        f"design MDE: a fair app's upper bound of the gap falls below it 4 times in 5 "
        f"(α = {plan.alpha:g}), at the worst-case variance of the metric's scale; "
        "PASS needs the bound below the threshold."
    )
    for p in plan.metrics:
        if p.scale != Scale.RATE and p.deterministic_seeds is None and not p.note:
            lines.append(
                f"note: {p.metric}: a count with no stated max_difference (the largest per-seed "
                "difference between groups it can take): an app whose seeds all agree on it "
                "stays INCONCLUSIVE; state it under the metric to let such an app PASS."
            )
    for p in plan.underpowered:
        if p.note:
            exact = (
                f"{p.deterministic_seeds} seeds would let a deterministic app PASS, more a "
                "noisy one"
                if p.deterministic_seeds is not None
                else "a noisy app needs more seeds, a deterministic one a stated max_difference"
            )
            lines.append(f"warning: {p.metric}: {p.note}; {exact}.")
            continue
        what = (
            f"design MDE {_mde_text(p)} exceeds {WARN_FACTOR:g} × its threshold {p.threshold:g}"
            if p.mde is not None
            else f"its design MDE is beyond the scale (threshold {p.threshold:g})"
        )
        lines.append(
            f"warning: {p.metric}: {what}: a noisy app will hardly PASS it "
            f"(INCONCLUSIVE instead); about {p.seeds_needed:,} seeds would, or "
            + (
                f"{p.deterministic_seeds} for a deterministic app."
                if p.deterministic_seeds is not None
                else "for a deterministic app a stated max_difference."
            )
        )
    return lines
