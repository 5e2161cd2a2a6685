"""The typed regression data writes trace2eval 0.5.1's bytes and reads them back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

from spanguard_processor.regression.case import Case
from spanguard_processor.regression.gate.runfile import load_run
from spanguard_processor.regression.run.outputs import load_outputs
from spanguard_processor.regression.run.results import CaseOutcome, Metrics
from spanguard_processor.regression.run.run import load_cases, run_cases


def test_cases_round_trip_to_trace2eval_bytes(t2e_fixtures: Path) -> None:
    for name in ("expected_cases_0.5.1.jsonl", "expected_cases_noexp_0.5.1.jsonl"):
        lines = (t2e_fixtures / name).read_text(encoding="utf-8").splitlines()
        assert len(lines) > 5
        for line in lines:
            case = Case.from_dict(json.loads(line))
            assert json.dumps(case.to_dict(), ensure_ascii=False) == line
            assert Case.from_dict(case.to_dict()) == case


def test_a_hand_written_case_needs_only_an_id_and_checks() -> None:
    case = Case.from_dict(
        {
            "id": "c1",
            "checks": [{"type": "not_fallback"}],
            "input": 7,
            "source_trace_id": 42,
            "signals": "none",
            "score": True,
        }
    )
    assert (case.input, case.source_trace_id, case.signals, case.score) == (None, "42", (), 0)
    assert case.self_check.verdict == "ok" and not case.weak


def test_metrics_round_trip_to_trace2eval_bytes(t2e_fixtures: Path) -> None:
    for name in ("baseline", "current"):
        text = (t2e_fixtures / f"expected_metrics_{name}_0.5.1.json").read_text(encoding="utf-8")
        payload = json.loads(text)
        metrics = Metrics.from_dict(payload["metrics"])
        assert bool(metrics.failures) == (name == "current")
        again = {**payload, "metrics": metrics.to_dict()}
        assert json.dumps(again, indent=2) + "\n" == text
        assert Metrics.from_dict(metrics.to_dict()) == metrics
        assert metrics.get("pass_rate") == payload["metrics"]["pass_rate"]
        assert metrics.get("failures") is None and metrics.get("no_such_figure") is None


def test_a_run_file_reads_back_as_the_result_that_wrote_it(
    tmp_path: Path, t2e_fixtures: Path
) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_bytes((t2e_fixtures / "expected_cases_0.5.1.jsonl").read_bytes())
    result = run_cases(load_cases(cases), load_outputs(t2e_fixtures / "outputs_regressed.jsonl"))
    assert {o.outcome for o in result.outcomes} == {"pass", "fail"}
    path = tmp_path / "run.json"
    path.write_text(result.to_json(), encoding="utf-8")
    loaded = load_run(path)
    assert loaded.metrics == result.metrics
    assert loaded.case_details == {o.case_id: o for o in result.outcomes}
    assert CaseOutcome.from_dict(
        "c", {"outcome": "fail", "latency_ms": True, "failed_checks": "json"}
    ) == CaseOutcome("c", "fail")
