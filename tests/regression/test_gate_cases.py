"""check: reads only run results, compares only like with like, gates on behaviour, not noise."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli

from .runs import write_run

ROOT = Path(__file__).resolve().parents[2]


def check(base: Path | str, cur: Path | str, *extra: str) -> Any:
    return CliRunner().invoke(
        cli,
        ["check", "--rules", "trace2eval", "--baseline", str(base), "--current", str(cur), *extra],
    )


def passing(n: int, prefix: str = "c") -> dict[str, tuple[str, ...] | None]:
    return {f"{prefix}{i:02d}": () for i in range(n)}


# --- what check reads -------------------------------------------------------------------------


def test_an_empty_object_is_not_a_run(tmp_path: Path) -> None:
    good = write_run(tmp_path / "good.json", passing(3))
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    for base, cur in ((empty, empty), (empty, good), (good, empty)):
        result = check(base, cur)
        assert result.exit_code == 2, result.output
        assert "PASS" not in result.output
        assert result.stderr.startswith(
            f"Error: {empty.as_posix()}: field 'metrics': is missing; `check` compares two run "
            "results written by `spanguard cases run -o FILE`"
        )


def test_a_fairness_report_is_not_a_run(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    records = json.loads((ROOT / "tests/data/fairtrace/records.json").read_text())
    suite.write_text(
        json.dumps(
            {
                "dataset": {
                    "variants": [
                        {k: r[k] for k in ("id", "seed_id", "prompt", "assignments")}
                        for r in records
                    ]
                },
                "metrics": [{"type": "escalation_parity"}],
            }
        )
    )
    (tmp_path / "records.json").write_text(json.dumps(records))
    made = CliRunner().invoke(
        cli,
        [
            "fairness",
            str(suite),
            str(tmp_path / "records.json"),
            "-o",
            str(tmp_path / "fair"),
            "--bootstrap",
            "200",
            "--permutations",
            "99",
        ],
    )
    assert made.exit_code in (0, 1), made.output
    report = tmp_path / "fair" / "report.json"
    run = write_run(tmp_path / "run.json", passing(3))
    result = check(report, run)
    assert result.exit_code == 2
    assert f"Error: {report.as_posix()}: field 'metrics': is missing" in result.stderr
    assert "This looks like a fairness report (report.json)" in result.stderr


def test_a_truncated_run_is_bad_input(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run.json", passing(4))
    cut = tmp_path / "cut.json"
    text = run.read_text()
    cut.write_text(text[: len(text) // 2])
    result = check(run, cut)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {cut.as_posix()}:"
    ) and "is not valid JSON (the file looks truncated)" in (result.stderr)


def test_a_run_missing_a_metric_names_the_field(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run.json", passing(2))
    payload = json.loads(run.read_text())
    del payload["metrics"]["failures"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(payload))
    result = check(run, broken)
    assert result.exit_code == 2
    assert f"Error: {broken.as_posix()}: field 'metrics.failures': is missing" in result.stderr


def test_a_run_that_contradicts_itself_is_bad_input(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run.json", {"a": (), "b": ("min_chars",)})
    payload = json.loads(run.read_text())
    payload["case_results"]["b"] = "pass"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(payload))
    result = check(run, broken)
    assert result.exit_code == 2
    assert "field 'case_results': disagrees with metrics.failures about case 'b'" in (result.stderr)


def test_trace2eval_metrics_files_are_accepted_and_gated_per_case(tmp_path: Path) -> None:
    spec = passing(6)
    base = write_run(tmp_path / "b.json", spec, trace2eval=True)
    cur = write_run(tmp_path / "c.json", {**spec, "c02": ("tools_include",)}, trace2eval=True)
    assert check(base, base).exit_code == 0
    result = check(base, cur)
    assert result.exit_code == 1, result.output
    assert "cases that went from pass to fail (1): c02" in result.output


# --- like with like ---------------------------------------------------------------------------


def test_runs_over_different_case_sets_are_bad_input_unless_allowed(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.json", passing(4))
    cur = write_run(tmp_path / "c.json", {**passing(3), "new": ()})
    result = check(base, cur)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: field 'case_results': the baseline {base.as_posix()} and the current run "
        f"{cur.as_posix()} ran different case sets (1 case(s) only in the baseline, first c03; "
        "1 only in the current run, first new)"
    )
    assert result.stderr.endswith(
        "Run both against the same cases.jsonl, or pass "
        "--allow-different-cases to compare the cases they share.\n"
    )
    allowed = check(base, cur, "--allow-different-cases")
    assert allowed.exit_code == 0, allowed.output
    assert (
        "case sets differ (--allow-different-cases): 1 only in the baseline, 1 only in the "
        "current run" in allowed.output
    )


def test_trace2eval_runs_of_different_sizes_are_bad_input(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.json", passing(4), trace2eval=True)
    cur = write_run(tmp_path / "c.json", passing(5), trace2eval=True)
    result = check(base, cur)
    assert result.exit_code == 2
    assert "ran 4 case(s) and the current run" in result.stderr
    assert result.stderr.endswith(
        "different case sets. Run both against the same cases.jsonl, "
        "or pass --allow-different-cases.\n"
    )


def test_a_baseline_without_any_output_is_nothing_to_compare(tmp_path: Path) -> None:
    spec = {f"c{i}": None for i in range(3)}
    base = write_run(tmp_path / "b.json", spec)
    result = check(base, base)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {base.as_posix()}: field 'metrics.missing': nothing to compare: none of its 3 "
        "case(s) matched an output"
    )


def test_current_cases_without_output_fail_the_gate_and_are_counted(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.json", passing(5))
    cur = write_run(tmp_path / "c.json", {**passing(5), "c01": None, "c03": None})
    result = check(base, cur)
    assert result.exit_code == 1
    assert (
        "| missing | 5 | 3 | 3 case(s) matched a record, 5 in the baseline: 2 case(s) "
        "lost their record (c01, c03); a missing case is not a pass |" in result.output
    )
    assert "cases without output in the current run (2): c01, c03" in result.output
    assert (
        result.stderr == "\nFAIL: 2 case(s) regressed (2 without a record); rule(s) "
        "failed: missing\n"
    )


def test_allow_missing_lists_the_missing_cases_without_failing(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.json", passing(5))
    cur = write_run(tmp_path / "c.json", {**passing(5), "c01": None, "c03": None})
    result = check(base, cur, "--allow-missing")
    assert result.exit_code == 0, result.output
    assert "cases without output in the current run (2): c01, c03" in result.output
    assert "2 case(s) lost their record (c01, c03), allowed by --allow-missing" in result.output


def test_cases_missing_in_both_runs_are_not_a_regression_but_are_listed(tmp_path: Path) -> None:
    spec = {**passing(5), "c04": None}
    base = write_run(tmp_path / "b.json", spec)
    cur = write_run(tmp_path / "c.json", spec)
    result = check(base, cur)
    assert result.exit_code == 0, result.output
    assert (
        "cases without output in the current run (1): c04 (none in the baseline either)"
        in result.output
    )


def test_fewer_matched_cases_in_a_trace2eval_run_fail_the_gate(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.json", passing(5), trace2eval=True)
    cur = write_run(tmp_path / "c.json", {**passing(5), "c02": None}, trace2eval=True)
    result = check(base, cur)
    assert result.exit_code == 1, result.output
    assert (
        "| missing | 5 | 4 | 4 case(s) matched a record, 5 in the baseline: 1 case(s) lost "
        "their record (c02)" in result.output
    )
    assert (
        result.stderr == "\nFAIL: 1 case(s) regressed (1 without a record); rule(s) "
        "failed: missing\n"
    )
    assert check(base, cur, "--allow-missing").exit_code == 0


def test_the_verdict_counts_regressed_cases_and_names_the_rules_apart(tmp_path: Path) -> None:
    spec = passing(60)
    base = write_run(tmp_path / "b.json", spec)
    broken = {f"c{i:02d}": ("tools_include",) for i in range(45)}
    cur = write_run(tmp_path / "c.json", {**spec, **broken})
    result = check(base, cur)
    assert result.exit_code == 1
    assert "cases that went from pass to fail (45): c00, c01" in result.output
    assert result.stderr == (
        "\nFAIL: 45 case(s) regressed (45 pass → fail); rule(s) failed: "
        "pass_rate, trace_compliance_rate, case_outcomes\n"
    )


# --- behaviour, not noise ---------------------------------------------------------------------


def test_a_case_that_starts_failing_a_process_check_fails_the_gate_even_if_others_improve(
    tmp_path: Path,
) -> None:
    base = write_run(tmp_path / "b.json", {"a": (), "b": ("min_chars",), "c": ("min_chars",)})
    cur = write_run(tmp_path / "c.json", {"a": ("tools_include",), "b": (), "c": ()})
    result = check(base, cur)
    assert result.exit_code == 1
    assert "| case_outcomes | 1 | 1 | 1 case(s) passed before" in result.output
    assert "cases that went from pass to fail (1): a" in result.output


def test_a_timing_only_flip_is_listed_but_left_to_the_latency_rule(tmp_path: Path) -> None:
    base = write_run(tmp_path / "b.json", {"a": (), "b": ("min_chars",)})
    cur = write_run(tmp_path / "c.json", {"a": ("max_latency_ms",), "b": ()})
    result = check(base, cur)
    assert result.exit_code == 0, result.output
    assert "cases that went from pass to fail (1): a" in result.output


def test_a_pass_rate_drop_is_a_regression_only_beyond_mcnemar_noise(tmp_path: Path) -> None:
    spec = passing(40)
    flaky_base = {**spec, **{f"c{i:02d}": ("min_chars",) for i in range(0, 6)}}
    flaky_cur = {**spec, **{f"c{i:02d}": ("min_chars",) for i in range(3, 12)}}
    base = write_run(tmp_path / "b.json", flaky_base)
    cur = write_run(tmp_path / "c.json", flaky_cur)
    # 6 worse, 3 better: the drop (0.075) is beyond 0.02 but McNemar p = 0.25.
    result = check(base, cur)
    assert (
        "pass_rate dropped by 0.0750 (allowed 0.0200), but within run-to-run noise "
        "(6 case(s) worse, 3 better, McNemar p=0.254 ≥ 0.05)" in result.output
    )
    assert "| pass_rate |" not in result.output
    worse = write_run(
        tmp_path / "w.json", {**spec, **{f"c{i:02d}": ("min_chars",) for i in range(0, 14)}}
    )
    result = check(base, worse)
    assert result.exit_code == 1
    assert (
        "| pass_rate | 0.8500 | 0.6500 | dropped by 0.2000 (allowed 0.0200); 8 case(s) "
        "worse, 0 better, McNemar p=0.00391 |" in result.output
    )


def _latencies(n: int, seed: int, factor: float = 1.0) -> dict[str, float]:
    rng = random.Random(seed)
    base = {f"c{i:02d}": 200.0 + 40.0 * i for i in range(n)}
    return {k: v * factor * rng.uniform(0.7, 1.3) for k, v in base.items()}


def test_latency_jitter_passes_and_a_real_slowdown_fails(tmp_path: Path) -> None:
    spec = passing(40)
    base = write_run(tmp_path / "b.json", spec, latencies=_latencies(40, 1))
    verdicts = []
    for seed in range(2, 12):
        cur = write_run(tmp_path / "c.json", spec, latencies=_latencies(40, seed))
        verdicts.append(check(base, cur).exit_code)
    assert verdicts == [0] * 10
    slow = write_run(tmp_path / "s.json", spec, latencies=_latencies(40, 2, factor=2.0))
    result = check(base, slow)
    assert result.exit_code == 1, result.output
    assert "| p95_latency_ms |" in result.output and "bootstrap 95% lower bound" in result.output
    assert result.stderr == "\nFAIL: no case regressed; rule(s) failed: p95_latency_ms\n"


def test_without_per_case_figures_the_latency_tolerance_alone_decides(tmp_path: Path) -> None:
    spec = passing(3)
    base = write_run(
        tmp_path / "b.json", spec, latencies=dict.fromkeys(spec, 1000.0), trace2eval=True
    )
    ok = write_run(
        tmp_path / "ok.json", spec, latencies=dict.fromkeys(spec, 1200.0), trace2eval=True
    )
    slow = write_run(
        tmp_path / "slow.json", spec, latencies=dict.fromkeys(spec, 1200.1), trace2eval=True
    )
    assert check(base, ok).exit_code == 0
    result = check(base, slow)
    assert result.exit_code == 1
    assert "| p95_latency_ms | 1000.0000 | 1200.1000 | rose by 200.1000 (allowed 200.0000) |" in (
        result.output
    )


def test_small_latency_rises_are_below_the_floor(tmp_path: Path) -> None:
    spec = passing(10)
    base = write_run(tmp_path / "b.json", spec, latencies=dict.fromkeys(spec, 1.0))
    cur = write_run(tmp_path / "c.json", spec, latencies=dict.fromkeys(spec, 4.0))
    result = check(base, cur)
    assert result.exit_code == 0
    assert "but by less than 10 ms (--min-latency-change-ms)" in result.output
    assert check(base, cur, "--min-latency-change-ms", "0").exit_code == 1


def test_the_same_inputs_give_the_same_verdict_byte_for_byte(tmp_path: Path) -> None:
    spec = passing(30)
    base = write_run(tmp_path / "b.json", spec, latencies=_latencies(30, 1))
    cur = write_run(
        tmp_path / "c.json",
        {**spec, "c04": ("tools_include",)},
        latencies=_latencies(30, 5, factor=1.6),
    )
    outputs = set()
    for _ in range(3):
        result = check(base, cur, "--junit", str(tmp_path / "j.xml"))
        outputs.add((result.exit_code, result.output, (tmp_path / "j.xml").read_text()))
    assert len(outputs) == 1


def test_outputs_that_match_no_case_warn_and_cannot_be_a_baseline(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"case-{i}",
                    "input": f"question {i}?",
                    "source_trace_id": f"req-{i}",
                    "checks": [{"type": "min_chars", "value": 2}],
                }
            )
            + "\n"
            for i in range(3)
        )
    )
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(
        "".join(json.dumps({"id": f"other-{i}", "output": "an answer"}) + "\n" for i in range(3))
    )
    run = CliRunner().invoke(
        cli,
        [
            "cases",
            "run",
            "--cases",
            str(cases),
            "--outputs",
            str(outputs),
            "-o",
            str(tmp_path / "run.json"),
        ],
    )
    assert run.exit_code == 0
    assert (
        "matched 0 of 3 case(s): 0 by case id, 0 by source_trace_id, 0 by question text; "
        "3 without output" in run.stdout
    )
    assert f"warning: no record in {outputs.as_posix()} matched any of the 3 case(s)" in run.stderr
    result = check(tmp_path / "run.json", tmp_path / "run.json")
    assert result.exit_code == 2 and "nothing to compare" in result.stderr
    # Records that carry the case's source_trace_id, or its question, do match.
    outputs.write_text(
        json.dumps({"id": "x", "source_trace_id": "req-0", "output": "ok!"})
        + "\n"
        + json.dumps({"id": "y", "input": "Question 1", "output": "ok!"})
        + "\n"
        + json.dumps({"id": "case-2", "output": "ok!"})
        + "\n"
    )
    run = CliRunner().invoke(
        cli, ["cases", "run", "--cases", str(cases), "--outputs", str(outputs)]
    )
    assert (
        "matched 3 of 3 case(s): 1 by case id, 1 by source_trace_id, 1 by question text; "
        "0 without output" in run.stdout
    )
