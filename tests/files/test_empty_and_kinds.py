"""An input without records is exit 2 "no records in FILE"; a file of the wrong kind is named
by its kind ("… is a case set (from `cases build`); `fairness` wants …").

Measured at 5ef49cb: ``traces convert EMPTY`` exit 0 "wrote 0 record(s)"; ``cases run --cases
EMPTY`` exit 0; a case set where traces belong: "field 'seed_id': must be a string."; the
suite itself where traces belong: "is not valid JSON"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spanguard_processor.store.span_store import SpanStore

from .conftest import FAST, Workspace, invoke


def _empty(ws: Workspace) -> Path:
    path = ws.root / "empty.jsonl"
    path.write_text("\n  \n")
    return path


@pytest.mark.parametrize(
    "command",
    [
        "convert",
        "export",
        "cases run --cases",
        "cases run --outputs",
        "cases build",
        "fairness",
        "ingest",
        "check",
    ],
)
def test_an_input_without_records_is_exit_2(workspace: Workspace, command: str) -> None:
    empty, ws, out = _empty(workspace), workspace, workspace.root / "out"
    args: dict[str, list[str | Path]] = {
        "convert": ["traces", "convert", empty, "-o", out],
        "export": ["traces", "export", "--store", empty, "-o", out],
        "cases run --cases": ["cases", "run", "--cases", empty, "--outputs", ws.outputs],
        "cases run --outputs": ["cases", "run", "--cases", ws.cases, "--outputs", empty],
        "cases build": ["cases", "build", empty, "-o", out],
        "fairness": ["fairness", ws.suite, empty, *FAST],
        "ingest": ["ingest", empty, "--store", ws.root / "s.db"],
        "check": ["check", "--baseline", empty, "--current", ws.run],
    }
    result = invoke(*args[command])
    assert result.exit_code == 2, result.output
    assert f"Error: no records in {empty}: the file is empty;" in result.output
    assert not out.exists()


def test_a_store_without_traces_is_no_records_unless_allowed(tmp_path: Path) -> None:
    store, out = tmp_path / "spans.db", tmp_path / "out.jsonl"
    SpanStore(store).close()  # a real store, holding no trace
    for command in (["traces", "export", "--store", store], ["traces", "convert", store]):
        refused = invoke(*command, "-o", out)
        assert refused.exit_code == 2, refused.output
        assert refused.output == (
            f"Error: no records in {store}: it holds no agent traces. "
            "Pass --allow-empty to write an empty file anyway.\n"
        )
        assert not out.exists()
        allowed = invoke(*command, "-o", out, "--allow-empty")
        assert allowed.exit_code == 0 and out.read_bytes() == b""
        out.unlink()


KINDS = {
    "case set": ("cases", "is a case set (from `cases build`)"),
    "suite": ("suite", "is a fairness suite"),
    "run result": ("run", "is a run result (from `cases run -o`)"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_wrong_kind_in_the_traces_slot_of_fairness_is_named(
    workspace: Workspace, kind: str
) -> None:
    attribute, named = KINDS[kind]
    path = getattr(workspace, attribute)
    result = invoke("fairness", workspace.suite, path, *FAST)
    assert result.exit_code == 2, result.output
    assert result.output == (
        f"Error: {path} {named}; `fairness` wants agent traces, fairtrace "
        "records or a span file here.\n"
    )


@pytest.mark.parametrize(
    ("slot", "wrong", "named", "wants"),
    [
        (
            ["fairness", "{wrong}", "{records}"],
            "cases",
            "is a case set (from `cases build`)",
            "`fairness` wants a fairness suite (JSON or YAML) here",
        ),
        (
            ["cases", "run", "--cases", "{wrong}", "--outputs", "{outputs}"],
            "outputs",
            "is outputs (JSON lines of {id, output})",
            "`cases run` wants a case set",
        ),
        (
            ["check", "--baseline", "{wrong}", "--current", "{run}"],
            "cases",
            "is a case set (from `cases build`)",
            "`check` wants a run result",
        ),
        (
            ["ingest", "{wrong}", "--store", "{root}/s.db"],
            "traces",
            "is agent traces (from `traces export` or the processor)",
            "`ingest` wants a span file",
        ),
        (
            ["cases", "build", "{wrong}", "-o", "{root}/e"],
            "suite",
            "is a fairness suite",
            "`cases build` wants traces",
        ),
    ],
)
def test_every_slot_names_the_kind_it_got(
    workspace: Workspace, slot: list[str], wrong: str, named: str, wants: str
) -> None:
    values = {
        "wrong": getattr(workspace, wrong),
        "records": workspace.records,
        "outputs": workspace.outputs,
        "run": workspace.run,
        "root": workspace.root,
    }
    result = invoke(*(part.format(**values) for part in slot))
    assert result.exit_code == 2, result.output
    assert f"Error: {values['wrong']} {named}; {wants}" in result.output


def test_a_yaml_suite_in_the_traces_slot_is_named(workspace: Workspace) -> None:
    suite = workspace.root / "suite.yaml"
    suite.write_text("# a suite\ndataset:\n  prompts: []\nmetrics: []\n")
    result = invoke("fairness", workspace.suite, suite)
    assert result.exit_code == 2
    assert f"{suite} is a fairness suite;" in result.output


def test_the_right_kinds_still_pass(workspace: Workspace) -> None:
    # fairtrace's report.json (no `spanguard` block): its scenario_results are records
    fairtrace_report = workspace.root / "fairtrace-report.json"
    report = json.loads(workspace.report.read_text())
    report.pop("spanguard")
    fairtrace_report.write_text(json.dumps(report))
    for path in (workspace.records, workspace.traces, fairtrace_report):
        result = invoke("fairness", workspace.suite, path, *FAST)
        assert result.exit_code in (0, 1), path
    assert (
        f"note: {fairtrace_report} is a fairness report; its scenario_results are read as "
        "the records."
    ) in result.output


def test_spanguards_own_report_in_the_traces_slot_is_refused(workspace: Workspace) -> None:
    before = workspace.report.read_bytes()
    result = invoke("fairness", workspace.suite, workspace.report, *FAST)
    assert result.exit_code == 2, result.output
    refusal = f"{workspace.report}: is a fairness report written by spanguard: it holds verdicts"
    assert refusal in result.output
    assert "Traceback" not in result.output
    assert workspace.report.read_bytes() == before
