"""The harness reads an app's signature once: ``app(prompt)`` or ``app(prompt, assignments)``,
plain or async; ``spanguard run`` with the README's one-argument app (issue 47, item 8)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli
from spanguard_processor.harness.calls import Job, as_app, call_app
from spanguard_processor.traces.model import ProcessTrace

from . import apps

_APPS = "tests.harness.apps"
_FAST = ["--bootstrap", "200", "--permutations", "99"]


def _no_process(raw: object) -> ProcessTrace:
    return ProcessTrace()


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.json"
    prompts = [
        {
            "id": f"seed{i}",
            "prompt": f"Case {i}: a {{gender}} customer asks about an account"
            + (", and wants a human." if i % 3 == 0 else "."),
            "attributes": {"gender": ["man", "woman"]},
        }
        for i in range(6)
    ]
    path.write_text(
        json.dumps({"dataset": {"prompts": prompts}, "metrics": [{"type": "escalation_parity"}]})
    )
    return path


def test_run_calls_the_readmes_one_argument_app(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = CliRunner().invoke(
        cli, ["run", str(_suite(tmp_path)), "--app", f"{_APPS}:answer", "-o", str(out), *_FAST]
    )
    assert "TypeError" not in result.output
    assert "fairness gate" in result.output, result.output  # a verdict, not bad input
    assert result.exit_code in (0, 1)
    report = json.loads((out / "report.json").read_text())
    records = report["scenario_results"]
    assert len(records) == 12
    escalated = {r["id"]: r["response_metadata"]["trace"]["escalated"] for r in records}
    assert escalated["seed0::1"] is True and escalated["seed1::1"] is False


@pytest.mark.parametrize("name", ["no_arguments", "three_arguments"])
def test_run_refuses_an_app_whose_signature_fits_neither(tmp_path: Path, name: str) -> None:
    result = CliRunner().invoke(cli, ["run", str(_suite(tmp_path)), "--app", f"{_APPS}:{name}"])
    assert result.exit_code == 2
    assert result.output.startswith("Error: --app: the app ")
    assert "fits neither app(prompt) nor app(prompt, assignments)" in result.output
    assert "calling the app" not in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    ("function", "takes_assignments", "is_async"),
    [
        (apps.answer, False, False),
        (apps.answer_async, False, True),
        (apps.answer_two, True, False),
        (apps.answer_two_async, True, True),
        (lambda prompt, assignments=None: prompt, True, False),
        (lambda prompt, *rest: prompt, True, False),
        (lambda prompt, *, style="short": prompt, False, False),
    ],
)
def test_the_signature_is_read_once(
    function: object, takes_assignments: bool, is_async: bool
) -> None:
    app = as_app(function)  # type: ignore[arg-type]
    assert (app.takes_assignments, app.is_async) == (takes_assignments, is_async)
    calls = call_app(app, [Job("t", "a human about an account", {"g": "a"})], _no_process)
    assert calls[0].error is None
    assert calls[0].trace is not None and calls[0].trace.output


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_interrupt_starts_no_new_call_and_propagates(concurrency: int) -> None:
    made: list[str] = []

    def app(prompt: str) -> str:
        made.append(prompt)
        if prompt == "q3":
            raise KeyboardInterrupt
        time.sleep(0.005)
        return "ok"

    jobs = [Job("t", f"q{i}") for i in range(200)]
    with pytest.raises(KeyboardInterrupt):
        call_app(app, jobs, _no_process, concurrency=concurrency)
    assert len(made) < 40  # the calls in flight ended; the queued ones never started
