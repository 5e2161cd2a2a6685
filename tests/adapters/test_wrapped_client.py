"""``spanguard.llm_call`` around a client already instrumented by openai-v2: one model call
per call, not two (issue 40).

Each model call leaves two spans, spanguard's ``chat`` span and openai-v2's inside it. Before
issue 40 both counted: 24 LLM calls and 24 tool calls (12 of them phantom requests) for 12
requests in which the model was called 24 times and 12 tools ran. The nested span is merged
into the outer one, so calls, tokens and requested tools count once.
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
from .test_instrumentors import ANSWER, TURN, responder

pytestmark = pytest.mark.integration

TURNS = 12
SPANS_PER_TURN = 6  # request, two spanguard llm_call spans, two openai-v2 spans, the tool


def test_llm_call_around_an_instrumented_client_counts_each_model_call_once(
        tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "spans.db", "--wait-duration", "0.2")
    try:
        with openai_stub(responder) as stub:
            env = {**os.environ, "PYTHONUNBUFFERED": "1",
                   "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
                   "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
            run = subprocess.run(
                [sys.executable, str(TURN), "spanguard-openai-v2", serve.url + "/v1/traces",
                 stub.base_url, str(TURNS)], env=env, capture_output=True, text=True,
                timeout=120)
            assert run.returncode == 0, run.stderr
            assert run.stdout.strip() == ANSWER
            assert len(stub.requests) == 2 * TURNS
        serve.wait_idle(SPANS_PER_TURN * TURNS)
    finally:
        serve.terminate()
    traces = list(read_agent_traces_any([tmp_path / "spans.db"]))
    assert len(traces) == TURNS
    assert sum(len(t.llm_calls) for t in traces) == 2 * TURNS
    assert sum(len(t.trace.tool_calls) for t in traces) == TURNS
    for trace in traces:
        assert [(c.name, c.requested) for c in trace.trace.tool_calls] == [
            ("get_weather", False)]
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (109, 28)
        assert trace.llm_calls[0].tool_calls == ("get_weather",)
        assert (trace.input, trace.output) == ("Weather in Paris?", ANSWER)
