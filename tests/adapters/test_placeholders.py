"""Text an instrumentation hid is absent, not a placeholder answer (issue 40).

OpenInference writes ``__REDACTED__`` in place of ``input.value`` / ``output.value`` under
``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``. Before issue 40, 10 of 10 such
requests (the real openinference-instrumentation-openai on OpenInference's tracer provider, the
turn in an ``@tracer.agent`` span, against the stub, over OTLP to ``spanguard serve``) carried
``__REDACTED__`` as their question and answer, so content metrics compared placeholders and
passed. Now the text is absent, the placeholders are counted in the per-trace note, and the
output-text signal is carried by no record (NO_SIGNAL) with a diagnosis naming them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spanguard_processor.fairness.metrics.diagnosis import SignalCounts
from spanguard_processor.fairness.records import observation_from_trace
from spanguard_processor.inputs.readers import read_agent_traces_any

from .turns import serve_turns

pytestmark = pytest.mark.integration

TURNS = 10


@pytest.mark.slow
def test_openinference_redacted_text_is_absent_and_counted(tmp_path: Path) -> None:
    serve_turns(
        tmp_path / "spans.db",
        "openinference-agent",
        4 * TURNS,
        TURNS,
        {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    )
    traces = list(read_agent_traces_any([tmp_path / "spans.db"]))
    assert len(traces) == TURNS
    for trace in traces:
        assert (trace.input, trace.output) == (None, None)
        assert len(trace.llm_calls) == 2  # the model calls themselves are still read
        assert [t.name for t in trace.trace.tool_calls] == ["get_weather"]
        assert {(n.key, n.span, n.count) for n in trace.unread} == {
            ("input.value=<placeholder>", "ChatCompletion", 2),
            ("input.value=<placeholder>", "get_weather", 1),
            ("input.value=<placeholder>", "weather turn", 1),
            ("output.value=<placeholder>", "ChatCompletion", 2),
            ("output.value=<placeholder>", "get_weather", 1),
            ("output.value=<placeholder>", "weather turn", 1),
        }
    counts = SignalCounts([observation_from_trace(t) for t in traces])
    assert counts.count("output text") == 0
    diagnosis = counts.diagnosis("output text")
    assert f"{2 * TURNS} span(s) named ChatCompletion with output.value=<placeholder>" in (
        diagnosis
    )
