"""The SDK's redactor sees every text it records (issue 37, finding 4): exception messages and
stack traces, plan steps, escalation reasons, friction points, feedback and metadata strings,
nested captured values — with content capture on and off. With capture off an exception keeps
its type and code location, not its message."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import spanguard
from spanguard.testing import capture_spans

EMAIL = re.compile(r"[\w.+-]+@example\.com")


def mask(key: str, text: str) -> str:
    return EMAIL.sub("<email>", text)


class LookupFailed(Exception):
    pass


@spanguard.tool(name="lookup")
def lookup(query: dict[str, Any]) -> str:
    raise LookupFailed(f"no account for {query['user']['email']}")


def _run_agent() -> None:
    with spanguard.request("support") as req:
        with spanguard.plan(steps=["find the account of ann@example.com"]):
            spanguard.plan_step("write to bob@example.com")
        spanguard.friction("asked carol@example.com for an id again")
        spanguard.escalate("dave@example.com wants a human")
        req.feedback("great, says erin@example.com")
        req.set_metadata("note", "frank@example.com")
        with pytest.raises(LookupFailed):
            lookup({"user": {"email": "gina@example.com", "aliases": ["hal@example.com"]}})


def _everything(spans: list[dict[str, Any]]) -> str:
    return json.dumps(spans, default=str)


@pytest.mark.parametrize("capture_content", [True, False], ids=["content-on", "content-off"])
def test_no_email_leaks_through_free_text(capture_content: bool) -> None:
    with capture_spans(capture_content=capture_content, redact=mask) as capture:
        _run_agent()
        spans = capture.spans()
    text = _everything(spans)
    assert EMAIL.findall(text) == []
    # the signals are still recorded, redacted
    assert "write to <email>" in text and "<email> wants a human" in text
    assert "asked <email> for an id again" in text
    (tool,) = [s for s in spans if s["attributes"].get("gen_ai.tool.name") == "lookup"]
    (event,) = [e for e in tool["events"] if e["name"] == "exception"]
    assert event["attributes"]["exception.type"].endswith("LookupFailed")
    assert tool["attributes"]["error.type"] == "LookupFailed"
    stack = event["attributes"]["exception.stacktrace"]
    assert "test_redact_free_text.py" in stack and "in lookup" in stack  # the code location
    if capture_content:
        assert event["attributes"]["exception.message"] == "no account for <email>"
        assert tool["status"]["description"] == "LookupFailed: no account for <email>"
    else:  # the message is the app's text: kept out with content capture off
        assert "exception.message" not in event["attributes"]
        assert "no account" not in stack
        assert tool["status"]["description"] == "LookupFailed"


def test_a_redactor_that_fails_drops_the_text_not_the_signal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPANGUARD_STRICT", "0")  # as in an app: log the bug, go on

    def broken(key: str, text: str) -> str:
        raise RuntimeError("a bug in the redactor")

    with capture_spans(capture_content=True, redact=broken) as capture:
        spanguard.friction("asked ann@example.com again")
        with spanguard.request("r"):
            spanguard.escalate("bob@example.com")
        spans = capture.spans()
    text = _everything(spans)
    assert EMAIL.findall(text) == []
    assert "spanguard.escalation" in text
