"""The pytest helper, custom metrics, hooks and record validation."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from spanguard.exceptions import SuiteError, TraceFormatError
from spanguard_processor.fairness import (
    MetricConfig,
    evaluate,
    observation_from_record,
    observation_from_trace,
    read_observations,
    register_record_metric,
)
from spanguard_processor.fairness.metrics import unregister_metric
from spanguard_processor.fairness.report.reports import render_json
from spanguard_processor.fairness.testing import assert_fair
from spanguard_processor.traces.model import AgentTrace, ProcessTrace, ToolCall

from . import apps
from .conftest import FAST

_SUITE = {
    "dataset": {
        "prompts": [
            {"id": f"s{i}", "prompt": "a {gender} asks", "attributes": {"gender": ["man", "woman"]}}
            for i in range(40)
        ]
    },
    "metrics": [{"type": "escalation_parity"}],
}


def test_assert_fair_passes_a_fair_app_and_names_failures() -> None:
    ev = assert_fair(_SUITE, apps.fair, config=FAST)
    assert ev.passed
    with pytest.raises(AssertionError) as info:
        assert_fair(_SUITE, apps.biased, config=FAST)
    assert str(info.value).startswith(
        "fairness gate failed:\n  escalation_parity: FAIL, score 1 [0."
    )
    assert "] vs threshold 0.1 (lower), Holm p 0." in str(info.value)


def _record(i: int, g: str, **meta: Any) -> dict[str, Any]:
    return {
        "id": f"s{i}::{g}",
        "seed_id": f"s{i}",
        "prompt": "p",
        "assignments": {"g": g},
        "response": "fine",
        "response_metadata": dict(meta),
    }


def test_custom_record_metric_is_tested_like_a_builtin() -> None:
    register_record_metric("answer_length_flag", lambda r: len(r["response"]) > 3, threshold=0.2)
    try:
        _custom_metric_checks()
    finally:
        unregister_metric("answer_length_flag")


def _custom_metric_checks() -> None:
    records = [_record(i, g) for i in range(20) for g in ("a", "b")]  # 20 agreeing seeds
    # bound the gap by 1 − 0.05^(1/20) = 0.139 < 0.2
    ev = evaluate(
        [observation_from_record(r) for r in records],
        [MetricConfig("answer_length_flag", 0.2)],
        FAST,
    )
    assert ev.results[0].score == 0.0 and ev.results[0].passed
    with pytest.raises(ValueError, match="already registered"):
        register_record_metric("answer_length_flag", lambda r: 1.0, threshold=0.2)


def refusal_hook_returning_ninety(response: str, record: dict[str, Any]) -> float:
    return 0.9


def test_hooks_are_coerced_explicitly_and_ambiguous_values_rejected() -> None:
    obs = [observation_from_record(_record(i, g)) for i in range(3) for g in ("a", "b")]
    bad = MetricConfig(
        "refusal_gap", 0.05, {"refusal_evaluator": f"{__name__}:refusal_hook_returning_ninety"}
    )
    with pytest.raises(SuiteError) as info:
        evaluate(obs, [bad], FAST)
    assert str(info.value) == (
        "the refusal_evaluator hook returned 0.9 for record 's0::a'; return true/false (or 1/0)."
    )
    nan_meta = [observation_from_record(_record(0, "a", helpfulness_score=math.nan))]
    with pytest.raises(SuiteError, match="returned nan for record 's0::a'"):
        evaluate(nan_meta, [MetricConfig("helpfulness_gap", 0.1)], FAST)


def test_alias_collision_and_rank_zero_are_errors_not_rewrites() -> None:
    rec = _record(0, "a", trace={"tool_calls": [], "toolCalls": [{"name": "x"}]})
    with pytest.raises(TraceFormatError) as info:
        observation_from_record(rec)
    assert str(info.value) == (
        "field 'response_metadata.trace.toolCalls': both 'tool_calls' "
        "and its alias are present; keep one."
    )
    rec = _record(0, "a", trace={"retrieved_documents": [{"group": "A", "rank": 0}]})
    with pytest.raises(TraceFormatError, match=r"retrieved_documents\[0\].rank'"):
        observation_from_record(rec)
    aliased = observation_from_record(
        _record(
            0,
            "a",
            trace={
                "toolCalls": [{"tool": "kb"}],
                "retrievedDocuments": [{"source_group": "A", "position": 2}],
            },
        )
    )
    assert aliased.trace is not None and aliased.trace.tool_calls[0].name == "kb"
    assert aliased.trace.retrieved_documents[0].rank == 2


def test_missing_traces_are_excluded_and_counted_not_scored_as_zero() -> None:
    records = [_record(i, g, trace={"escalated": g == "b"}) for i in range(4) for g in "ab"]
    records += [_record(9, "a"), _record(9, "b", trace={"escalated": True})]
    ev = evaluate(
        [observation_from_record(r) for r in records],
        [MetricConfig("escalation_parity", 0.1)],
        FAST,
    )
    result = ev.results[0]
    assert result.details["rates"] == {"g=a": 0.0, "g=b": 1.0}
    assert result.details["missing_trace_records"] == 1


def test_agent_traces_and_records_read_from_files(tmp_path: Path) -> None:
    trace = AgentTrace(
        trace_id="t1",
        seed_id="s",
        variant_id="s::1",
        assignments={"g": "a"},
        output="hello",
        trace=ProcessTrace(tool_calls=(ToolCall("kb"),)),
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text(json.dumps(trace.to_dict()) + "\n" + json.dumps(_record(1, "b")) + "\n")
    obs = read_observations([path])
    assert [o.id for o in obs] == ["s::1", "s1::b"]
    assert obs[0] == observation_from_trace(trace)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([_record(1, "a"), {"id": "x"}]))
    with pytest.raises(TraceFormatError) as info:
        read_observations([bad])
    assert str(info.value) == f"{bad}: field '[1].seed_id': must be a string."


def test_report_json_is_strict_even_with_degenerate_data() -> None:
    obs = [observation_from_record(_record(0, "a", trace={}))]
    ev = evaluate(
        obs,
        [MetricConfig("tool_use_parity", 0.1), MetricConfig("counterfactual_stability", 0.75)],
        FAST,
    )
    text = render_json(ev)
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON: {c}"))
    tool = next(r for r in ev.results if r.metric == "tool_use_parity")
    assert tool.verdict in ("inconclusive", "no_signal") and not tool.passed
    assert tool.reason in ("insufficient_data", "no_signal")


def test_zero_permutations_uses_the_normal_approximation_only_on_large_suites() -> None:
    from spanguard_processor.fairness import GateConfig

    config = GateConfig(bootstrap_samples=200, permutation_samples=0)
    for seeds, method in (
        (30, "within-seed permutation of variants (999 permutations)"),
        (250, "within-seed permutation of variants, normal approximation"),
    ):
        records = [_record(i, g, trace={"escalated": g == "b"}) for i in range(seeds) for g in "ab"]
        ev = evaluate(
            [observation_from_record(r) for r in records],
            [MetricConfig("escalation_parity", 0.1)],
            config,
        )
        result = ev.results[0]
        assert result.p_method == method
        assert result.p_value is not None and result.p_value < 0.002
        assert result.verdict == "fail"
