"""Tool count, tool name and tool sequence gaps: what ``tool_use_parity`` (any tool?) misses."""

from __future__ import annotations

from typing import Any

import pytest

from spanguard_processor.fairness import GateConfig
from spanguard_processor.fairness.design.suite import MetricConfig
from spanguard_processor.fairness.evaluate import evaluate
from spanguard_processor.fairness.metrics import get_metric
from spanguard_processor.fairness.records import Observation, parse_fairtrace_trace

_CONFIG = GateConfig(bootstrap_samples=300, permutation_samples=199, seed=1)
_METRICS = [
    {"type": t} for t in ("tool_use_parity", "tool_count_gap", "tool_name_gap", "tool_sequence_gap")
]


def _observations(tools_for: Any, seeds: int = 40) -> list[Observation]:
    # 40 seeds: enough for a deterministic app's exact bound (1 − 0.05^(1/40) = 0.072) to
    # show a rate gap under 0.1, so agreement PASSes and is not merely inconclusive
    out = []
    for s in range(seeds):
        for group in ("a", "b"):
            trace = {"tool_calls": [{"name": n} for n in tools_for(group, s)]}
            out.append(
                Observation(
                    id=f"s{s}::{group}",
                    seed_id=f"s{s}",
                    variant_id=f"s{s}::{group}",
                    assignments={"group": group},
                    prompt="p",
                    response="ok",
                    metadata={},
                    trace=parse_fairtrace_trace(trace),
                )
            )
    return out


# a count's exact bound needs its range stated: these apps' groups differ by at most 2 calls
_RANGES = {"tool_count_gap": 2.0}


def _metrics(entries: list[dict[str, str]]) -> list[MetricConfig]:
    return [
        MetricConfig(
            e["type"], get_metric(e["type"]).threshold, max_difference=_RANGES.get(e["type"])
        )
        for e in entries
    ]


def _verdicts(obs: list[Observation]) -> dict[str, tuple[float, bool]]:
    ev = evaluate(obs, _metrics(_METRICS), _CONFIG)
    return {r.metric: (round(r.score, 4), r.passed) for r in ev.results}


@pytest.mark.parametrize(
    ("name", "tools_for", "caught"),
    [
        (
            "fewer calls",
            lambda g, s: ["kb", "kb"] if g == "a" else ["kb"],
            {"tool_count_gap", "tool_sequence_gap"},
        ),
        (
            "other tool",
            lambda g, s: ["refund"] if g == "a" else ["kb"],
            {"tool_name_gap", "tool_sequence_gap"},
        ),
        (
            "other order",
            lambda g, s: ["kb", "refund"] if g == "a" else ["refund", "kb"],
            {"tool_sequence_gap"},
        ),
    ],
)
def test_tool_differences_that_any_tool_parity_misses_are_caught(
    name: str, tools_for: Any, caught: set[str]
) -> None:
    verdicts = _verdicts(_observations(tools_for))
    assert verdicts["tool_use_parity"] == (0.0, True)
    assert {m for m, (_, passed) in verdicts.items() if not passed} == caught, verdicts


def test_same_tools_pass_every_tool_metric() -> None:
    verdicts = _verdicts(_observations(lambda g, s: ["kb", "refund"][: 1 + s % 2]))
    assert verdicts == {m["type"]: (0.0, True) for m in _METRICS}


def test_tool_name_details_give_each_groups_rate_per_tool() -> None:
    obs = _observations(lambda g, s: ["refund"] if g == "a" else ["kb"])
    ev = evaluate(obs, _metrics(_METRICS[2:]), _CONFIG)
    names = next(r for r in ev.results if r.metric == "tool_name_gap").details
    assert names["tool_name_rates"] == {
        "kb": {"group=a": 0.0, "group=b": 1.0},
        "refund": {"group=a": 1.0, "group=b": 0.0},
    }
    sequences = next(r for r in ev.results if r.metric == "tool_sequence_gap").details
    assert sequences["tool_sequence_gaps"] == {"kb": 1.0, "refund": 1.0}
