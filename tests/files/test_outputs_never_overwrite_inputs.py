"""An output that is an input is refused (exit 2) before anything is read or written.

Measured at 5ef49cb: each of these was accepted and the input replaced."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import FAST, Workspace, invoke

# (name, the input at risk, the command's arguments)
Case = Callable[[Workspace], tuple[Path, list[str | Path]]]


def _convert(ws: Workspace) -> tuple[Path, list[str | Path]]:
    return ws.records, ["traces", "convert", ws.records, "-f", "fairtrace", "-o", ws.records]


def _cases_run(ws: Workspace) -> tuple[Path, list[str | Path]]:
    return ws.cases, ["cases", "run", "--cases", ws.cases, "--outputs", ws.outputs, "-o", ws.cases]


def _export(ws: Workspace) -> tuple[Path, list[str | Path]]:
    return ws.spans, ["traces", "export", "--store", ws.spans, "-o", ws.spans]


def _check_markdown(ws: Workspace) -> tuple[Path, list[str | Path]]:
    return ws.run, ["check", "--baseline", ws.run, "--current", ws.run, "--markdown", ws.run]


def _fairness_report_dir(ws: Workspace) -> tuple[Path, list[str | Path]]:
    # the records moved into the folder the reports go to, under the name of a report
    os.replace(ws.records, ws.report)
    return ws.report, ["fairness", ws.suite, ws.report, "-o", ws.report.parent, *FAST]


def _hard_link(ws: Workspace) -> tuple[Path, list[str | Path]]:
    link = ws.root / "another-name.jsonl"
    os.link(ws.records, link)
    return ws.records, ["traces", "convert", ws.records, "-o", link]


def _symlink(ws: Workspace) -> tuple[Path, list[str | Path]]:
    link = ws.root / "pointer.md"
    link.symlink_to(ws.cases)
    return ws.cases, [
        "cases",
        "run",
        "--cases",
        ws.cases,
        "--outputs",
        ws.outputs,
        "--markdown",
        link,
    ]


def _build_dir(ws: Workspace) -> tuple[Path, list[str | Path]]:
    return ws.cases, ["cases", "build", ws.cases, "-o", ws.cases.parent]


def _ingest(ws: Workspace) -> tuple[Path, list[str | Path]]:
    return ws.spans, ["ingest", ws.spans, "--store", ws.spans]


CASES: dict[str, Case] = {
    "convert -o A A": _convert,
    "cases run -o C --cases C": _cases_run,
    "export --store S -o S": _export,
    "check --markdown BASELINE": _check_markdown,
    "fairness DIR/report.json -o DIR": _fairness_report_dir,
    "a hard link": _hard_link,
    "a symbolic link": _symlink,
    "cases build into the input's folder": _build_dir,
    "ingest --store SPANFILE": _ingest,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(
    workspace: Workspace, name: str
) -> None:
    at_risk, args = CASES[name](workspace)
    before = at_risk.read_bytes()
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert "is an output and also an input" in result.output
    assert at_risk.read_bytes() == before


def test_two_outputs_on_one_file_are_refused(workspace: Workspace) -> None:
    out = workspace.root / "r.json"
    result = invoke(
        "cases",
        "run",
        "--cases",
        workspace.cases,
        "--outputs",
        workspace.outputs,
        "-o",
        out,
        "--markdown",
        workspace.root / "." / "r.json",
    )
    assert result.exit_code == 2
    assert "Error: " in result.output and "give each output its own path" in result.output
    assert not out.exists()
