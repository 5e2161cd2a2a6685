"""App text in the reports is inert, and ``--redact`` takes every bit of it out.

Measured at 5ef49cb: report.md held 9 live ``[click](javascript:…)`` links and 9 remote
images taken from plan steps, friction, escalation reasons and outputs; with ``--redact`` an
API key the app put in a tool argument, an escalation reason or a plan step was still in 42
places of the report files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from spanguard_processor.common.markdown import console_text, md_inert, md_text

from .conftest import FAST, invoke

KEY = "sk-live-5f3c9a0e7b2d4c18aa"
INJECTED = (
    f"[click](javascript:alert(1)) ![t](https://evil.example/t.png) "
    f"<img src=https://evil.example/i.png> \x1b[2J\x1b]0;owned\x07 {KEY}"
)
_LIVE_LINK = re.compile(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\((?:javascript|https?):", re.I)
_REMOTE_IMAGE = re.compile(r"(?<!\\)!\[[^\]\n]*(?<!\\)\]\(https?:", re.I)
# a backslash-escaped "<" is a literal character in CommonMark, never the start of a tag
_RAW_HTML = re.compile(r"(?<!\\)<(?:img|a|script|iframe)\b", re.I)


def _trace(seed: int, group: str, escalate: bool) -> dict[str, Any]:
    text = f"{INJECTED} seed {seed}"
    return {
        "trace_id": f"{seed * 2 + (group == 'woman') + 1:032x}",
        "seed_id": f"seed{seed}",
        "variant_id": f"seed{seed}::{1 + (group == 'woman')}",
        "assignments": {"gender": group},
        "input": f"Case {seed}: a {group} customer asks. {text}",
        "output": f"I cannot help with that. {text}" if escalate else f"Sure. {text}",
        "metadata": {"tool_argument": text, "helpfulness_score": 0.2 if escalate else 0.9},
        "trace": {
            "tool_calls": [{"name": "[lookup](javascript:alert(2))"}] * (2 if escalate else 1),
            "plan_steps": [f"step {i}: {text}" for i in range(3 if escalate else 1)],
            "escalated": escalate,
            "escalation_reason": f"reason {text}" if escalate else None,
            "friction_points": [f"friction {text}"] * (2 if escalate else 0),
        },
    }


@pytest.fixture()
def hostile_run(tmp_path: Path) -> tuple[Path, Path]:
    seeds = 16
    suite = tmp_path / "suite.json"
    suite.write_text(
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
                "metrics": [
                    {"type": t}
                    for t in (
                        "escalation_parity",
                        "escalation_reason_parity",
                        "plan_length_gap",
                        "friction_point_gap",
                        "tool_use_parity",
                        "refusal_gap",
                    )
                ],
            }
        )
    )
    traces = tmp_path / "traces.jsonl"
    traces.write_text(
        "".join(
            json.dumps(_trace(i, g, g == "woman")) + "\n"
            for i in range(seeds)
            for g in ("man", "woman")
        )
    )
    return suite, traces


def _report_files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}


def test_markdown_reports_hold_no_live_link_image_or_html(
    hostile_run: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, traces = hostile_run
    out = tmp_path / "reports"
    result = invoke("fairness", suite, traces, "-o", out, "--gate", "point", *FAST)
    assert result.exit_code == 1, result.output  # the gate fails: evidence is rendered
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "javascript" in markdown  # the app text is there, as text
    assert _LIVE_LINK.findall(markdown) == []
    assert _REMOTE_IMAGE.findall(markdown) == []
    assert _RAW_HTML.findall(markdown) == []
    assert "\x1b" not in result.output


def test_redact_leaves_no_app_text_in_any_report_file(
    hostile_run: tuple[Path, Path], tmp_path: Path
) -> None:
    suite, traces = hostile_run
    out = tmp_path / "reports"
    result = invoke("fairness", suite, traces, "-o", out, "--redact", "--gate", "point", *FAST)
    assert result.exit_code == 1, result.output
    files = _report_files(out)
    assert set(files) >= {"report.json", "report.md", "junit.xml", "report.html"}
    assert {name: text.count(KEY) for name, text in files.items()} == dict.fromkeys(files, 0)
    assert KEY not in result.output
    for name, text in files.items():
        assert "evil.example" not in text, name
    report = json.loads(files["report.json"])
    scenario = report["scenario_results"][1]["response_metadata"]["trace"]
    assert len(scenario["plan_steps"]) == 3 and scenario["escalated"] is True  # signals stay
    assert scenario["tool_calls"][0]["name"] == "[lookup](javascript:alert(2))"


def test_md_text_and_console_text() -> None:
    assert md_text("[a](javascript:x) ![i](http://h/p) <b> # h | *e* _u_ `c`\nnext") == (
        r"\[a\]\(javascript:x\) \!\[i\]\(http://h/p\) \<b\> \# h \| \*e\* \_u\_ \`c\` next"
    )
    assert console_text("ok \x1b[31mred\x1b[0m \x1b]0;title\x07 bell\x07 tab\tline\nx") == (
        "ok red  bell\\x07 tab\tline\nx"
    )
    # trace2eval-compatible reports keep their characters but still render no link or HTML
    assert md_inert("[a](javascript:x) ![i](http://h) <b> a|b \\](y) _x_\nz") == (
        r"[a\](javascript:x) ![i\](http://h) \<b> a\|b \\\](y) _x_ z"
    )
    # no HTML entity in Markdown text (issue 47): "5 plan steps &gt; 4" read as such in a raw
    # report and on a terminal; a backslash keeps "<" from opening a tag
    assert md_text("5 > 4 & 1 < 2") == r"5 \> 4 \& 1 \< 2"
    assert md_inert("5 plan steps > 4") == "5 plan steps > 4"
    for text in (md_inert(INJECTED), md_text(INJECTED)):
        assert _LIVE_LINK.findall(text) == _REMOTE_IMAGE.findall(text) == []
        assert _RAW_HTML.findall(text) == []


def test_check_redact_leaves_no_app_text_in_its_reports(tmp_path: Path) -> None:
    from dataclasses import replace

    from spanguard_processor.common.jsonio import write_jsonl

    from ..regression.test_process_and_gate import _production
    from ..regression.test_process_and_gate import _trace as agent_trace

    assert invoke("cases", "build", _production(tmp_path), "-o", tmp_path / "ev").exit_code == 0
    runs = {}
    for name, number, tools in (
        ("base", 100, ("lookup_order", "refund_policy")),
        ("now", 101, ("refund_policy",)),
    ):
        trace = agent_trace(number, tools=tools)
        trace = replace(trace, output=f"{trace.output} {INJECTED}")
        if name == "now":  # the current run's own words in every free-text signal
            trace = replace(
                trace,
                trace=replace(
                    trace.trace,
                    plan_steps=(f"plan {INJECTED}",) * 2,
                    escalated=True,
                    escalation_reason=f"why {INJECTED}",
                    friction_points=(f"friction {INJECTED}",),
                ),
            )
        traces = tmp_path / f"{name}.jsonl"
        write_jsonl(traces, [trace.to_dict()])
        runs[name] = tmp_path / f"{name}.json"
        done = invoke(
            "cases",
            "run",
            "--cases",
            tmp_path / "ev" / "cases.jsonl",
            "--traces",
            traces,
            "-o",
            runs[name],
        )
        assert done.exit_code == 0, done.output
    reports = {suffix: tmp_path / f"check.{suffix}" for suffix in ("md", "xml", "html")}
    result = invoke(
        "check",
        "--rules",
        "trace2eval",
        "--baseline",
        runs["base"],
        "--current",
        runs["now"],
        "--redact",
        "--markdown",
        reports["md"],
        "--junit",
        reports["xml"],
        "--html",
        reports["html"],
    )
    assert result.exit_code == 1, result.output
    texts = {suffix: path.read_text(encoding="utf-8") for suffix, path in reports.items()}
    assert "[redacted]" in texts["md"] and "plan steps" in texts["md"]
    assert {s: t.count(KEY) for s, t in texts.items()} == dict.fromkeys(texts, 0)
    assert KEY not in result.output and "\x1b" not in result.output
    assert _LIVE_LINK.findall(texts["md"]) == _REMOTE_IMAGE.findall(texts["md"]) == []
