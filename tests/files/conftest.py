"""One small workspace of every kind of file the commands read, built by the commands
themselves from the repository's fixtures (tests/data)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from spanguard_processor.cli import cli

DATA = Path(__file__).resolve().parents[1] / "data"
FAST = ["--bootstrap", "200", "--permutations", "99"]


def invoke(*args: str | Path) -> Result:
    """Run ``spanguard`` in process; a traceback or an internal error fails the test."""
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output,
        result.exception,
    )
    assert "Traceback" not in result.output and "internal error" not in result.output
    return result


@dataclass(frozen=True)
class Workspace:
    root: Path
    suite: Path  # a fairness suite (JSON, explicit variants)
    records: Path  # fairtrace records (JSONL) matching the suite
    traces: Path  # agent traces (JSONL) matching the suite
    spans: Path  # an OTLP-JSON span file (the Python OTLP JSON file exporter's)
    log: Path  # a trace2eval log
    cases: Path  # a case set (cases build)
    outputs: Path  # outputs JSONL for the case set
    run: Path  # a run result (cases run -o)
    report: Path  # a fairness report.json


def build_workspace(root: Path) -> Workspace:
    root.mkdir(parents=True, exist_ok=True)
    golden = json.loads((DATA / "fairtrace" / "records.json").read_text(encoding="utf-8"))
    records = root / "records.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in golden), encoding="utf-8")
    suite = root / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "dataset": {
                    "variants": [
                        {k: r[k] for k in ("id", "seed_id", "prompt", "assignments")}
                        for r in golden
                    ]
                },
                "metrics": [{"type": "tool_use_parity"}, {"type": "escalation_parity"}],
            }
        )
    )
    traces = root / "traces.jsonl"
    traces.write_text(
        "".join(
            json.dumps(
                {
                    "trace_id": f"{number + 1:032x}",
                    "seed_id": r["seed_id"],
                    "variant_id": r["id"],
                    "assignments": r["assignments"],
                    "input": r["prompt"],
                    "output": r["response"],
                    "trace": r["response_metadata"]["trace"],
                }
            )
            + "\n"
            for number, r in enumerate(golden)
        )
    )
    spans = root / "spans.jsonl"
    shutil.copy(DATA / "otel" / "python_otlp_json_file_exporter.jsonl", spans)
    log = root / "log.jsonl"
    shutil.copy(DATA / "trace2eval" / "sample_traces.jsonl", log)
    outputs = root / "outputs.jsonl"
    shutil.copy(DATA / "trace2eval" / "outputs_baseline.jsonl", outputs)
    assert invoke("cases", "build", log, "-o", root / "evalset").exit_code == 0
    run = root / "run.json"
    assert (
        invoke(
            "cases",
            "run",
            "--cases",
            root / "evalset" / "cases.jsonl",
            "--outputs",
            outputs,
            "-o",
            run,
        ).exit_code
        == 0
    )
    assert invoke("fairness", suite, records, "-o", root / "report", *FAST).exit_code in (0, 1)
    return Workspace(
        root,
        suite,
        records,
        traces,
        spans,
        log,
        root / "evalset" / "cases.jsonl",
        outputs,
        run,
        root / "report" / "report.json",
    )


@pytest.fixture(scope="session")
def workspace_template(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return build_workspace(tmp_path_factory.mktemp("workspace"))


@pytest.fixture()
def workspace(workspace_template: Workspace, tmp_path: Path) -> Workspace:
    """A fresh copy per test: a test may try to destroy its files."""
    root = tmp_path / "ws"
    shutil.copytree(workspace_template.root, root)
    template = workspace_template.root
    return Workspace(
        root,
        *(
            root / Path(p).relative_to(template)
            for p in (
                workspace_template.suite,
                workspace_template.records,
                workspace_template.traces,
                workspace_template.spans,
                workspace_template.log,
                workspace_template.cases,
                workspace_template.outputs,
                workspace_template.run,
                workspace_template.report,
            )
        ),
    )
