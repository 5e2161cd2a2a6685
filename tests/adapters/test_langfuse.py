"""An app traced only by the Langfuse SDK (its OTel integration, v3 and later), over OTLP to
``spanguard serve`` (issue 40).

Langfuse writes its own keys, not the GenAI ones: ``langfuse.observation.type`` (``tool``,
``generation``, ``agent``, …), ``langfuse.observation.input|output`` and
``langfuse.observation.metadata.*`` (the attribute names are Langfuse's
``LangfuseOtelSpanAttributes``, langfuse/_client/attributes.py in langfuse-python). Before
issue 40, 0 of 12 such requests had their ``tool`` span read as a tool call.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spanguard_processor.inputs.readers import read_agent_traces_any

from ..processor.serve_process import ServeProcess
from .openai_stub import openai_stub
from .test_instrumentors import ANSWER, TURN, check_golden, check_turn, responder

pytestmark = pytest.mark.integration

TURNS = 12
SPANS_PER_TURN = 4  # the agent turn, two generations, the tool


def test_langfuse_tool_generation_and_agent_spans_are_read_in_every_request(
        tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        with openai_stub(responder) as stub:
            run = subprocess.run(
                [sys.executable, str(TURN), "langfuse", serve.url + "/v1/traces",
                 stub.base_url, str(TURNS)],
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True,
                timeout=120)
            assert run.returncode == 0, run.stderr
            assert run.stdout.strip() == ANSWER
            assert len(stub.requests) == 2 * TURNS
        serve.wait_idle(SPANS_PER_TURN * TURNS)
    finally:
        serve.terminate()
    traces = list(read_agent_traces_any([tmp_path / "spans.db"]))
    assert len(traces) == TURNS
    for trace in traces:
        # the tool span executed the call the first generation requested
        check_turn(trace, requested=False)
        assert trace.source == ("langfuse",)
        assert not [n for n in trace.unread if n.key.startswith("langfuse.")]
    check_golden(traces[0], "langfuse")
