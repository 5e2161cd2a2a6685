"""Privacy: content off by default, on by setting or environment, redacted and bounded."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spanguard
from spanguard import semconv
from spanguard._content import bounded_json, bounded_text
from spanguard.testing import SpanCapture, capture_spans


@spanguard.tool
def lookup(customer_email: str, order: int) -> str:
    return f"order {order} of {customer_email} shipped"


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    skip = ("SPANGUARD_STRICT", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    clean = {k: v for k, v in os.environ.items() if k not in skip}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
    )


def test_content_is_off_by_default(capture: SpanCapture) -> None:
    lookup("ann@example.com", 7)
    attributes = capture.spans()[0]["attributes"]
    assert semconv.GEN_AI_TOOL_CALL_ARGUMENTS not in attributes
    assert semconv.GEN_AI_TOOL_CALL_RESULT not in attributes
    assert not any("ann@example.com" in str(v) for v in attributes.values())


def test_content_on_records_arguments_and_result(content_capture: SpanCapture) -> None:
    lookup("ann@example.com", 7)
    attributes = content_capture.spans()[0]["attributes"]
    assert json.loads(attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {
        "customer_email": "ann@example.com",
        "order": 7,
    }
    assert attributes[semconv.GEN_AI_TOOL_CALL_RESULT] == "order 7 of ann@example.com shipped"


def test_environment_variable_turns_capture_on() -> None:
    code = """
        import spanguard
        from spanguard.testing import capture_spans
        with capture_spans() as cap, spanguard.request("a", input="hello"):
            pass
        print(cap.spans()[0]["attributes"].get("input.value"))
    """
    assert _run(code).stdout.strip() == "None"
    on = _run(code, OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    assert on.stdout.strip() == "hello", on.stderr


def _mask_email(key: str, text: str) -> str | None:
    if key == semconv.GEN_AI_TOOL_CALL_RESULT and "secret" in text:
        return None  # drop the value entirely
    return text.replace("ann@example.com", "<email>")


def test_redaction_is_applied_before_export() -> None:
    with capture_spans(capture_content=True, redact=_mask_email) as capture:
        lookup("ann@example.com", 7)
        with spanguard.request("a", input="mail ann@example.com") as req:
            req.set_output({"to": ["ann@example.com"], "n": 1})
    tool, root = sorted(capture.spans(), key=lambda s: s["name"])
    assert json.loads(tool["attributes"][semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {
        "customer_email": "<email>",
        "order": 7,
    }
    assert tool["attributes"][semconv.GEN_AI_TOOL_CALL_RESULT] == "order 7 of <email> shipped"
    assert root["attributes"][semconv.INPUT_VALUE] == "mail <email>"
    assert json.loads(root["attributes"][semconv.OUTPUT_VALUE]) == {"to": ["<email>"], "n": 1}
    dump = json.dumps(capture.spans())
    assert "ann@example.com" not in dump


def test_redactor_returning_none_drops_the_value() -> None:
    with capture_spans(capture_content=True, redact=_mask_email) as capture:

        @spanguard.tool
        def leak() -> str:
            return "the secret"

        leak()
    assert semconv.GEN_AI_TOOL_CALL_RESULT not in capture.spans()[0]["attributes"]


def test_long_text_is_bounded_and_marked() -> None:
    with (
        capture_spans(capture_content=True, max_content_chars=32) as capture,
        spanguard.request("a", input="x" * 100) as req,
    ):
        req.set_output({"items": ["y" * 50] * 20})
    attributes = capture.spans()[0]["attributes"]
    assert len(attributes[semconv.INPUT_VALUE]) == 32
    assert len(attributes[semconv.OUTPUT_VALUE]) <= 32
    json.loads(attributes[semconv.OUTPUT_VALUE])  # still valid JSON
    assert attributes[semconv.CONTENT_TRUNCATED] is True


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=30,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(value=json_values, limit=st.integers(min_value=16, max_value=200))
def test_bounded_json_always_parses_and_fits(value: Any, limit: int) -> None:
    text, truncated = bounded_json(value, limit)
    assert len(text) <= limit
    json.loads(text)
    if not truncated:
        assert json.loads(text) == value


@settings(deadline=None, derandomize=True)
@given(text=st.text(max_size=300), limit=st.integers(min_value=1, max_value=100))
def test_bounded_text_fits(text: str, limit: int) -> None:
    bounded, truncated = bounded_text(text, limit)
    assert len(bounded) <= limit
    assert truncated == (len(text) > limit)
    assert bounded == text or truncated


def test_failing_redactor_drops_content_and_app_keeps_running() -> None:
    code = """
        import logging, spanguard
        from spanguard.testing import capture_spans
        logging.basicConfig(level=logging.ERROR, format="LOG %(message)s")
        def bad(key, text):
            raise RuntimeError("redactor bug")
        @spanguard.tool
        def echo(x):
            return x
        with capture_spans(capture_content=True, redact=bad) as cap:
            print(echo("a"), echo("b"))
        attrs = [s["attributes"] for s in cap.spans()]
        print(sum("gen_ai.tool.call.result" in a for a in attrs), len(attrs))
    """
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["a b", "0 2"]
    assert result.stderr.count("LOG spanguard internal error in the redaction hook") == 1


def test_failing_redactor_raises_under_pytest() -> None:
    def bad(key: str, text: str) -> str:
        raise RuntimeError("redactor bug")

    with (
        capture_spans(capture_content=True, redact=bad),
        pytest.raises(RuntimeError, match="redactor bug"),
    ):
        lookup("a", 1)


def test_unencodable_content_is_dropped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with capture_spans(capture_content=True) as capture, spanguard.request("a") as req:
        req.set_output(loop)
        req.set_input({"fine": True})
    attributes = capture.spans()[0]["attributes"]
    assert semconv.OUTPUT_VALUE not in attributes
    assert attributes[semconv.INPUT_VALUE] == '{"fine":true}'
    assert "cannot be encoded as JSON" in caplog.text


# --- redaction sees exactly what is exported ----------------------------------------------
@dataclasses.dataclass
class Customer:
    name: str
    email: str


class PydanticLike:
    """Quacks like a pydantic v2 model: model_dump(mode="json") gives its data."""

    def __init__(self, email: str) -> None:
        self.email = email

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return {"contact": {"email": self.email}, "mode": mode}

    def __str__(self) -> str:
        return f"PydanticLike({self.email})"


EMAIL = "bob@example.com"


def _mask_everywhere(key: str, text: str) -> str:
    return text.replace(EMAIL, "<email>")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *_strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_redaction_reaches_dataclasses_models_bytes_and_dict_keys() -> None:
    @spanguard.tool
    def update(
        customer: Customer, profile: PydanticLike, raw: bytes, index: dict[str, Any]
    ) -> Customer:
        return customer

    with capture_spans(capture_content=True, redact=_mask_everywhere) as capture:
        update(
            Customer("Bob", EMAIL),
            PydanticLike(EMAIL),
            f"mail {EMAIL}".encode(),
            {EMAIL: {"nested " + EMAIL: [EMAIL]}},
        )
    dump = json.dumps(capture.spans())
    assert EMAIL not in dump
    attributes = capture.spans()[0]["attributes"]
    assert json.loads(attributes[semconv.GEN_AI_TOOL_CALL_ARGUMENTS]) == {
        "customer": {"name": "Bob", "email": "<email>"},
        "profile": {"contact": {"email": "<email>"}, "mode": "json"},
        "raw": "mail <email>",
        "index": {"<email>": {"nested <email>": ["<email>"]}},
    }
    assert json.loads(attributes[semconv.GEN_AI_TOOL_CALL_RESULT]) == {
        "name": "Bob",
        "email": "<email>",
    }


def test_the_redactor_sees_every_exported_string() -> None:
    seen: list[str] = []

    def record(key: str, text: str) -> str:
        seen.append(text)
        return text.upper()

    class Opaque:
        def __str__(self) -> str:
            return f"opaque {EMAIL}"

    with (
        capture_spans(capture_content=True, redact=record) as capture,
        spanguard.request("a") as req,
    ):
        req.set_output(
            {
                "who": Opaque(),
                "when": datetime.date(2026, 1, 2),
                "ids": {3, 1},
                b"k": (Customer("x", "y"),),
            }
        )
    exported = json.loads(capture.spans()[0]["attributes"][semconv.OUTPUT_VALUE])
    assert exported == {
        "WHO": f"OPAQUE {EMAIL.upper()}",
        "WHEN": "2026-01-02",
        "IDS": [1, 3],
        "K": [{"NAME": "X", "EMAIL": "Y"}],
    }
    assert {s.lower() for s in _strings(exported)} <= set(seen)


def test_redactor_dropping_a_key_drops_its_entry() -> None:
    def drop_secret_keys(key: str, text: str) -> str | None:
        return None if text == "password" else text

    with (
        capture_spans(capture_content=True, redact=drop_secret_keys) as capture,
        spanguard.request("a") as req,
    ):
        req.set_output({"user": "ann", "password": "hunter2"})
    assert json.loads(capture.spans()[0]["attributes"][semconv.OUTPUT_VALUE]) == {"user": "ann"}


def test_a_real_pydantic_model_is_redacted_field_by_field() -> None:
    import pydantic

    class Ticket(pydantic.BaseModel):
        reporter: str
        tags: set[str]
        when: datetime.datetime

    @spanguard.tool
    def file_ticket(ticket: Ticket) -> Ticket:
        return ticket

    ticket = Ticket(reporter=EMAIL, tags={EMAIL}, when=datetime.datetime(2026, 1, 2, 3, 4))
    with capture_spans(capture_content=True, redact=_mask_everywhere) as capture:
        file_ticket(ticket)
    attributes = capture.spans()[0]["attributes"]
    assert EMAIL not in json.dumps(attributes)
    assert json.loads(attributes[semconv.GEN_AI_TOOL_CALL_RESULT]) == {
        "reporter": "<email>",
        "tags": ["<email>"],
        "when": "2026-01-02T03:04:00",
    }
