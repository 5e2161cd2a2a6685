"""``spanguard.llm_call`` around a client already instrumented by genai-openai: one model call
per call, not two (issue 40).

Each model call leaves two spans, spanguard's ``chat`` span and genai-openai's inside it. Before
issue 40 both counted: 24 LLM calls and 24 tool calls (12 of them phantom requests) for 12
requests in which the model was called 24 times and 12 tools ran. The nested span is merged
into the outer one, so calls, tokens and requested tools count once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanguard_processor.inputs.readers import read_agent_traces_any

from .test_instrumentors import ANSWER
from .turns import serve_turns

pytestmark = pytest.mark.integration

TURNS = 12
SPANS_PER_TURN = 6  # request, two spanguard llm_call spans, two genai-openai spans, the tool


@pytest.mark.slow
def test_llm_call_around_an_instrumented_client_counts_each_model_call_once(tmp_path: Path) -> None:
    requests = serve_turns(
        tmp_path / "spans.db",
        "spanguard-genai-openai",
        SPANS_PER_TURN * TURNS,
        TURNS,
        {
            "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
        },
    )
    assert len(requests) == 2 * TURNS
    traces = list(read_agent_traces_any([tmp_path / "spans.db"]))
    assert len(traces) == TURNS
    assert sum(len(t.llm_calls) for t in traces) == 2 * TURNS
    assert sum(len(t.trace.tool_calls) for t in traces) == TURNS
    for trace in traces:
        assert [(c.name, c.requested) for c in trace.trace.tool_calls] == [("get_weather", False)]
        assert (trace.usage["input_tokens"], trace.usage["output_tokens"]) == (109, 28)
        assert trace.llm_calls[0].tool_calls == ("get_weather",)
        assert (trace.input, trace.output) == ("Weather in Paris?", ANSWER)
