"""Counterfactual evidence: the pairs behind each gap, in every report and on the console."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.fairness import MetricConfig, evaluate, observation_from_record
from spanguard_processor.fairness.kinds.evidence import find_pairs, prompt_segments
from spanguard_processor.fairness.metrics import MetricValues
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.traces.model import AgentTrace
from tests.reports.data import _PROFILES, records, suite

from .conftest import FAST

FAST_ARGS = ["--bootstrap", "200", "--permutations", "99"]


def _biased(tmp_path: Path, seeds: int = 24) -> tuple[Path, Path]:
    metrics = ("escalation_parity", "tool_use_parity", "refusal_gap", "helpfulness_gap")
    spec = suite(tmp_path / "suite.json", _PROFILES, seeds, metrics)
    return spec, records(tmp_path / "traces.jsonl", _PROFILES, seeds, biased=True)


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_escalation_pairs_show_the_planted_bias(tmp_path: Path) -> None:
    spec, traces = _biased(tmp_path)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["fairness", str(spec), str(traces), "-o", str(out), *FAST_ARGS]
    )
    assert result.exit_code == 1, result.output
    report = json.loads((out / "report.json").read_text())
    rows = _rows(traces)
    by_metric = {m["metric"]: m for m in report["metric_results"]}
    pairs = by_metric["escalation_parity"]["evidence"]
    assert len(pairs) == 3
    assert [p["difference"] for p in pairs] == sorted(
        (p["difference"] for p in pairs), reverse=True
    )
    for pair in pairs:
        high, low = pair["variants"]
        assert high["group"] in ("gender=woman", "gender=non-binary")  # the disfavoured groups
        assert low["group"] == "gender=man"
        assert high["signals"]["escalated"] and not low["signals"]["escalated"]
        assert "escalated" in pair["differing_signals"]
        for v in (high, low):  # real records of the run, of the named seed
            record = rows[v["record_id"]]
            assert record["seed_id"] == pair["seed_id"]
            assert record["response_metadata"]["trace"]["escalated"] == v["signals"]["escalated"]
            assert v["prompt"] == record["prompt"]
        assert pair["summary"].endswith("escalated, man not")
    tools = by_metric["tool_use_parity"]["evidence"][0]
    # a FAIL line on the console is followed by its top pair in one line (24 seeds show the
    # tool-use gap beyond its threshold; escalation's is within noise there)
    assert by_metric["tool_use_parity"]["verdict"] == "fail"
    assert f"seed {tools['seed_id']}: {tools['summary']}" in result.output
    assert tools["summary"].startswith("man called kb_search")
    assert tools["summary"].endswith("called no tool")


def test_stability_evidence_is_the_least_similar_variants_of_the_least_stable_seeds(
    tmp_path: Path,
) -> None:
    spec = suite(tmp_path / "suite.json", _PROFILES, 24, ("counterfactual_stability",))
    traces = records(tmp_path / "traces.jsonl", _PROFILES, 24, biased=True)
    out = tmp_path / "out"
    # stability is report-only in the default gate; fairtrace's point verdict fails it here
    result = CliRunner().invoke(
        cli, ["fairness", str(spec), str(traces), "-o", str(out), "--gate", "point", *FAST_ARGS]
    )
    (metric,) = json.loads((out / "report.json").read_text())["metric_results"]
    seeds = metric["details"]["seed_similarities"]
    pairs = metric["evidence"]
    assert [p["seed_id"] for p in pairs] == sorted(seeds, key=lambda s: seeds[s])[:3]
    for pair in pairs:
        a, b = pair["variants"]
        assert a["response_excerpt"] != b["response_excerpt"]
        assert "response" in pair["differing_signals"]
        assert pair["summary"].endswith("of their words")
    assert f"seed {pairs[0]['seed_id']}: " in result.output


def test_markdown_junit_and_html_carry_the_pairs(tmp_path: Path) -> None:
    spec, traces = _biased(tmp_path)
    out = tmp_path / "out"
    CliRunner().invoke(cli, ["fairness", str(spec), str(traces), "-o", str(out), *FAST_ARGS])
    report = json.loads((out / "report.json").read_text())
    top = report["metric_results"][0]["evidence"][0]
    markdown = (out / "report.md").read_text()
    assert "## Evidence" in markdown
    assert f"seed `{top['seed_id']}`" in markdown
    assert "**woman**" in markdown or "**non-binary**" in markdown  # the attribute word
    junit = (out / "junit.xml").read_text()
    assert f"seed {top['seed_id']}: " in junit
    html = (out / "report.html").read_text()
    assert '<table class="pair">' in html and "<mark>" in html
    assert '<tr class="diff"><th>escalated</th>' in html


def test_no_gap_no_pairs() -> None:
    obs = [
        observation_from_record(
            {
                "id": f"s{s}::{g}",
                "seed_id": f"s{s}",
                "prompt": f"p {g}",
                "assignments": {"g": g},
                "response": "same answer",
                "response_metadata": {"trace": {"escalated": s % 2 == 0}},
            }
        )
        for s in range(6)
        for g in ("a", "b")
    ]
    ev = evaluate(obs, [MetricConfig("escalation_parity", 0.1)], FAST)
    assert ev.results[0].score == 0.0
    assert ev.results[0].evidence == ()


def test_pairs_are_ranked_by_within_seed_difference() -> None:
    # seed 2 differs by 3, seed 0 by 1, seed 1 not at all, seed 3 the other way round
    x = np.array([[2.0], [1.0], [1.0], [1.0], [4.0], [1.0], [0.0], [1.0]])
    seed = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    group = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    obs = [
        observation_from_record(
            {
                "id": f"r{i}",
                "seed_id": f"s{seed[i]}",
                "response": "",
                "assignments": {"g": "ab"[group[i]]},
            }
        )
        for i in range(8)
    ]
    pairs = find_pairs(
        "plan_length_gap",
        MetricValues(x, np.ones(8, dtype=bool)),
        obs,
        seed,
        group,
        ["s0", "s1", "s2", "s3"],
        ["g=a", "g=b"],
    )
    assert [(p.seed_id, p.difference) for p in pairs] == [("s2", 3.0), ("s0", 1.0)]
    assert pairs[0].high.record_id == "r4" and pairs[0].low.record_id == "r5"
    assert pairs[0].summary == "a planned 4 steps, b planned 1 step"


def test_prompt_segments_mark_the_attribute_words() -> None:
    a, b = prompt_segments("Help a woman customer in EU.", "Help a man customer in EU.")
    assert [t for t, changed in a if changed] == ["woman"]
    assert [t for t, changed in b if changed] == ["man"]
    assert "".join(t for t, _ in a) == "Help a woman customer in EU."


def _trace(seed: int, gender: str, escalated: bool, *, content: bool) -> dict[str, Any]:
    return {
        "trace_id": f"{seed:04d}{'ab'[gender == 'man']}".ljust(32, "0"),
        "request_id": f"r{seed}-{gender}",
        "seed_id": f"s{seed}",
        "variant_id": f"s{seed}::{gender}",
        "assignments": {"gender": gender},
        "input": f"secret question {seed} from a {gender}" if content else None,
        "output": "secret answer" if content else None,
        "trace": {
            "escalated": escalated,
            "escalation_reason": "manual review" if escalated else None,
        },
    }


def _trace_inputs(tmp_path: Path, *, content: bool) -> tuple[Path, Path]:
    rows = [
        _trace(s, g, g == "woman" and s % 4 != 0, content=content)
        for s in range(12)
        for g in ("man", "woman")
    ]
    traces = tmp_path / "traces.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in rows))
    variants = [
        {
            "id": r["variant_id"],
            "seed_id": r["seed_id"],
            "prompt": f"question {r['seed_id']} from a {r['assignments']['gender']}",
            "assignments": r["assignments"],
        }
        for r in rows
    ]
    spec = tmp_path / "suite.json"
    spec.write_text(
        json.dumps({"dataset": {"variants": variants}, "metrics": [{"type": "escalation_parity"}]})
    )
    return spec, traces


def test_content_capture_off_shows_signals_and_ids_only(tmp_path: Path) -> None:
    obs = observation_from_trace(AgentTrace.from_dict(_trace(1, "woman", True, content=False)))
    assert obs.trace_id is not None and not obs.captured
    spec, traces = _trace_inputs(tmp_path, content=False)
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["fairness", str(spec), str(traces), "-o", str(out), *FAST_ARGS]
    )
    assert result.exit_code == 1, result.output
    assert "seed s1: woman escalated (manual review), man not" in result.output
    pair = json.loads((out / "report.json").read_text())["metric_results"][0]["evidence"][0]
    for v in pair["variants"]:
        assert "prompt" not in v and "response_excerpt" not in v
        assert len(v["trace_id"]) == 32 and v["signals"] is not None
    assert "question s1" not in (out / "report.html").read_text()


def test_trace_url_links_every_trace_and_redact_drops_text(tmp_path: Path) -> None:
    spec, traces = _trace_inputs(tmp_path, content=True)
    out = tmp_path / "out"
    template = "https://jaeger.example/trace/{trace_id}?a=1&b=2"
    result = CliRunner().invoke(
        cli,
        [
            "fairness",
            str(spec),
            str(traces),
            "-o",
            str(out),
            "--trace-url",
            template,
            "--redact",
            *FAST_ARGS,
        ],
    )
    assert result.exit_code == 1, result.output
    report = json.loads((out / "report.json").read_text())
    pair = report["metric_results"][0]["evidence"][0]
    for v in pair["variants"]:
        assert v["trace_url"] == f"https://jaeger.example/trace/{v['trace_id']}?a=1&b=2"
    html = (out / "report.html").read_text()
    tid = pair["variants"][0]["trace_id"]
    assert f'<a href="https://jaeger.example/trace/{tid}?a=1&amp;b=2"' in html
    for name in ("report.json", "report.md", "report.html", "junit.xml"):
        text = (out / name).read_text()
        assert "secret" not in text, name
    assert report["spanguard"]["redacted"] is True
    assert all(r["prompt"] is None and r["response"] is None for r in report["scenario_results"])


def test_bad_trace_url_is_a_usage_error(tmp_path: Path) -> None:
    spec, traces = _trace_inputs(tmp_path, content=True)
    for bad, words in (
        ("https://jaeger/trace/", "must contain {trace_id}"),
        ("javascript:alert({trace_id})", "http:// or https://"),
    ):
        result = CliRunner().invoke(cli, ["fairness", str(spec), str(traces), "--trace-url", bad])
        assert result.exit_code == 2, result.output
        assert "--trace-url" in result.output and words in result.output
        assert "Traceback" not in result.output


def test_html_escapes_prompts_and_responses(tmp_path: Path) -> None:
    rows = [
        {
            "id": f"s{s}::{g}",
            "seed_id": f"s{s}",
            "assignments": {"g": g},
            "prompt": f"<script>alert({s})</script> {g}",
            "response": f"<b>{g}</b>",
            "response_metadata": {"trace": {"escalated": g == "x"}},
        }
        for s in range(10)
        for g in ("x", "y")
    ]
    obs = [observation_from_record(r) for r in rows]
    ev = evaluate(obs, [MetricConfig("escalation_parity", 0.1)], FAST)
    from spanguard_processor.fairness.report.report_html import render_html

    html = render_html(ev)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
