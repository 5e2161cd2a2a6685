"""Retrieval documents, plans, escalations, friction and LLM calls as the contract says."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import pytest

import spanguard
from spanguard import semconv
from spanguard.testing import SpanCapture


@dataclass
class Hit:
    doc_id: str
    team: str
    similarity: float


def _hits(hits: list[Hit]) -> list[dict[str, Any]]:
    return [{"id": h.doc_id, "group": h.team, "score": h.similarity} for h in hits]


@spanguard.retrieval(source="kb", mapper=_hits)
def search(query: str) -> list[Hit]:
    return [Hit("d7", "premium", 0.9), Hit("d2", "basic", 0.4)]


def test_retrieval_records_documents_through_the_mapper(capture: SpanCapture) -> None:
    assert search("q")[0].doc_id == "d7"
    (span,) = capture.spans()
    assert span["name"] == "retrieval kb"
    attributes = span["attributes"]
    assert attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_RETRIEVAL
    assert attributes[semconv.GEN_AI_DATA_SOURCE_ID] == "kb"
    assert attributes[semconv.OPENINFERENCE_SPAN_KIND] == semconv.OI_KIND_RETRIEVER
    assert json.loads(attributes[semconv.GEN_AI_RETRIEVAL_DOCUMENTS]) == [
        {"id": "d7", "group": "premium", "rank": 1, "score": 0.9},
        {"id": "d2", "group": "basic", "rank": 2, "score": 0.4},
    ]
    key = semconv.retrieval_document_key
    assert attributes[key(1, "id")] == "d2"
    assert attributes[key(1, "score")] == 0.4
    assert json.loads(attributes[key(1, "metadata")]) == {"group": "basic", "rank": 2}
    assert key(0, "content") not in attributes


def test_explicit_ranks_order_the_documents(capture: SpanCapture) -> None:
    @spanguard.retrieval
    def ranked() -> list[spanguard.Document]:
        return [spanguard.Document("b", "g2", rank=2), spanguard.Document("a", "g1", rank=1)]

    ranked()
    docs = json.loads(capture.spans()[0]["attributes"][semconv.GEN_AI_RETRIEVAL_DOCUMENTS])
    assert [(d["id"], d["rank"], d["score"]) for d in docs] == [("a", 1, None), ("b", 2, None)]


def test_record_documents_inside_and_outside_a_retrieval_span(content_capture: SpanCapture) -> None:
    @spanguard.retrieval(source="web")
    def fetch() -> None:
        spanguard.record_documents([{"id": "x", "group": "g", "content": "text of x"}])

    with spanguard.request("agent"):
        fetch()
        spanguard.record_documents([{"id": "y", "group": "h", "score": 1}], source="cache")
    root, web, cache = content_capture.spans()
    assert web["name"] == "retrieval web" and cache["name"] == "retrieval cache"
    assert cache["parent_span_id"] == root["span_id"]
    assert web["attributes"][semconv.retrieval_document_key(0, "content")] == "text of x"
    assert json.loads(cache["attributes"][semconv.GEN_AI_RETRIEVAL_DOCUMENTS]) == [
        {"id": "y", "group": "h", "rank": 1, "score": 1.0}
    ]
    assert semconv.GEN_AI_RETRIEVAL_DOCUMENTS not in root["attributes"]


def test_bad_documents_drop_the_field_warn_once_each_and_keep_running(
    capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="spanguard")
    spanguard.record_documents(
        [{"id": "a"}, {"id": "b", "group": 3, "score": "high"}, {"group": "g"}], source="kb"
    )
    docs = json.loads(capture.spans()[0]["attributes"][semconv.GEN_AI_RETRIEVAL_DOCUMENTS])
    assert docs == [
        {"id": "a", "group": None, "rank": 1, "score": None},
        {"id": "b", "group": None, "rank": 2, "score": None},
    ]
    # a missing group is fine (it is optional); the bad group, score and id warn once each
    assert len(caplog.records) == 3, [r.getMessage() for r in caplog.records]
    assert "document 3" in caplog.records[-1].getMessage()


def test_mapper_failure_keeps_the_app_running(
    capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    @spanguard.retrieval(mapper=lambda result: result["missing"])
    def broken() -> dict[str, int]:
        return {}

    assert broken() == {}
    assert semconv.GEN_AI_RETRIEVAL_DOCUMENTS not in capture.spans()[0]["attributes"]
    assert "mapper raised KeyError" in caplog.text


def test_plan_steps_escalation_and_friction_are_events(capture: SpanCapture) -> None:
    with spanguard.request("agent"):
        with spanguard.plan(["look up order"]) as plan:
            plan.step("check refund policy")
            spanguard.plan_step("answer")
        spanguard.friction("extra identity check")
        spanguard.escalate(reason="customer asked for a human")
        spanguard.escalate()
    root, plan_span = capture.spans()
    assert plan_span["name"] == semconv.SPAN_PLAN
    assert plan_span["attributes"] == {
        semconv.GEN_AI_OPERATION_NAME: semconv.OP_PLAN,
        semconv.OPENINFERENCE_SPAN_KIND: semconv.OI_KIND_CHAIN,
    }
    assert [e["attributes"][semconv.PLAN_STEP] for e in plan_span["events"]] == [
        "look up order",
        "check refund policy",
        "answer",
    ]
    assert [e["name"] for e in root["events"]] == [
        semconv.EVENT_FRICTION,
        semconv.EVENT_ESCALATION,
        semconv.EVENT_ESCALATION,
    ]
    assert root["events"][0]["attributes"] == {semconv.FRICTION_POINT: "extra identity check"}
    assert root["events"][1]["attributes"] == {
        semconv.ESCALATION_REASON: "customer asked for a human"
    }
    assert root["events"][2]["attributes"] == {}


def test_non_string_reason_is_dropped_but_the_escalation_kept(
    capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    with spanguard.request("agent"):
        spanguard.escalate(reason=42)  # type: ignore[arg-type]
        spanguard.friction(None)  # type: ignore[arg-type]
    (root,) = capture.spans()
    assert [(e["name"], e["attributes"]) for e in root["events"]] == [
        (semconv.EVENT_ESCALATION, {})
    ]
    assert len(caplog.records) == 2


def test_llm_call_records_model_usage_and_cost(content_capture: SpanCapture) -> None:
    with spanguard.llm_call("gpt-4o-mini", provider="openai") as call:
        call.set_input([{"role": "user", "content": "hi"}])
        call.record_usage(120, 30, cost_usd=0.002)
        call.set_response_model("gpt-4o-mini-2024")
        call.set_output("hello")
    (span,) = content_capture.spans()
    assert span["name"] == "chat gpt-4o-mini" and span["kind"] == "CLIENT"
    attributes = span["attributes"]
    assert attributes[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    assert attributes[semconv.GEN_AI_RESPONSE_MODEL] == "gpt-4o-mini-2024"
    assert attributes[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert attributes[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 120
    assert attributes[semconv.LLM_TOKEN_COUNT_TOTAL] == 150
    assert attributes[semconv.COST_USD] == 0.002
    assert attributes[semconv.OPENINFERENCE_SPAN_KIND] == semconv.OI_KIND_LLM
    # the GenAI semconv parts shape, whatever shape the app handed over (issue #16)
    assert json.loads(attributes[semconv.GEN_AI_INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    assert json.loads(attributes[semconv.GEN_AI_OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "hello"}],
            "finish_reason": "stop",
        }
    ]


def test_signals_outside_any_span_do_nothing(capture: SpanCapture) -> None:
    spanguard.escalate(reason="x")
    spanguard.friction("y")
    spanguard.plan_step("z")
    assert capture.spans() == []


def test_many_documents_never_evict_the_core_attributes(
    content_capture: SpanCapture, caplog: pytest.LogCaptureFixture
) -> None:
    docs = [{"id": f"d{i}", "group": "g", "score": 1.0, "content": "text"} for i in range(200)]
    spanguard.record_documents(docs, source="big")
    attributes = content_capture.spans()[0]["attributes"]
    assert len(attributes) <= 128
    assert attributes[semconv.GEN_AI_OPERATION_NAME] == semconv.OP_RETRIEVAL
    assert len(json.loads(attributes[semconv.GEN_AI_RETRIEVAL_DOCUMENTS])) == 200
    assert semconv.retrieval_document_key(0, "id") in attributes
    assert "Attributes dict is full" not in caplog.text
