"""An adapter's agent span reads spanguard's clock, so ``use_clock`` stamps it like every span
the SDK makes: the agent span encloses its tool calls on the simulated timeline."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from opentelemetry.trace import StatusCode

from spanguard.testing import SpanCapture, TickClock, use_clock
from spanguard_processor.adapters._base import as_agent, record_tool_call

START = 1_000_000_000_000
STEP = 1_000


def _app(prompt: str, assignments: Mapping[str, str]) -> str:
    record_tool_call("lookup", "call-1")
    if prompt == "fail":
        raise RuntimeError("the app failed")
    return "done"


def _spans(prompt: str) -> dict[str, tuple[int | None, int | None]]:
    app = as_agent(_app, "helper")
    with use_clock(TickClock(START, STEP)), SpanCapture() as capture:
        if prompt == "fail":
            with pytest.raises(RuntimeError):
                app(prompt, {})
        else:
            assert app(prompt, {}) == "done"
        spans = capture.readable_spans()
    if prompt == "fail":
        agent = next(s for s in spans if s.name == "invoke_agent helper")
        assert agent.status.status_code is StatusCode.ERROR
        assert [e.name for e in agent.events] == ["exception"]
    return {s.name: (s.start_time, s.end_time) for s in spans}


@pytest.mark.parametrize("prompt", ["hello", "fail"])
def test_the_agent_span_is_stamped_by_spanguard_s_clock(prompt: str) -> None:
    # clock readings in order: agent start, tool start, tool end, agent end
    assert _spans(prompt) == {
        "invoke_agent helper": (START + STEP, START + 4 * STEP),
        "execute_tool lookup": (START + 2 * STEP, START + 3 * STEP),
    }
