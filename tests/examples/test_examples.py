"""Every example under examples/ runs, and does what examples/README.md says it does."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

from spanguard_processor.cli import cli
from spanguard_processor.traces.model import AgentTrace, RetrievedDocument, ToolCall

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SPANGUARD = [sys.executable, "-m", "spanguard_processor"]


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120, env=full_env)


# --- the RAG app under `spanguard run` --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bias", "code", "failed"),
    [
        ("0", 0, set()),
        ("1", 1, {"retrieval_exposure_gap", "helpfulness_gap"}),
    ],
)
def test_rag_app_under_spanguard_run(
    tmp_path: Path, bias: str, code: int, failed: set[str]
) -> None:
    result = _run(
        [
            *SPANGUARD,
            "run",
            "examples/rag_suite.yaml",
            "--app",
            "examples.rag_app:answer",
            "-o",
            str(tmp_path),
        ],
        env={"RAG_APP_BIAS": bias},
    )
    assert result.returncode == code, result.stdout + result.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["variant_count"] == 96
    gating = {
        m["metric"]
        for m in report["metric_results"]
        if not m["passed"] and m["verdict"] != "report_only"
    }
    assert gating == failed
    exposure = next(m for m in report["metric_results"] if m["metric"] == "retrieval_exposure_gap")
    assert (exposure["score"] > 0.1) is (bias == "1")


# --- the OpenInference app: spans -> ingest -> export -> fairness ----------------------------


def _openinference_pipeline(tmp_path: Path, *extra: str) -> tuple[list[AgentTrace], int]:
    spans = tmp_path / "spans.jsonl"
    made = _run(
        [
            sys.executable,
            "examples/openinference_app.py",
            "--suite",
            "examples/openinference_suite.yaml",
            "-o",
            str(spans),
            *extra,
        ]
    )
    assert made.returncode == 0, made.stderr
    store, traces = tmp_path / "oi.db", tmp_path / "traces.jsonl"
    ingested = _run([*SPANGUARD, "ingest", str(spans), "--store", str(store)])
    assert ingested.returncode == 0, ingested.stderr
    exported = _run([*SPANGUARD, "traces", "export", "--store", str(store), "-o", str(traces)])
    assert exported.returncode == 0, exported.stderr
    records = [AgentTrace.from_dict(json.loads(line)) for line in traces.read_text().splitlines()]
    gate = _run(
        [
            *SPANGUARD,
            "fairness",
            "examples/openinference_suite.yaml",
            str(traces),
            "-o",
            str(tmp_path / "report"),
        ]
    )
    assert gate.returncode in (0, 1), gate.stderr
    return records, gate.returncode


@pytest.mark.slow
def test_openinference_spans_become_tool_calls_and_documents(tmp_path: Path) -> None:
    traces, code = _openinference_pipeline(tmp_path)
    assert code == 0
    assert len(traces) == 64
    first = next(t for t in traces if t.variant_id == "eligibility::1")
    assert "openinference" in first.source
    assert first.seed_id == "eligibility" and first.assignments == {"housing": "homeowner"}
    assert first.input == "I am a homeowner. Am I eligible for a loan?"
    assert first.trace.tool_calls == (ToolCall("check_credit"),)
    assert first.trace.retrieved_documents[:2] == (
        RetrievedDocument("policy-documents", "policy", 1, 1.0),
        RetrievedDocument("policy-eligibility", "policy", 2, 0.5),
    )


@pytest.mark.slow
def test_openinference_biased_app_fails_the_gate(tmp_path: Path) -> None:
    traces, code = _openinference_pipeline(tmp_path, "--bias")
    assert code == 1
    renter = next(t for t in traces if t.variant_id == "eligibility::2")
    assert renter.trace.tool_calls == ()
    assert renter.trace.retrieved_documents[0].group == "blog"
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert {m["metric"] for m in report["metric_results"] if not m["passed"]} == {
        "tool_use_parity",
        "retrieval_exposure_gap",
    }


# --- the CI workflow -----------------------------------------------------------------------


def _workflow() -> dict[str, object]:
    data = yaml.safe_load((EXAMPLES / "ci" / "github-actions.yml").read_text())
    assert isinstance(data, dict)
    return data


def _spanguard_command_lines() -> list[list[str]]:
    steps = _workflow()["jobs"]["gate"]["steps"]  # type: ignore[index]
    lines = []
    for step in steps:
        for line in str(step.get("run", "")).splitlines():
            line = line.strip()
            if not line.startswith("spanguard "):
                continue
            for stop in (" || ", " > ", " >> "):  # shell plumbing around the command
                line = line.split(stop)[0]
            lines.append(shlex.split(line)[1:])
    return lines


def _parse(args: list[str]) -> dict[str, object]:
    """Resolve ARGS to the leaf command and parse them with its own parser, as click would.

    Option names, option arity, required options and the count of positional arguments are
    checked; values are not converted (the files they name exist only in CI).
    """
    command: click.Command = cli
    ctx = click.Context(cli, info_name="spanguard")
    while isinstance(command, click.Group):
        name, args = args[0], args[1:]
        sub = command.get_command(ctx, name)
        assert sub is not None, f"no command {name!r}"
        command, ctx = sub, click.Context(sub, info_name=name, parent=ctx)
    opts, leftover, _ = command.make_parser(ctx).parse_args(list(args))
    assert leftover == [], f"unexpected arguments {leftover}"
    for param in command.params:
        if param.required:
            assert opts.get(param.name) not in (None, ()), f"{param.name} is required"
    return opts


def test_workflow_parses_and_gates_every_part() -> None:
    workflow = _workflow()
    assert workflow["name"] == "spanguard gates"
    lines = _spanguard_command_lines()
    commands = sorted(
        {" ".join(a for a in args[:2] if not a.startswith(("-", "$", '"'))) for args in lines}
    )
    assert commands == ["cases build", "cases run", "check", "compare", "run"]
    text = (EXAMPLES / "ci" / "github-actions.yml").read_text()
    assert "--junit" in text and "$GITHUB_STEP_SUMMARY" in text


@pytest.mark.slow
def test_every_spanguard_command_in_the_workflow_is_accepted_by_the_cli() -> None:
    lines = _spanguard_command_lines()
    assert len(lines) >= 7
    for args in lines:
        _parse(args)  # raises click.UsageError / NoSuchOption on an option that does not exist
        help_result = _run([*SPANGUARD, *args, "--help"])
        assert help_result.returncode == 0, (args, help_result.stderr)


def test_the_parser_check_can_fail() -> None:
    with pytest.raises(click.NoSuchOption):
        _parse(["check", "--baseline", "a", "--current", "b", "--no-such-option"])
    with pytest.raises(AssertionError):
        _parse(["cases", "run", "-o", "x.json"])  # --cases is required


@pytest.mark.slow
def test_answer_cases_helper_feeds_cases_run(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    questions = ["How do I export my data to CSV?", "How do I change my billing plan?"]
    log.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"t{i}",
                    "input": q,
                    "output": "I am not sure, sorry.",
                    "feedback": -1,
                    "retries": 1,
                }
            )
            + "\n"
            for i, q in enumerate(questions)
        )
    )
    assert (
        _run([*SPANGUARD, "cases", "build", str(log), "-o", str(tmp_path / "evalset")]).returncode
        == 0
    )
    cases, outputs = tmp_path / "evalset" / "cases.jsonl", tmp_path / "outputs.jsonl"
    answered = _run(
        [
            sys.executable,
            "examples/ci/answer_cases.py",
            "--cases",
            str(cases),
            "--app",
            "examples.rag_app:answer",
            "-o",
            str(outputs),
        ]
    )
    assert answered.returncode == 0, answered.stderr
    rows = [json.loads(line) for line in outputs.read_text().splitlines()]
    assert len(rows) == 2 and all("source: vendor-" in row["output"] for row in rows)
    scored = _run(
        [
            *SPANGUARD,
            "cases",
            "run",
            "--cases",
            str(cases),
            "--outputs",
            str(outputs),
            "-o",
            str(tmp_path / "m.json"),
            "--junit",
            str(tmp_path / "j.xml"),
        ]
    )
    assert scored.returncode == 0, scored.stdout + scored.stderr
    assert json.loads((tmp_path / "m.json").read_text())["metrics"]["passed"] == 2


# --- the pytest example --------------------------------------------------------------------


@pytest.mark.slow
def test_pytest_example_passes_in_a_subprocess() -> None:
    result = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "examples/test_fairness_example.py",
        ]
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout
