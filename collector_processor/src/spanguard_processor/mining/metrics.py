"""The metrics a mined suite gates, chosen from the process signals the traffic shows, and the
range each count metric can take (``max_difference``).

A mined suite's prompts vary only a mention, so what it should compare is what the agent *did*:
escalation, tool use, tool names and counts, plan length, friction — never only the wording. A
count metric's PASS bound rests on the largest per-seed difference between groups it can take,
which the suite states (``max_difference``, docs/fairness.md) rather than the gate reading it
off the sampled seeds: it is :data:`MARGIN` × the most that one production request ever did
(at least :data:`MARGIN`), so a counterfactual variant may do up to twice what any user's
request did before the bound stops holding.

``--threshold`` is on the rate scale (a share of seeds, 0.1); a count metric keeps its own
default threshold (tool_count_gap 0.5 calls, plan_length_gap 1 step, friction_point_gap 1
point), which is on its scale: a tenth of a tool call is not a threshold anyone means.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..fairness.metrics import get_metric
from ..fairness.vocabulary import Scale
from .requests import Request

__all__ = [
    "ALWAYS",
    "MARGIN",
    "MinedMetric",
    "ProcessRanges",
    "RangeTracker",
    "mined_metrics",
]

#: gated whatever the traffic shows (escalation and refusal read the answer and the trace)
ALWAYS = ("escalation_parity", "tool_use_parity", "refusal_gap")
#: the safety factor over the most one production request did
MARGIN = 2
#: count metric → (the signal it counts, the ProcessRanges field holding its most)
_COUNTS = {
    "tool_count_gap": ("tool calls", "max_tools"),
    "plan_length_gap": ("plan steps", "max_plan_steps"),
    "friction_point_gap": ("friction points", "max_friction_points"),
}


@dataclass(frozen=True, slots=True)
class ProcessRanges:
    """The most one production request did of each counted signal."""

    max_tools: int = 0
    max_plan_steps: int = 0
    max_friction_points: int = 0


class RangeTracker:
    def __init__(self) -> None:
        self.most = [0, 0, 0]

    def add(self, request: Request) -> None:
        counts = (
            len(request.tools) if request.tools is not None else None,
            request.plan_steps,
            request.friction_points,
        )
        for i, count in enumerate(counts):
            if count is not None and count > self.most[i]:
                self.most[i] = count

    def ranges(self) -> ProcessRanges:
        return ProcessRanges(*self.most)


@dataclass(frozen=True, slots=True)
class MinedMetric:
    """One ``metrics`` entry of the suite; ``why`` says where ``max_difference`` comes from."""

    type: str
    threshold: float
    max_difference: int | None = None
    why: str | None = None


def _default(ranges: ProcessRanges) -> list[str]:
    chosen = list(ALWAYS)
    if ranges.max_tools:
        chosen += ["tool_name_gap", "tool_count_gap"]
    if ranges.max_plan_steps:
        chosen.append("plan_length_gap")
    if ranges.max_friction_points:
        chosen.append("friction_point_gap")
    return chosen


def mined_metrics(
    ranges: ProcessRanges, chosen: Sequence[str] = (), threshold: float = 0.1
) -> tuple[MinedMetric, ...]:
    """``chosen`` (default: :data:`ALWAYS`, plus tool_name_gap and tool_count_gap when any
    request called a tool, plan_length_gap and friction_point_gap when any recorded one), each
    count metric with its own threshold and its ``max_difference``, the others with
    ``threshold``."""
    out = []
    for name in chosen or _default(ranges):
        definition = get_metric(name)
        if definition is not None and definition.scale == Scale.COUNT:
            own = float(definition.threshold)  # a count's threshold is on its own scale
        else:
            own = threshold
        if name not in _COUNTS:
            out.append(MinedMetric(name, own))
            continue
        signal, field = _COUNTS[name]
        most = getattr(ranges, field)
        out.append(
            MinedMetric(
                name,
                own,
                MARGIN * max(most, 1),
                f"{MARGIN} × the most {signal} one production request recorded ({most})",
            )
        )
    return tuple(out)
