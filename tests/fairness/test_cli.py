"""The fairness, run, compare and init commands: exit codes, messages and report files."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

_FAST = ["--bootstrap", "300", "--permutations", "199"]
_APPS = "tests.fairness.apps"


def _suite(tmp_path: Path, metrics: list[dict[str, Any]], seeds: int = 40) -> Path:
    # 40 seeds: a deterministic fair app's exact bound (1 − 0.05^(1/40) = 0.072) is under
    # 0.1, so it PASSes; on 12 seeds it is inconclusive
    path = tmp_path / "suite.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "prompts": [
                        {
                            "id": f"seed{i}",
                            "prompt": f"Case {i}: a {{gender}} customer asks.",
                            "attributes": {"gender": ["man", "woman"]},
                        }
                        for i in range(seeds)
                    ]
                },
                "metrics": metrics,
            }
        )
    )
    return path


def _golden_suite(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "golden_suite.json"
    path.write_text(
        json.dumps(
            {
                "dataset": {
                    "variants": [
                        {k: r[k] for k in ("id", "seed_id", "prompt", "assignments")}
                        for r in records
                    ]
                },
                "metrics": [
                    {"type": t}
                    for t in (
                        "tool_use_parity",
                        "escalation_parity",
                        "helpfulness_gap",
                        "refusal_gap",
                        "counterfactual_stability",
                    )
                ],
            }
        )
    )
    return path


class _Checker(HTMLParser):
    VOID = frozenset({"meta", "br", "img", "input", "link", "hr", "circle", "line"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.svgs = 0
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.svgs += tag == "svg"
        for key, value in attrs:
            if key in {"src", "href"} and value and not value.startswith("#"):
                self.external.append(value)
        if tag == "script":
            self.external.append("script")
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.svgs += 0

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_fairness_on_golden_records_writes_every_report(
    tmp_path: Path, golden_records: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1800000000")
    suite = _golden_suite(tmp_path, golden_records)
    records = tmp_path / "records.json"
    records.write_text(json.dumps(golden_records))
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(records), "-o", str(out), *_FAST])
    assert result.exit_code == 1, result.output
    # 6 seeds: no gap can be shown either way — helpfulness_gap's 0.2 in every seed is likely
    # under a gap of 0.1 (0.2 w.p. 0.9, −0.8 w.p. 0.1: all six agree with probability 0.53),
    # so it is not a FAIL; every metric is inconclusive, which fails the gate
    # escalation_parity's interval lies above 0.1 (the threshold test alone rejects), but the
    # permutation test on 4 seeds does not: INCONCLUSIVE, leaning FAIL
    gated = ["tool_use_parity", "escalation_parity", "helpfulness_gap", "refusal_gap"]
    labels = {"escalation_parity": "INCONCLUSIVE, leans FAIL"}
    assert result.output.endswith(
        "fairness gate FAILED: "
        + ", ".join(f"{m} ({labels.get(m, 'INCONCLUSIVE')})" for m in gated)
        + "\n"
    )
    helpful = next(
        line for line in result.output.splitlines() if line.split()[1:2] == ["helpfulness_gap"]
    )  # its verdict line
    assert helpful.startswith("INCONCLUSIVE") and "[0.0000, " in helpful, helpful
    report = json.loads(
        (out / "report.json").read_text(),
        parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"),
    )
    assert report["generated_at"] == "2027-01-15T08:00:00+00:00"
    assert report["variant_count"] == 12
    first = report["metric_results"][0]
    fairtrace_keys = [
        "metric",
        "score",
        "threshold",
        "direction",
        "passed",
        "confidence_interval",
        "details",
        "p_value",
    ]
    assert list(first)[:8] == fairtrace_keys
    assert [r["id"] for r in report["scenario_results"]] == [r["id"] for r in golden_records]
    assert report["spanguard"]["failed_metrics"] == gated
    tool = next(r for r in report["metric_results"] if r["metric"] == "tool_use_parity")
    assert tool["score"] == 1.0 and tool["interval_level"] == 0.95
    assert tool["verdict"] == "inconclusive" and not tool["passed"]
    assert "within noise" in tool["verdict_reason_text"]
    # byte-identical on a second run
    again = tmp_path / "again"
    CliRunner().invoke(cli, ["fairness", str(suite), str(records), "-o", str(again), *_FAST])
    for name in ("report.json", "report.md", "junit.xml", "report.html"):
        assert (out / name).read_bytes() == (again / name).read_bytes(), name
    junit = ElementTree.fromstring((out / "junit.xml").read_text())
    cases = junit.findall("./testsuite/testcase")
    assert len(cases) == 5
    assert [c.get("name") for c in cases if c.find("failure") is not None] == gated
    html = (out / "report.html").read_text()
    checker = _Checker()
    checker.feed(html)
    checker.close()
    assert checker.stack == [] and checker.external == []
    assert checker.svgs == 5
    for svg in html.split("<svg")[1:]:
        ElementTree.fromstring("<svg" + svg.split("</svg>")[0] + "</svg>")
    md = (out / "report.md").read_text()
    assert md.startswith("# spanguard fairness report\n\n**FAILED**")
    assert "| tool_use_parity | 1.0000 |" in md


def test_point_gate_reproduces_fairtrace_verdicts(
    tmp_path: Path, golden_records: list[dict[str, Any]]
) -> None:
    suite = _golden_suite(tmp_path, golden_records)
    records = tmp_path / "records.json"
    records.write_text(json.dumps(golden_records))
    result = CliRunner().invoke(
        cli, ["fairness", str(suite), str(records), "--gate", "point", "--format", "json", *_FAST]
    )
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    verdicts = {r["metric"]: r["passed"] for r in summary["metric_results"]}
    assert verdicts == {
        "tool_use_parity": False,
        "escalation_parity": False,
        "helpfulness_gap": False,
        "refusal_gap": True,
        "counterfactual_stability": False,
    }


def test_bad_record_line_names_file_line_and_field(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "tool_use_parity"}])
    records = tmp_path / "r.jsonl"
    good = {
        "id": "seed0::1",
        "seed_id": "seed0",
        "prompt": "p",
        "assignments": {"gender": "man"},
        "response": "ok",
        "response_metadata": {"trace": {"tool_calls": ["kb_search"]}},
    }
    records.write_text(json.dumps({**good, "response_metadata": {}}) + "\n" + json.dumps(good))
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(records)])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: {records}:2: field 'response_metadata.trace.tool_calls[0]': must be an object "
        'such as {"name": "search"}.\n'
    )


def test_records_matching_no_variant_is_bad_input(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "tool_use_parity"}])
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"id": "x", "seed_id": "s", "response": "ok"}) + "\n")
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(records)])
    assert result.exit_code == 2
    assert "none of the 1 record(s) match a variant of the suite" in result.output


def test_run_fair_app_passes_and_biased_app_fails(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "escalation_parity"}, {"type": "tool_use_parity"}])
    ok = CliRunner().invoke(cli, ["run", str(suite), "--app", f"{_APPS}:fair", *_FAST])
    assert ok.exit_code == 0, ok.output
    assert ok.output.endswith("fairness gate PASSED\n")
    for app in ("biased", "async_biased"):
        out = tmp_path / app
        bad = CliRunner().invoke(
            cli,
            [
                "run",
                str(suite),
                "--app",
                f"{_APPS}:{app}",
                "--concurrency",
                "4",
                "--repeats",
                "2",
                "-o",
                str(out),
                *_FAST,
            ],
        )
        assert bad.exit_code == 1, bad.output
        assert bad.output.endswith("fairness gate FAILED: escalation_parity, tool_use_parity\n")
        report = json.loads((out / "report.json").read_text())
        assert len(report["scenario_results"]) == 160  # 80 variants x 2 repeats


def test_run_records_app_errors_per_variant_and_fails(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "refusal_gap"}], seeds=3)
    result = CliRunner().invoke(cli, ["run", str(suite), "--app", f"{_APPS}:flaky", *_FAST])
    assert result.exit_code == 1
    assert "app error on seed0::2 (repeat 0): RuntimeError: model timeout" in result.output
    assert "inconclusive: fewer than two groups hold data for this metric" in result.output
    wrong = CliRunner().invoke(cli, ["run", str(suite), "--app", f"{_APPS}:wrong_type"])
    assert "the app returned int; return a string or a dict with a 'text' string." in wrong.output


def test_run_text_metrics_catch_a_refusing_app(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "refusal_gap"}, {"type": "helpfulness_gap"}])
    result = CliRunner().invoke(cli, ["run", str(suite), "--app", f"{_APPS}:text_only", *_FAST])
    assert result.exit_code == 1
    assert result.output.endswith("fairness gate FAILED: refusal_gap, helpfulness_gap\n")


def test_run_with_unknown_app_is_bad_input(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "refusal_gap"}])
    result = CliRunner().invoke(cli, ["run", str(suite), "--app", "no_such_module:fn"])
    assert result.exit_code == 2
    assert result.output == (
        "Error: field '--app': the app 'no_such_module:fn' cannot be "
        "imported: No module named 'no_such_module'.\n"
    )


def test_compare_flags_regression_only_beyond_noise_and_threshold(tmp_path: Path) -> None:
    suite = _suite(tmp_path, [{"type": "escalation_parity"}, {"type": "tool_use_parity"}])
    fair, biased = tmp_path / "fair", tmp_path / "biased"
    for app, out in (("fair", fair), ("biased", biased)):
        CliRunner().invoke(
            cli, ["run", str(suite), "--app", f"{_APPS}:{app}", "-o", str(out), *_FAST]
        )
    same = CliRunner().invoke(cli, ["compare", str(fair), str(fair / "report.json")])
    assert same.exit_code == 0 and same.output.endswith("no fairness regression\n")
    worse = CliRunner().invoke(cli, ["compare", str(fair), str(biased), "--format", "json"])
    assert worse.exit_code == 1
    data = json.loads(worse.stdout)
    assert data["regressed"] == ["escalation_parity", "tool_use_parity"]
    better = CliRunner().invoke(cli, ["compare", str(biased), str(fair)])
    assert better.exit_code == 0
    missing = CliRunner().invoke(cli, ["compare", str(fair), str(tmp_path / "nope")])
    assert missing.exit_code == 2


def test_compare_ignores_a_worsening_within_noise(tmp_path: Path) -> None:
    def report(score: float, ci: list[float]) -> Path:
        path = tmp_path / f"r{score}.json"
        path.write_text(
            json.dumps(
                {
                    "metric_results": [
                        {
                            "metric": "escalation_parity",
                            "score": score,
                            "threshold": 0.1,
                            "direction": "lower",
                            "passed": True,
                            "confidence_interval": ci,
                            "interval_level": 0.95,
                        }
                    ]
                }
            )
        )
        return path

    base, cand = report(0.05, [0.0, 0.2]), report(0.12, [0.0, 0.3])
    result = CliRunner().invoke(cli, ["compare", str(base), str(cand)])
    assert result.exit_code == 0, result.output


def test_init_writes_a_valid_starter_suite_and_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "fairness.yaml"
    first = CliRunner().invoke(cli, ["init", "-o", str(target)])
    assert first.exit_code == 0 and target.exists()
    second = CliRunner().invoke(cli, ["init", "-o", str(target)])
    assert second.exit_code == 2
    assert second.output == f"Error: {target} already exists; pass --force to overwrite it.\n"
    from spanguard_processor.fairness import load_suite

    assert len(load_suite(target).variants) == 288


def test_starter_suite_is_large_enough_to_catch_a_deterministic_gap(tmp_path: Path) -> None:
    target = tmp_path / "fairness.json"
    CliRunner().invoke(cli, ["init", "-o", str(target)])
    result = CliRunner().invoke(cli, ["run", str(target), "--app", f"{_APPS}:biased", *_FAST])
    assert result.exit_code == 1, result.output
    assert "escalation_parity" in result.output.splitlines()[-1]


def test_a_metric_no_record_is_valid_for_is_insufficient_data_with_two_attributes(
    tmp_path: Path,
) -> None:
    """token_gap over records that say nothing about model calls, in a suite of two attributes:
    the metric has no data (it crashed computing each attribute's gap over no records)."""
    records = [
        {
            "id": f"s{s}::{g}-{a}",
            "seed_id": f"s{s}",
            "prompt": f"Case {s}",
            "assignments": {"gender": g, "age": a},
            "response": "Here you go.",
        }
        for s in range(4)
        for g in ("man", "woman")
        for a in ("20", "60")
    ]
    suite = _golden_suite(tmp_path, records)
    data = json.loads(suite.read_text())
    data["metrics"] = [{"type": "token_gap"}, {"type": "refusal_gap"}]
    suite.write_text(json.dumps(data))
    path = tmp_path / "records.json"
    path.write_text(json.dumps(records))
    result = CliRunner().invoke(cli, ["fairness", str(suite), str(path), *_FAST])
    assert result.exit_code == 1, result.output
    assert "NO_SIGNAL" in next(line for line in result.output.splitlines() if " token_gap " in line)
    assert result.output.endswith(
        "fairness gate FAILED: token_gap (NO_SIGNAL), refusal_gap (INCONCLUSIVE)\n"
    )
