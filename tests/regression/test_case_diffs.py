"""Case diffs: a case that went from pass to fail shows what changed, in every output."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.common.jsonio import write_jsonl

from .test_process_and_gate import _production, _trace


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def _runs(tmp_path: Path) -> tuple[Path, Path, str]:
    """A baseline that calls both tools and a current run that drops lookup_order."""
    assert (
        _invoke(
            "cases",
            "build",
            str(_production(tmp_path)),
            "-o",
            str(tmp_path / "ev"),
            "--select",
            "signals",
        ).exit_code
        == 0
    )  # one case
    cases = str(tmp_path / "ev" / "cases.jsonl")
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    write_jsonl(good, [_trace(100).to_dict()])
    write_jsonl(bad, [_trace(101, tools=("refund_policy",)).to_dict()])
    for name, traces in (("base", good), ("now", bad)):
        result = _invoke(
            "cases",
            "run",
            "--cases",
            cases,
            "--traces",
            str(traces),
            "-o",
            str(tmp_path / f"{name}.json"),
        )
        assert result.exit_code == 0, result.output
    (case_id,) = json.loads((tmp_path / "now.json").read_text())["case_results"]
    return tmp_path / "base.json", tmp_path / "now.json", case_id


def _check(tmp_path: Path, base: Path, now: Path, tag: str = "") -> Any:
    return _invoke(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        str(base),
        "--current",
        str(now),
        "--markdown",
        str(tmp_path / f"check{tag}.md"),
        "--junit",
        str(tmp_path / f"check{tag}.xml"),
        "--html",
        str(tmp_path / f"check{tag}.html"),
    )


def test_run_records_what_each_case_did(tmp_path: Path) -> None:
    _, now, case_id = _runs(tmp_path)
    detail = json.loads(now.read_text())["case_details"][case_id]
    assert "tools_include: tools not called ['lookup_order']" in detail["details"]
    evidence = detail["evidence"]
    assert evidence["trace_id"] == f"{101:032x}"
    assert evidence["process"]["tool_calls"] == ["refund_policy"]
    assert evidence["output"].startswith("Refunds for order 1234")
    assert evidence["input"] == "How do I get a refund for order 1234?"


def test_dropped_tool_call_shows_in_markdown_junit_html_and_console(tmp_path: Path) -> None:
    base, now, case_id = _runs(tmp_path)
    gate = _check(tmp_path, base, now)
    assert gate.exit_code == 1
    assert f"  {case_id}: tools_include failed (tools not called ['lookup_order'])" in gate.stdout
    assert "tool calls: missing lookup_order" in gate.stdout

    markdown = (tmp_path / "check.md").read_text()
    assert f"### {case_id}" in markdown
    assert (
        "| **❌ tool calls** | **lookup_order → refund_policy** | "
        "**refund_policy (**missing lookup_order**)** |"
    ) in markdown
    assert "- ❌ `tools_include`: tools not called ['lookup_order']" in markdown
    # the step summary says the verdict as the console does
    assert (
        "\n**FAIL: 1 case(s) regressed (1 pass → fail); rule(s) failed: case_outcomes**\n"
        in markdown
    )

    (failure,) = [
        f
        for f in ET.parse(tmp_path / "check.xml").getroot().iter("failure")
        if f.get("type") == "pass_to_fail"
    ]
    assert failure.get("message") == f"{case_id} passed in the baseline and fails now"
    assert failure.text is not None
    assert "failed: tools_include (tools not called ['lookup_order'])" in failure.text
    assert (
        "! tool calls: baseline lookup_order → refund_policy | current refund_policy  "
        "[missing lookup_order]"
    ) in failure.text

    html = (tmp_path / "check.html").read_text()
    assert "<script" not in html and "http" not in html.replace("http://www.w3.org/2000/svg", "")
    assert f'id="case-{case_id}"' in html
    assert (
        '<tr class="changed failing"><th>✗ tool calls</th><td>lookup_order → refund_policy'
        '</td><td>refund_policy <span class="note">(missing lookup_order)</span></td></tr>'
    ) in html
    assert "tools not called [&#x27;lookup_order&#x27;]" in html
    assert 'id="pass_rate"' in html and 'id="p95_latency_ms"' in html


def test_check_reports_are_byte_identical_on_a_second_run(tmp_path: Path) -> None:
    base, now, _ = _runs(tmp_path)
    _check(tmp_path, base, now)
    _check(tmp_path, base, now, tag="2")
    for suffix in ("md", "xml", "html"):
        assert (tmp_path / f"check.{suffix}").read_bytes() == (
            tmp_path / f"check2.{suffix}"
        ).read_bytes()


def test_runs_without_evidence_still_compare(tmp_path: Path) -> None:
    base, now, case_id = _runs(tmp_path)
    for path in (base, now):
        payload = json.loads(path.read_text())
        for detail in payload["case_details"].values():
            del detail["evidence"]
        path.write_text(json.dumps(payload))
    gate = _check(tmp_path, base, now)
    assert gate.exit_code == 1
    assert "### " not in (tmp_path / "check.md").read_text()
    html = (tmp_path / "check.html").read_text()
    assert f"(runs written before it was kept, or by trace2eval): {case_id}" in html


def test_malformed_case_details_are_bad_input(tmp_path: Path) -> None:
    base, now, _ = _runs(tmp_path)
    payload = json.loads(now.read_text())
    payload["case_details"] = ["not", "an", "object"]
    now.write_text(json.dumps(payload))
    gate = _check(tmp_path, base, now)
    assert gate.exit_code == 2
    assert "case_details" in gate.output and "Traceback" not in gate.output


def test_redact_leaves_questions_and_outputs_out(tmp_path: Path) -> None:
    base, now, _ = _runs(tmp_path)
    gate = _invoke(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        str(base),
        "--current",
        str(now),
        "--redact",
        "--markdown",
        str(tmp_path / "r.md"),
        "--junit",
        str(tmp_path / "r.xml"),
        "--html",
        str(tmp_path / "r.html"),
    )
    assert gate.exit_code == 1
    for name in ("r.md", "r.xml", "r.html"):
        text = (tmp_path / name).read_text()
        assert "Refunds for order" not in text and "How do I get a refund" not in text, name
        assert "missing lookup_order" in text, name


def test_trace_url_links_the_case_diffs_traces(tmp_path: Path) -> None:
    base, now, _ = _runs(tmp_path)
    gate = _invoke(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        str(base),
        "--current",
        str(now),
        "--trace-url",
        "http://jaeger:16686/trace/{trace_id}",
        "--markdown",
        str(tmp_path / "l.md"),
        "--junit",
        str(tmp_path / "l.xml"),
        "--html",
        str(tmp_path / "l.html"),
    )
    assert gate.exit_code == 1
    link = f"http://jaeger:16686/trace/{101:032x}"
    assert f"[`{101:032x}`]({link})" in (tmp_path / "l.md").read_text()
    assert link in (tmp_path / "l.xml").read_text()
    assert f'<a href="{link}" rel="noreferrer">' in (tmp_path / "l.html").read_text()
    bad = _invoke(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        str(base),
        "--current",
        str(now),
        "--trace-url",
        "javascript:alert({trace_id})",
    )
    assert bad.exit_code == 2 and "--trace-url" in bad.output
