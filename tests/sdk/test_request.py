"""The request root: identity, input/output, joining, annotations by request id."""

from __future__ import annotations

import asyncio
import logging

import pytest

import spanguard
from spanguard import semconv
from spanguard.testing import SpanCapture


def test_request_root_carries_counterfactual_identity(capture: SpanCapture) -> None:
    with spanguard.request(
        "support",
        seed_id="s1",
        variant_id="s1-f",
        assignments={"gender": "female", "age": "70"},
        repeat=2,
    ) as req:
        pass
    (root,) = capture.spans()
    assert root["name"] == "invoke_agent support"
    assert root["parent_span_id"] is None
    assert root["attributes"] == {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_INVOKE_AGENT,
        semconv.GEN_AI_PROVIDER_NAME: semconv.AGENT_PROVIDER,
        semconv.GEN_AI_AGENT_NAME: "support",
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_AGENT,
        semconv.REQUEST_ID: req.request_id,
        semconv.SEED_ID: "s1",
        semconv.VARIANT_ID: "s1-f",
        semconv.assignment_key("gender"): "female",
        semconv.assignment_key("age"): "70",
        semconv.REPEAT: 2,
    }
    assert root["trace_id"] == req.trace_id


def test_request_id_is_uuid_hex_unless_given(capture: SpanCapture) -> None:
    with spanguard.request("a") as first, spanguard.request("b", request_id="mine") as second:
        pass
    assert len(first.request_id) == 32 and int(first.request_id, 16) >= 0
    assert second is first  # a request inside a request joins it
    with spanguard.request("a", request_id="mine") as third:
        pass
    assert third.request_id == "mine"


def test_nested_request_joins_and_adds_identity(capture: SpanCapture) -> None:
    @spanguard.request("support")
    def answer(prompt: str) -> str:
        req = spanguard.current_request()
        assert req is not None
        req.set_metadata("helpfulness_score", 0.5)
        return prompt[::-1]

    with spanguard.request("harness", seed_id="s9", variant_id="v9") as outer:
        assert answer("abc") == "cba"
    (root,) = capture.spans()
    assert root["attributes"][semconv.REQUEST_ID] == outer.request_id
    assert root["attributes"][semconv.metadata_key("helpfulness_score")] == 0.5


def test_decorator_records_input_and_output_only_with_content_on(
    content_capture: SpanCapture,
) -> None:
    @spanguard.request
    def answer(prompt: str) -> dict[str, str]:
        return {"text": prompt + "!"}

    @spanguard.request("async_agent")
    async def aanswer(prompt: str) -> str:
        return prompt

    assert answer("hello") == {"text": "hello!"}
    assert asyncio.run(aanswer("hey")) == "hey"
    first, second = content_capture.spans()
    assert first["name"] == "invoke_agent answer"
    assert first["attributes"][semconv.INPUT_VALUE] == "hello"
    assert first["attributes"][semconv.OUTPUT_VALUE] == '{"text":"hello!"}'
    assert first["attributes"][semconv.OUTPUT_MIME_TYPE] == "application/json"
    assert second["attributes"][semconv.OUTPUT_VALUE] == "hey"


def test_content_is_off_by_default_on_the_root(capture: SpanCapture) -> None:
    with spanguard.request("a", input="secret prompt") as req:
        req.set_output("secret answer")
    attributes = capture.spans()[0]["attributes"]
    assert (
        not {
            semconv.INPUT_VALUE,
            semconv.OUTPUT_VALUE,
            semconv.INPUT_MIME_TYPE,
            semconv.OUTPUT_MIME_TYPE,
        }
        & attributes.keys()
    )


def test_exception_in_request_is_recorded_and_propagates(capture: SpanCapture) -> None:
    error = RuntimeError("agent failed")
    with pytest.raises(RuntimeError) as raised, spanguard.request("a"):
        raise error
    assert raised.value is error
    assert capture.spans()[0]["status"]["code"] == "ERROR"


def test_feedback_retry_and_expectations_later_by_request_id(capture: SpanCapture) -> None:
    with spanguard.request("a") as req:
        pass
    spanguard.feedback(req.request_id, "thumbs_down")
    spanguard.mark_retried(req.request_id)
    spanguard.expect(
        req.request_id,
        min_chars=10,
        max_chars=500,
        regex=r"\d+",
        contains="refund",
        not_contains=["sorry"],
        json=False,
        tone={"polite": True},
    )
    root, *annotations = capture.spans()
    assert [a["name"] for a in annotations] == [semconv.SPAN_ANNOTATION] * 3
    assert all(a["parent_span_id"] is None for a in annotations)
    assert all(a["trace_id"] != root["trace_id"] for a in annotations)
    assert all(a["attributes"][semconv.REQUEST_ID] == req.request_id for a in annotations)
    assert annotations[0]["attributes"][semconv.FEEDBACK] == "thumbs_down"
    assert annotations[1]["attributes"][semconv.RETRIED] is True
    expect = annotations[2]["attributes"]
    assert expect[semconv.expect_key("min_chars")] == 10
    assert expect[semconv.expect_key("regex")] == r"\d+"
    assert expect[semconv.expect_key("contains")] == ["refund"]
    assert expect[semconv.expect_key("not_contains")] == ["sorry"]
    assert expect[semconv.expect_key("json")] is False
    assert expect[semconv.expect_key("tone")] == '{"polite":true}'
    assert capture.request_spans(req.request_id) == [root, *annotations]


def test_handle_annotations_go_on_the_open_span_then_as_annotation_spans(
    capture: SpanCapture,
) -> None:
    with spanguard.request("a") as req:
        req.feedback(5)
        req.expect(min_chars=1)
        req.set_cost(0.25)
    req.mark_retried()
    root, annotation = capture.spans()
    assert root["attributes"][semconv.FEEDBACK] == 5
    assert root["attributes"][semconv.expect_key("min_chars")] == 1
    assert root["attributes"][semconv.COST_USD] == 0.25
    assert annotation["attributes"] == {semconv.REQUEST_ID: req.request_id, semconv.RETRIED: True}


def test_wrong_typed_values_are_dropped_with_one_warning_each(
    capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="spanguard")
    with spanguard.request("a", seed_id=7, assignments={"gender": 1}) as req:  # type: ignore[arg-type]
        req.set_metadata("score", [1, 2])
    spanguard.expect(req.request_id, min_chars="ten", regex="(")
    spanguard.feedback(req.request_id, {"x": 1})  # type: ignore[arg-type]
    root, *rest = capture.spans()
    assert semconv.SEED_ID not in root["attributes"]
    assert semconv.assignment_key("gender") not in root["attributes"]
    assert rest == []  # nothing valid was left to annotate
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 6, warnings
    assert any("spanguard.seed_id" in w for w in warnings)
    assert any("spanguard.expect.regex" in w for w in warnings)


def test_streaming_agent_root_covers_the_whole_iteration(content_capture: SpanCapture) -> None:
    @spanguard.tool
    def token(text: str) -> str:
        return text

    @spanguard.request("streamer")
    def stream(prompt: str):  # type: ignore[no-untyped-def]
        req = spanguard.current_request()
        assert req is not None
        yield token(prompt)
        yield token("!")
        req.set_output(prompt + "!")

    @spanguard.request("astreamer")
    async def astream(prompt: str):  # type: ignore[no-untyped-def]
        yield token(prompt)

    async def consume() -> list[str]:
        return [t async for t in astream("b")]

    assert list(stream("a")) == ["a", "!"]
    assert asyncio.run(consume()) == ["b"]
    spans = content_capture.spans()
    roots = [s for s in spans if s["parent_span_id"] is None]
    assert [r["name"] for r in roots] == ["invoke_agent streamer", "invoke_agent astreamer"]
    assert roots[0]["attributes"][semconv.INPUT_VALUE] == "a"
    assert roots[0]["attributes"][semconv.OUTPUT_VALUE] == "a!"
    assert len(roots[0]["attributes"][semconv.REQUEST_ID]) == 32
    tools = [s for s in spans if s["parent_span_id"] is not None]
    assert [t["parent_span_id"] for t in tools] == [roots[0]["span_id"]] * 2 + [roots[1]["span_id"]]


def test_joining_request_does_not_reset_the_outer_repeat(capture: SpanCapture) -> None:
    with spanguard.request("outer", repeat=3), spanguard.request("inner", seed_id="s2"):
        pass
    attributes = capture.spans()[0]["attributes"]
    assert attributes[semconv.REPEAT] == 3 and attributes[semconv.SEED_ID] == "s2"
