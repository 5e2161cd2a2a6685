"""Every ``gen_ai.*`` key spanguard emits is in the GenAI conventions' registry (issue 48).

The registry is vendored (tests/data/semconv/registry.json: the attribute keys and operation
names of open-telemetry/semantic-conventions-genai's registry files, with their commits and
licence); nothing is downloaded. The SDK's spans for one request that uses every signal, and
the evaluation records ``--emit-otlp`` sends, are diffed against it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import spanguard
from spanguard import semconv
from spanguard.testing import SpanCapture
from spanguard_processor.emit.events import EvaluationEvent

REGISTRY = json.loads(
    (Path(__file__).parents[1] / "data" / "semconv" / "registry.json").read_text("utf-8")
)
# keys spanguard still emits that the registry no longer lists, each with why
KNOWN_EXTRA: dict[str, str] = {}


@spanguard.tool
def lookup(order: str) -> str:
    return f"order {order}"


@spanguard.retrieval("kb")
def search(query: str) -> list[dict[str, Any]]:
    return [{"id": "d1", "group": "refunds", "rank": 1, "score": 0.9}]


def _spans() -> list[dict[str, Any]]:
    with SpanCapture(capture_content=True) as capture:
        with spanguard.request("support", seed_id="s1", assignments={"group": "a"}) as req:
            req.set_input("Where is my order?")
            with spanguard.plan(["look up", "answer"]):
                spanguard.plan_step("check")
            search("order")
            spanguard.record_documents([{"id": "d2", "group": "refunds"}], source="faq")
            with spanguard.llm_call("gpt-4o-mini", provider="openai") as call:
                call.set_input([{"role": "user", "content": "Where is my order?"}])
                call.set_output([{"role": "assistant", "content": "On its way."}])
                call.set_response_model("gpt-4o-mini-2024-07-18")
                call.record_usage(12, 5)
            lookup("42")
            spanguard.friction("slow lookup")
            spanguard.escalate("angry")
            req.set_output("On its way.")
        return capture.spans()


def _emitted() -> tuple[set[str], set[str]]:
    """The ``gen_ai.*`` keys on spans and span events, and the operation names."""
    spans = _spans()
    keys: set[str] = set()
    operations: set[str] = set()
    for span in spans:
        keys.update(span["attributes"])
        operations.add(span["attributes"].get(semconv.GEN_AI_OPERATION_NAME, ""))
        for event in span["events"]:
            keys.update(event["attributes"])
    event = EvaluationEvent("spanguard.case", 1.0, "pass", "ok", response_id="chatcmpl-1")
    keys.update(event.attributes())
    return {k for k in keys if k.startswith("gen_ai.")}, operations - {""}


def test_every_gen_ai_key_spanguard_emits_is_in_the_registry() -> None:
    keys, operations = _emitted()
    assert {semconv.GEN_AI_PROVIDER_NAME, semconv.GEN_AI_RETRIEVAL_DOCUMENTS} <= keys
    assert keys - set(REGISTRY["attributes"]) == set(KNOWN_EXTRA)
    assert operations <= set(REGISTRY["gen_ai.operation.name"])
    assert {"invoke_agent", "plan", "retrieval", "chat", "execute_tool"} <= operations


def test_the_keys_of_the_semconv_module_are_the_registrys_or_named_as_older() -> None:
    """Every ``gen_ai.*`` constant is in the registry, or marked as an older name read only."""
    source = Path(semconv.__file__).read_text("utf-8")
    registry = set(REGISTRY["attributes"])
    for name in dir(semconv):
        value = getattr(semconv, name)
        if not (isinstance(value, str) and value.startswith("gen_ai.")) or value in registry:
            continue
        if name.startswith(("EVENT_", "GEN_AI_PROMPT", "GEN_AI_COMPLETION")):
            continue  # event names, and OpenLLMetry's older indexed prefixes (read only)
        line = next(line for line in source.splitlines() if line.startswith(f"{name}:"))
        assert "older" in line or "read only" in line, line


def test_our_spans_carry_what_the_conventions_require() -> None:
    """``invoke_agent`` names a provider, the plan span is the ``plan`` operation, retrievals
    are CLIENT spans (the conventions' kind for a call to a data source)."""
    by_name = {span["name"]: span for span in _spans()}
    agent = by_name["invoke_agent support"]["attributes"]
    assert agent[semconv.GEN_AI_PROVIDER_NAME] == semconv.AGENT_PROVIDER
    assert by_name["plan"]["attributes"][semconv.GEN_AI_OPERATION_NAME] == "plan"
    assert [by_name[n]["kind"] for n in ("retrieval kb", "retrieval faq")] == ["CLIENT"] * 2
