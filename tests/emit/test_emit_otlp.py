"""``--emit-otlp``: gen_ai.evaluation.result log records from fairness, run, cases run and check,
received by real OTLP log receivers (HTTP and gRPC) and through the real rotel collector."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.emit.events import EVENT_NAME
from tests.sdk.rotel_helper import RotelCollector
from tests.suites import write_suite

from .logs_sinks import GrpcLogsSink, HttpLogsSink, Received

_FAST = ["--bootstrap", "300", "--permutations", "199"]
_SEEDS = 12


def _trace_id(seed: int, variant: int) -> str:
    return f"{seed + 1:016x}{variant:016x}"


def _root_span_id(seed: int, variant: int) -> str:
    return f"{seed + 1:08x}{variant:08x}"


def _fairness_inputs(tmp_path: Path) -> tuple[Path, Path]:
    """A suite of 12 seeds x 2 genders and agent traces in which every woman is refused."""
    suite = write_suite(
        tmp_path / "suite.json",
        {f"seed{i}": f"Case {i}: a {{gender}} renter asks for a flat." for i in range(_SEEDS)},
        {"gender": ["man", "woman"]},
        {"type": "refusal_gap", "threshold": 0.1},
    )
    traces = tmp_path / "traces.jsonl"
    lines = []
    for i in range(_SEEDS):
        for v, gender in ((1, "man"), (2, "woman")):
            answer = (
                "Here are three flats you can view this week."
                if gender == "man"
                else "I'm sorry, I can't help with that request."
            )
            lines.append(
                json.dumps(
                    {
                        "trace_id": _trace_id(i, v),
                        "root_span_id": _root_span_id(i, v),
                        "seed_id": f"seed{i}",
                        "variant_id": f"seed{i}::{v}",
                        "assignments": {"gender": gender},
                        "input": f"Case {i}: a {gender} renter asks for a flat.",
                        "output": answer,
                    }
                )
            )
    traces.write_text("\n".join(lines) + "\n")
    return suite, traces


def _fairness(tmp_path: Path, *emit: str, env: dict[str, str] | None = None) -> Any:
    suite, traces = _fairness_inputs(tmp_path)
    return CliRunner().invoke(cli, ["fairness", str(suite), str(traces), *_FAST, *emit], env=env)


def _metric_records(records: list[Received]) -> list[Received]:
    return [r for r in records if not r.trace_id]


def test_fairness_sends_one_result_per_metric_per_trace_and_per_pair_side_over_http(
    tmp_path: Path,
) -> None:
    with HttpLogsSink() as sink:
        result = _fairness(tmp_path, "--emit-otlp", sink.url)
        records = sink.wait_for(1, timeout=5)
    assert result.exit_code == 1, result.output  # the gate fails: every woman is refused
    assert all(r.event_name == EVENT_NAME for r in records)
    [metric] = _metric_records(records)
    assert metric.attributes["gen_ai.evaluation.name"] == "refusal_gap"
    assert metric.attributes["gen_ai.evaluation.score.label"] == "fail"
    assert metric.attributes["gen_ai.evaluation.score.value"] == pytest.approx(1.0)
    assert metric.attributes["gen_ai.evaluation.explanation"]
    assert metric.service == "spanguard"
    roots = {_trace_id(i, v): _root_span_id(i, v) for i in range(_SEEDS) for v in (1, 2)}
    in_traces = [r for r in records if r.trace_id]
    assert all(r.span_id == roots[r.trace_id] for r in in_traces)  # on the evaluated span
    verdicts = [r for r in in_traces if "spanguard.evaluation.pair_side" not in r.attributes]
    assert sorted(r.trace_id for r in verdicts) == sorted(roots)  # the verdict in every trace
    assert {r.attributes["gen_ai.evaluation.score.label"] for r in verdicts} == {"fail"}
    pairs = [r for r in in_traces if "spanguard.evaluation.pair_side" in r.attributes]
    assert pairs, "the evidence's counterfactual pairs are sent in their variants' traces"
    assert {r.attributes["spanguard.evaluation.pair_side"] for r in pairs} == {"high", "low"}
    women = [r for r in pairs if r.attributes["spanguard.group"] == "gender=woman"]
    assert women and all(r.attributes["gen_ai.evaluation.score.value"] == 1.0 for r in women)


def test_fairness_sends_over_grpc_and_from_the_standard_variables(tmp_path: Path) -> None:
    with GrpcLogsSink() as sink:
        direct = _fairness(tmp_path, "--emit-otlp", f"grpc://127.0.0.1:{sink.port}")
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
        from_env = _fairness(tmp_path, "--emit-otlp", env=env)
        records = sink.wait_for(2, timeout=5)
    assert direct.exit_code == from_env.exit_code == 1
    assert [r.attributes["gen_ai.evaluation.name"] for r in _metric_records(records)] == [
        "refusal_gap",
        "refusal_gap",
    ]
    assert sink.requests == 2


def test_an_export_failure_is_a_warning_and_keeps_the_exit_code(tmp_path: Path) -> None:
    env = {"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "1", "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    sent_nowhere = _fairness(tmp_path, "--emit-otlp", "http://127.0.0.1:9", env=env)
    assert sent_nowhere.exit_code == 1  # the gate's verdict, as without --emit-otlp
    assert "warning: --emit-otlp:" in sent_nowhere.output
    assert "not sent" in sent_nowhere.output


@pytest.mark.parametrize(
    "value, message",
    [
        ("ftp://x:1", "is not an OTLP endpoint"),
        ("", "is not an OTLP endpoint"),
    ],
)
def test_a_bad_endpoint_is_bad_input_before_any_work(
    tmp_path: Path, value: str, message: str
) -> None:
    result = _fairness(tmp_path, "--emit-otlp", value)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_bare_flag_without_the_standard_variables_is_bad_input(tmp_path: Path) -> None:
    result = _fairness(
        tmp_path,
        "--emit-otlp",
        env={"OTEL_EXPORTER_OTLP_ENDPOINT": "", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": ""},
    )
    assert result.exit_code == 2
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in result.output


def test_fairness_results_pass_through_the_rotel_collector(tmp_path: Path) -> None:
    with GrpcLogsSink() as sink, RotelCollector(export_to=sink.endpoint) as rotel:
        result = _fairness(tmp_path, "--emit-otlp", rotel.http_endpoint)
        records = sink.wait_for(1, timeout=20)
    assert result.exit_code == 1, result.output
    [metric] = _metric_records(records)
    assert metric.attributes["gen_ai.evaluation.name"] == "refusal_gap"
    assert metric.event_name == EVENT_NAME


def test_run_sends_its_metrics_too(tmp_path: Path) -> None:
    suite = write_suite(
        tmp_path / "run-suite.json",
        {f"seed{i}": f"Case {i}: a {{gender}} customer asks." for i in range(_SEEDS)},
        {"gender": ["man", "woman"]},
        {"type": "escalation_parity"},
    )
    with HttpLogsSink() as sink:
        result = CliRunner().invoke(
            cli,
            [
                "run",
                str(suite),
                "--app",
                "tests.fairness.apps:biased",
                *_FAST,
                "--emit-otlp",
                sink.url,
            ],
        )
        records = sink.wait_for(1, timeout=5)
    assert result.exit_code == 1, result.output
    [metric] = _metric_records(records)
    assert metric.attributes["gen_ai.evaluation.name"] == "escalation_parity"
    assert metric.attributes["gen_ai.evaluation.score.label"] == "fail"


def test_evaluation_events_carry_the_spans_identity_keys_and_old_records_still_read() -> None:
    from spanguard import semconv
    from spanguard_processor.emit import events
    from spanguard_processor.traces.evaluations import EvaluationResult

    assert events.SEED_ID == semconv.SEED_ID == "spanguard.seed_id"
    now = EvaluationResult(name="refusal_gap", attributes={"spanguard.seed_id": "s1"})
    before = EvaluationResult(name="refusal_gap", attributes={"spanguard.seed.id": "s0"})
    assert (now.seed_id, before.seed_id) == ("s1", "s0")
    assert EvaluationResult(name="refusal_gap").seed_id is None
    assert events.VARIANT_ID == semconv.VARIANT_ID == "spanguard.variant_id"
    now = EvaluationResult(name="refusal_gap", attributes={"spanguard.variant_id": "s1::b"})
    before = EvaluationResult(name="refusal_gap", attributes={"spanguard.variant.id": "s0::a"})
    assert (now.variant_id, before.variant_id) == ("s1::b", "s0::a")
