"""``traces export`` says when many requests are one parentless span each (issue 40).

An app instrumented by openai-v2 with no parent span per request leaves one trace per model
call; each became a one-span request silently. The export now counts them by span name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from spanguard_processor.cli import cli

from ..processor.serve_process import ServeProcess
from .openai_stub import openai_stub
from .test_instrumentors import ANSWER, TURN, responder

pytestmark = pytest.mark.integration

TURNS = 3


def test_export_counts_requests_that_are_a_single_parentless_span(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        with openai_stub(responder) as stub:
            run = subprocess.run(
                [sys.executable, str(TURN), "openai-v2-bare", serve.url + "/v1/traces",
                 stub.base_url, str(TURNS)], env={**os.environ, "PYTHONUNBUFFERED": "1"},
                capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr
            assert run.stdout.strip() == ANSWER
        serve.wait_idle(2 * TURNS)
    finally:
        serve.terminate()
    out = tmp_path / "traces.jsonl"
    result = CliRunner().invoke(cli, ["traces", "export", "--store", str(tmp_path / "spans.db"),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (f"{2 * TURNS} of {2 * TURNS} request(s) are a single parentless span "
            f"('chat gpt-4o-mini' {2 * TURNS}): each model or tool call became a request of "
            "its own.") in result.stderr


def test_export_of_requests_with_a_parent_says_nothing_about_lone_spans(
        tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        with openai_stub(responder) as stub:
            run = subprocess.run(
                [sys.executable, str(TURN), "openai-v2", serve.url + "/v1/traces",
                 stub.base_url], env={**os.environ, "PYTHONUNBUFFERED": "1"},
                capture_output=True, text=True, timeout=120)
            assert run.returncode == 0, run.stderr
        serve.wait_idle(3)
    finally:
        serve.terminate()
    result = CliRunner().invoke(cli, ["traces", "export", "--store", str(tmp_path / "spans.db"),
                                      "-o", str(tmp_path / "traces.jsonl")])
    assert result.exit_code == 0, result.output
    assert "parentless" not in result.stderr
