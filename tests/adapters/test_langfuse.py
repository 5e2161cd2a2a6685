"""An app traced only by the Langfuse SDK (its OTel integration, v3 and later), over OTLP to
``spanguard serve`` (issue 40).

Langfuse writes its own keys, not the GenAI ones: ``langfuse.observation.type`` (``tool``,
``generation``, ``agent``, …), ``langfuse.observation.input|output`` and
``langfuse.observation.metadata.*`` (the attribute names are Langfuse's
``LangfuseOtelSpanAttributes``, langfuse/_client/attributes.py in langfuse-python). Before
issue 40, 0 of 12 such requests had their ``tool`` span read as a tool call.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanguard_processor.inputs.readers import read_agent_traces_any

from .test_instrumentors import check_golden, check_turn
from .turns import serve_turns

pytestmark = pytest.mark.integration

TURNS = 12
SPANS_PER_TURN = 4  # the agent turn, two generations, the tool


@pytest.mark.slow
def test_langfuse_tool_generation_and_agent_spans_are_read_in_every_request(tmp_path: Path) -> None:
    requests = serve_turns(tmp_path / "spans.db", "langfuse", SPANS_PER_TURN * TURNS, TURNS)
    assert len(requests) == 2 * TURNS
    traces = list(read_agent_traces_any([tmp_path / "spans.db"]))
    assert len(traces) == TURNS
    for trace in traces:
        # the tool span executed the call the first generation requested
        check_turn(trace, requested=False)
        assert trace.source == ("langfuse",)
        assert not [n for n in trace.unread if n.key.startswith("langfuse.")]
    check_golden(traces[0], "langfuse")
