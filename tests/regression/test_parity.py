"""Parity with the real trace2eval-cli 0.5.1 on its own sample log (see docs/regression.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .conftest import SPANGUARD, run

T2E = [sys.executable, "-m", "trace2eval"]
LOG = "examples/sample_traces.jsonl"
#: trace2eval picks only questions with a failure signal; spanguard covers every question by
#: default (docs/regression.md, "Coverage"), and `--select signals` is trace2eval's selection.
SIGNALS = ["--select", "signals"]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _without_trace_checks(case: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in case.items() if k not in ("trace_checks", "adjusted_checks")}


@pytest.mark.slow
def test_cases_equal_trace2eval_except_documented_trace_checks(
    workdir: Path, t2e_fixtures: Path
) -> None:
    for out, expected in (
        ("evalset_noexp", "expected_cases_noexp_0.5.1.jsonl"),
        ("evalset", "expected_cases_0.5.1.jsonl"),
    ):
        theirs = run(
            [*T2E, "build", LOG, "-o", f"t2e_{out}", "--expectations", f"{out}/expectations.jsonl"],
            workdir,
        )
        assert theirs.returncode == 0, theirs.stderr
        ours = run(
            [*SPANGUARD, "cases", "build", LOG, "-o", out, "--ids", "sequential", *SIGNALS], workdir
        )
        assert ours.returncode == 0, ours.stderr
        real = (workdir / f"t2e_{out}" / "cases.jsonl").read_bytes()
        assert real == (t2e_fixtures / expected).read_bytes()
        mine = _lines(workdir / out / "cases.jsonl")
        assert [_without_trace_checks(c) for c in mine] == _lines(t2e_fixtures / expected)
        # The only difference: the slow and costly cases say why they carry no latency/cost
        # limit (each is a failure seed without a clean sibling: no spread to learn from).
        assert not any("trace_checks" in c for c in mine)
        assert {
            c["id"]: [(a["type"], a["action"]) for a in c["adjusted_checks"]]
            for c in mine
            if "adjusted_checks" in c
        } == {
            "case-001": [("max_latency_ms", "omitted")],
            "case-006": [("max_latency_ms", "omitted"), ("max_cost_usd", "omitted")],
            "case-008": [("max_cost_usd", "omitted")],
            "case-009": [("max_latency_ms", "omitted"), ("max_cost_usd", "omitted")],
        }
        assert mine[0]["adjusted_checks"][0]["reason"] == (
            "only 0 clean run(s) of this question recorded latency_ms; a limit needs at least "
            "8 to know its spread"
        )
        # Byte format: trace2eval's separators and key order, no BOM, LF.
        first = (workdir / out / "cases.jsonl").read_bytes().split(b"\n")[0]
        assert first.startswith(b'{"id": "case-001", "input": "')


def test_console_and_template_match_trace2eval(workdir: Path, t2e_fixtures: Path) -> None:
    ours = run(
        [*SPANGUARD, "cases", "build", LOG, "-o", "evalset_noexp", "--ids", "sequential", *SIGNALS],
        workdir,
    )
    transcript = (t2e_fixtures / "expected_console_0.5.1.txt").read_text(encoding="utf-8")
    expected = transcript.split(
        "$ trace2eval build examples/sample_traces.jsonl -o evalset_noexp\n"
    )[1]
    # One line added (docs/regression.md, "Coverage"): the share of the traffic the cases cover.
    coverage = "  coverage: 16 of 39 question(s) (41%), 17 of 42 request(s) (40%)\n"
    assert coverage in ours.stdout
    assert expected.startswith(ours.stdout.replace(coverage, ""))
    assert ours.stderr == ""
    template = workdir / "evalset_noexp" / "expectations.template.jsonl"
    assert (
        template.read_bytes()
        == (t2e_fixtures / "expected_expectations_template_noexp_0.5.1.jsonl").read_bytes()
    )


def test_report_differs_only_in_documented_sections(workdir: Path, t2e_fixtures: Path) -> None:
    run(
        [*SPANGUARD, "cases", "build", LOG, "-o", "evalset", "--ids", "sequential", *SIGNALS],
        workdir,
    )
    mine = (workdir / "evalset" / "report.md").read_text(encoding="utf-8")
    theirs = (t2e_fixtures / "expected_report_0.5.1.md").read_text(encoding="utf-8")
    cut = "## How the clustering behaved"
    coverage = (
        "| Questions covered by a case | 16 of 39 (41.0%) |\n"
        "| Requests covered by a case | 17 of 42 (40.5%) |\n"
    )
    assert coverage in mine
    assert mine.replace(coverage, "").split(cut)[0] == theirs.split(cut)[0]
    after = "## Log-wide baselines"
    assert mine.split(after)[1].split("---\n")[0] == theirs.split(after)[1].split("---\n")[0]
    assert "| Worst representative similarity seen | 0.600 |" in mine
    assert "425" not in mine


@pytest.mark.slow
def test_real_trace2eval_runs_our_cases_and_metrics_match(
    workdir: Path, t2e_fixtures: Path
) -> None:
    assert (
        run(
            [*SPANGUARD, "cases", "build", LOG, "-o", "evalset", "--ids", "sequential", *SIGNALS],
            workdir,
        ).returncode
        == 0
    )
    for name, outputs in (("baseline", "outputs_baseline"), ("current", "outputs_regressed")):
        theirs = run(
            [
                *T2E,
                "run",
                "--cases",
                "evalset/cases.jsonl",
                "--outputs",
                f"examples/{outputs}.jsonl",
                "-o",
                f"t2e/{name}.json",
            ],
            workdir,
        )
        assert theirs.returncode == 0, theirs.stderr
        assert (workdir / "t2e" / f"{name}.json").read_bytes() == (
            t2e_fixtures / f"expected_metrics_{name}_0.5.1.json"
        ).read_bytes()
        ours = run(
            [
                *SPANGUARD,
                "cases",
                "run",
                "--cases",
                "evalset/cases.jsonl",
                "--outputs",
                f"examples/{outputs}.jsonl",
                "-o",
                f"runs/{name}.json",
            ],
            workdir,
        )
        assert ours.returncode == 0, ours.stderr
        payload = json.loads((workdir / "runs" / f"{name}.json").read_text(encoding="utf-8"))
        expected = json.loads((t2e_fixtures / f"expected_metrics_{name}_0.5.1.json").read_text())
        assert payload["version"] == expected["version"]
        assert payload["metrics"] == expected["metrics"]
        assert list(payload["metrics"])[-1] == "failures"
    gate = run(
        [
            *SPANGUARD,
            "check",
            "--rules",
            "trace2eval",
            "--baseline",
            "runs/baseline.json",
            "--current",
            "runs/current.json",
        ],
        workdir,
    )
    # trace2eval's three aggregate regressions are within McNemar noise on 16 cases (3 worse,
    # 0 better: p = 0.125); our per-case rule fails the gate on the same three cases.
    assert gate.returncode == 1
    # trace2eval prints "FAIL: 3 regression(s) detected" (its three rules); ours counts the
    # regressed cases and names the failed rules apart.
    assert gate.stderr.strip() == (
        "FAIL: 3 case(s) regressed (3 pass → fail); rule(s) failed: case_outcomes"
    )
    assert "| case_outcomes | 3 | 3 | 3 case(s) passed before" in gate.stdout
    assert "pass_rate dropped by 0.1875 (allowed 0.0200), but within run-to-run noise" in (
        gate.stdout
    )
    assert "cases that went from pass to fail (3): case-001, case-004, case-007" in gate.stdout
    same = run(
        [
            *SPANGUARD,
            "check",
            "--rules",
            "trace2eval",
            "--baseline",
            "runs/baseline.json",
            "--current",
            "runs/baseline.json",
        ],
        workdir,
    )
    assert same.returncode == 0 and same.stdout.endswith("PASS: no regressions detected\n")
    real_gate = run(
        [*T2E, "check", "--baseline", "runs/baseline.json", "--current", "runs/current.json"],
        workdir,
    )
    assert real_gate.returncode == 1
    # trace2eval's own metrics files are read too (they list only the failures).
    on_theirs = run(
        [*SPANGUARD, "check", "--baseline", "t2e/baseline.json", "--current", "t2e/current.json"],
        workdir,
    )
    assert on_theirs.returncode == 1, on_theirs.stderr
    assert "cases that went from pass to fail (3): case-001, case-004, case-007" in (
        on_theirs.stdout
    )


@pytest.mark.slow
def test_stable_id_cases_match_trace2eval_keyed_outputs_by_source_trace_id(
    workdir: Path,
) -> None:
    built = run([*SPANGUARD, "cases", "build", LOG, "-o", "evalset", *SIGNALS], workdir)
    assert built.returncode == 0
    cases = _lines(workdir / "evalset" / "cases.jsonl")
    by_source = {c["source_trace_id"]: c["id"] for c in cases}
    for name, outputs in (("baseline", "outputs_baseline"), ("current", "outputs_regressed")):
        ours = run(
            [
                *SPANGUARD,
                "cases",
                "run",
                "--cases",
                "evalset/cases.jsonl",
                "--outputs",
                f"examples/{outputs}.jsonl",
                "-o",
                f"runs/{name}.json",
            ],
            workdir,
        )
        assert ours.returncode == 0, ours.stderr
        assert (
            "matched 16 of 16 case(s): 0 by case id, 16 by source_trace_id, 0 by question "
            "text; 0 without output" in ours.stdout
        )
    regressed = sorted(
        by_source[r["source_trace_id"]]
        for r in _lines(workdir / "examples" / "outputs_regressed.jsonl")
        if r["id"] in {"case-001", "case-004", "case-007"}
    )
    gate = run(
        [
            *SPANGUARD,
            "check",
            "--rules",
            "trace2eval",
            "--baseline",
            "runs/baseline.json",
            "--current",
            "runs/current.json",
        ],
        workdir,
    )
    assert gate.returncode == 1
    listed = gate.stdout.split("cases that went from pass to fail (3): ")[1].splitlines()[0]
    assert sorted(listed.split(", ")) == regressed
    same = run(
        [
            *SPANGUARD,
            "check",
            "--rules",
            "trace2eval",
            "--baseline",
            "runs/baseline.json",
            "--current",
            "runs/baseline.json",
        ],
        workdir,
    )
    assert same.returncode == 0, same.stdout


def test_real_trace2eval_accepts_stable_id_cases(workdir: Path) -> None:
    built = run([*SPANGUARD, "cases", "build", LOG, "-o", "evalset", *SIGNALS], workdir)
    assert built.returncode == 0
    cases = _lines(workdir / "evalset" / "cases.jsonl")
    ids = [c["id"] for c in cases]
    assert all(str(i).startswith("case-") and len(str(i)) == 17 for i in ids)
    assert len(set(ids)) == 16
    # The fixture's outputs are keyed by trace2eval's positional ids; re-key them by question.
    by_source = {c["source_trace_id"]: c["id"] for c in cases}
    rekeyed = []
    for record in _lines(workdir / "examples" / "outputs_baseline.jsonl"):
        record["id"] = by_source[record["source_trace_id"]]
        rekeyed.append(json.dumps(record, ensure_ascii=False))
    (workdir / "outputs.jsonl").write_text("\n".join(rekeyed) + "\n", encoding="utf-8")
    theirs = run(
        [
            *T2E,
            "run",
            "--cases",
            "evalset/cases.jsonl",
            "--outputs",
            "outputs.jsonl",
            "-o",
            "t2e.json",
        ],
        workdir,
    )
    assert theirs.returncode == 0, theirs.stderr
    metrics = json.loads((workdir / "t2e.json").read_text())["metrics"]
    assert (metrics["total"], metrics["pass_rate"]) == (16, 1.0)


@pytest.mark.slow
def test_stable_ids_survive_a_rebuild_with_more_rows(workdir: Path) -> None:
    assert run([*SPANGUARD, "cases", "build", LOG, "-o", "a", *SIGNALS], workdir).returncode == 0
    log = workdir / LOG
    extra = {
        "id": "req-9999",
        "input": "全新的问题：发票抬头怎么改",
        "output": "",
        "latency_ms": 500,
    }
    log.write_text(
        log.read_text(encoding="utf-8") + json.dumps(extra, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    assert run([*SPANGUARD, "cases", "build", LOG, "-o", "b", *SIGNALS], workdir).returncode == 0
    before = {c["input"]: c["id"] for c in _lines(workdir / "a" / "cases.jsonl")}
    after = {c["input"]: c["id"] for c in _lines(workdir / "b" / "cases.jsonl")}
    assert len(after) == len(before) + 1
    assert all(after[q] == i for q, i in before.items())


def test_the_build_result_as_json_leads_with_trace2evals_stats(workdir: Path) -> None:
    from trace2eval.annotations import load_annotations
    from trace2eval.schema import load_traces
    from trace2eval.select import select_cases

    from spanguard_processor.regression.mine.build import BuildOptions, build_evalset

    expectations = workdir / "evalset" / "expectations.jsonl"
    theirs = select_cases(
        load_traces(str(workdir / LOG)).traces, expectations=load_annotations(expectations)
    ).stats()
    result = build_evalset(
        [workdir / LOG],
        BuildOptions(
            out=workdir / "built", expectations=expectations, sequential_ids=True, select="signals"
        ),
    )
    summary = result.to_dict()
    assert list(summary)[: len(theirs)] == list(theirs)
    assert {k: summary[k] for k in theirs} == theirs
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary
    assert summary["case_ids"] == [c.id for c in result.cases]
    assert summary["files"] == {
        "cases": (workdir / "built" / "cases.jsonl").as_posix(),
        "report": (workdir / "built" / "report.md").as_posix(),
        "expectations": expectations.as_posix(),
        "template": None,
    }
    assert summary["clustering"]["clusters"] == result.health.clusters


@pytest.mark.slow
def test_the_default_build_covers_every_question_and_keeps_trace2evals_cases(
    workdir: Path,
) -> None:
    assert (
        run([*SPANGUARD, "cases", "build", LOG, "-o", "signals", *SIGNALS], workdir).returncode == 0
    )
    built = run([*SPANGUARD, "cases", "build", LOG, "-o", "covered"], workdir)
    assert built.returncode == 0, built.stderr
    assert "coverage: 39 of 39 question(s) (100%), 42 of 42 request(s) (100%)" in built.stdout
    covered = {c["source_trace_id"]: c for c in _lines(workdir / "covered" / "cases.jsonl")}
    signalled = _lines(workdir / "signals" / "cases.jsonl")
    assert len(covered) == 39
    # trace2eval's 16 signalled cases are among them, unchanged
    assert all(covered[c["source_trace_id"]] == c for c in signalled)
    added = [
        c for key, c in covered.items() if key not in {s["source_trace_id"] for s in signalled}
    ]
    assert all(c["signals"] == [] and c["reference_is_trusted"] for c in added)
    assert all(c["self_check"]["verdict"] == "ok" for c in added)


@pytest.mark.slow
def test_a_lone_rating_of_1_is_negative_as_trace2eval_reads_it(workdir: Path) -> None:
    rows = [
        {
            "id": "r1",
            "input": "How do I export my invoices?",
            "output": "Open Billing, then press Export and pick a date range.",
            "rating": 1,
        },
        {
            "id": "r2",
            "input": "Which browsers do you support?",
            "output": "The last two versions of Chrome, Firefox, Safari and Edge.",
        },
        {
            "id": "r3",
            "input": "Where can I download the mobile app?",
            "output": "From the App Store and from Google Play; search for our name.",
        },
    ]
    (workdir / "rated.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    theirs = run([*T2E, "build", "rated.jsonl", "-o", "t2e_rated"], workdir)
    assert theirs.returncode == 0, theirs.stderr
    ours = run(
        [
            *SPANGUARD,
            "cases",
            "build",
            "rated.jsonl",
            "-o",
            "rated",
            "--ids",
            "sequential",
            *SIGNALS,
        ],
        workdir,
    )
    assert ours.returncode == 0, ours.stderr
    expected = _lines(workdir / "t2e_rated" / "cases.jsonl")
    assert [c["signals"][0]["name"] for c in expected] == ["negative_feedback"]
    assert _lines(workdir / "rated" / "cases.jsonl") == expected


@pytest.mark.slow
def test_trace2eval_run_on_stable_ids_finds_every_case_missing_and_exits_0(
    workdir: Path,
) -> None:
    """The hazard docs/migration.md names: stable ids scored by `trace2eval run` against its
    own outputs files (keyed case-001…) match nothing, yet exit 0; spanguard refuses such a
    baseline (exit 2) and `cases run` matches the same files by source_trace_id."""
    assert (
        run([*SPANGUARD, "cases", "build", LOG, "-o", "evalset", *SIGNALS], workdir).returncode == 0
    )
    theirs = run(
        [
            *T2E,
            "run",
            "--cases",
            "evalset/cases.jsonl",
            "--outputs",
            "examples/outputs_baseline.jsonl",
            "-o",
            "t2e.json",
        ],
        workdir,
    )
    assert theirs.returncode == 0
    metrics = json.loads((workdir / "t2e.json").read_text())["metrics"]
    assert (metrics["total"], metrics["missing"]) == (16, 16)
    gate = run([*SPANGUARD, "check", "--baseline", "t2e.json", "--current", "t2e.json"], workdir)
    assert gate.returncode == 2
    assert "nothing to compare" in gate.stderr
