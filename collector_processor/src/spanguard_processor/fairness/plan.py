"""A suite's power before the run: each metric's design MDE and the seeds it would need.

From the suite alone (seeds × groups × repeats, each metric's scale and threshold), before any
app call: the smallest true gap the gate would detect 4 times in 5 when the app shows no
variation of its own (the worst-case variance of the metric's scale), and, where that is more
than twice the threshold, how many seeds would bring it there. ``spanguard suite plan`` prints
it; ``run`` and ``fairness`` print it before they start. Pure: no I/O, no click.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from .design import design_mde, seeds_needed
from .metrics import get_metric
from .records import group_label
from .suite import Suite

__all__ = ["MetricPlan", "SuitePlan", "plan_lines", "plan_suite"]

#: a design MDE above this multiple of the threshold is flagged (the issue's "underpowered")
WARN_FACTOR = 2.0


@dataclass(frozen=True)
class MetricPlan:
    """One metric's design power: ``mde`` None when the design cannot be judged before the run
    (``note`` says why) or when no gap on the metric's scale would be detected."""

    metric: str
    threshold: float
    scale: str
    optional: bool
    mde: float | None
    seeds_needed: int | None = None
    note: str = ""

    @property
    def underpowered(self) -> bool:
        """True when the design MDE exceeds twice the threshold (or no gap is detected)."""
        if self.note:
            return False
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


def plan_suite(suite: Suite, repeats: int = 1, alpha: float = 0.05,
               power: float = 0.8) -> SuitePlan:
    """Every metric's design MDE on ``suite`` with ``repeats`` calls per variant.

    α is split over the suite's metrics as the gate's Holm step does at its strictest, so the
    figure is the one the gate's own MDE shows for an app without variation."""
    seeds, groups, per_group = _design(suite)
    level = alpha / max(len(suite.metrics), 1)
    plans = []
    for m in suite.metrics:
        definition = get_metric(m.type)
        assert definition is not None  # the suite was validated
        scale = definition.scale or "real"
        if definition.kind != "gap" or definition.direction != "lower":
            plans.append(MetricPlan(m.type, m.threshold, scale, m.optional, None,
                                    note="not a gap between groups: no design MDE"))
            continue
        if definition.scale is None:
            plans.append(MetricPlan(m.type, m.threshold, scale, m.optional, None,
                                    note="scale known only from the data"))
            continue
        if seeds < 1 or groups < 2:
            plans.append(MetricPlan(m.type, m.threshold, scale, m.optional, None,
                                    note="no seed holds two groups: nothing to compare"))
            continue
        mde = design_mde(scale, m.threshold, seeds, groups, per_group=per_group,
                         repeats=repeats, alpha=level, power=power)
        plan = MetricPlan(m.type, m.threshold, scale, m.optional, mde)
        if plan.underpowered:
            needed = seeds_needed(scale, m.threshold, groups, per_group=per_group,
                                  repeats=repeats, alpha=level, power=power)
            plan = MetricPlan(m.type, m.threshold, scale, m.optional, mde, needed)
        plans.append(plan)
    return SuitePlan(seeds, groups, per_group, repeats, len(suite.variants), level,
                     tuple(plans))


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
        f"{'metric':<{width}} {'scale':<6} {'threshold':>9} {'design MDE':>16}  seeds needed",
    ]
    for p, name in zip(plan.metrics, names, strict=True):
        if p.note:
            needed = p.note
        elif p.underpowered:
            needed = (f"{p.seeds_needed}" if p.seeds_needed is not None
                      else "more than 100,000")
        else:
            needed = "enough"
        lines.append(f"{name:<{width}} {p.scale:<6} {p.threshold:>9g} {_mde_text(p):>16}  {needed}")
    lines.append(f"MDE: the true gap the gate detects 4 times in 5 at α = {plan.alpha:.3g} "
                 "per metric, at the worst-case variance of the metric's scale.")
    for p in plan.underpowered:
        what = (f"design MDE {_mde_text(p)} exceeds {WARN_FACTOR:g} × its threshold "
                f"{p.threshold:g}" if p.mde is not None else
                f"no gap on its scale is detected 4 times in 5 (threshold {p.threshold:g})")
        more = (f"about {p.seeds_needed} seeds would bring the MDE to {WARN_FACTOR:g} × "
                "threshold" if p.seeds_needed is not None
                else "no suite up to 100,000 seeds would bring the MDE there")
        lines.append(f"warning: {p.metric}: {what}: this suite can hardly show it within the "
                     f"threshold; {more}.")
    return lines
