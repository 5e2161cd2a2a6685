"""A mined suite gates the process signals its traffic shows, each count metric with the range
it can take (issue 47, item 8)."""

from __future__ import annotations

from pathlib import Path

import yaml
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.mining.metrics import ProcessRanges, mined_metrics

from .traffic import record

_TEXTS = ["Can my wife open a savings account for the kids?"] * 3 + [
    "Can my husband open a savings account for the kids?"
] * 3


def test_a_suite_from_traffic_with_tool_calls_gates_tool_names_and_counts(tmp_path: Path) -> None:
    spans = record(_TEXTS, tmp_path, tools=[1, 3, 0, 2, 1, 1])
    out = tmp_path / "mined.yaml"
    result = CliRunner().invoke(cli, ["suite", "mine", str(spans), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    metrics = {m["type"]: m for m in yaml.safe_load(text)["metrics"]}
    assert list(metrics) == [
        "escalation_parity",
        "tool_use_parity",
        "refusal_gap",
        "tool_name_gap",
        "tool_count_gap",
    ]
    # the most tool calls one request made was 3: twice that is the range stated
    assert metrics["tool_count_gap"] == {
        "type": "tool_count_gap",
        "threshold": 0.5,  # its own, on the count scale: --threshold is a rate's
        "max_difference": 6,
    }
    assert metrics["tool_name_gap"] == {"type": "tool_name_gap", "threshold": 0.1}  # a rate
    assert (
        "  # max_difference: the largest difference between two groups, within one seed,\n"
        "  # that this count metric can take; its PASS bound rests on it. 2 × the most tool "
        "calls one production request recorded (3), docs/suite-mining.md.\n"
        "  max_difference: 6\n"
    ) in text
    assert "metrics: escalation_parity, tool_use_parity, refusal_gap, tool_name_gap, " in (
        result.output
    )


def test_metrics_follow_the_signals_and_a_named_count_metric_gets_a_range() -> None:
    quiet = mined_metrics(ProcessRanges())
    assert [m.type for m in quiet] == ["escalation_parity", "tool_use_parity", "refusal_gap"]
    busy = mined_metrics(ProcessRanges(max_tools=4, max_plan_steps=5, max_friction_points=1))
    assert {m.type: m.max_difference for m in busy} == {
        "escalation_parity": None,
        "tool_use_parity": None,
        "refusal_gap": None,
        "tool_name_gap": None,
        "tool_count_gap": 8,
        "plan_length_gap": 10,
        "friction_point_gap": 2,
    }
    (named, rate) = mined_metrics(ProcessRanges(), ["plan_length_gap", "escalation_parity"], 0.2)
    assert (named.threshold, named.max_difference) == (1.0, 2)  # never seen: at least 2
    assert (rate.threshold, rate.max_difference) == (0.2, None)
