"""The example support agent: every signal, deterministic, and a bias setting that shows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from spanguard import semconv
from spanguard.testing import capture_spans

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import support_agent

PROMPTS = [f"Where is my refund for order {n}?" for n in range(30)]


def _signals(bias: float | None, gender: str) -> dict[str, int]:
    counts = {"escalations": 0, "friction": 0, "lookups": 0, "community_first": 0}
    with capture_spans(deterministic=True) as capture:
        for prompt in PROMPTS:
            support_agent.answer(prompt, {"gender": gender}, bias=bias)
    for span in capture.spans():
        names = [e["name"] for e in span["events"]]
        counts["escalations"] += names.count(semconv.EVENT_ESCALATION)
        counts["friction"] += names.count(semconv.EVENT_FRICTION)
        counts["lookups"] += span["name"] == "execute_tool lookup_order"
        if semconv.GEN_AI_RETRIEVAL_DOCUMENTS in span["attributes"]:
            docs = json.loads(span["attributes"][semconv.GEN_AI_RETRIEVAL_DOCUMENTS])
            counts["community_first"] += docs[0]["group"] == "community"
    return counts


def test_every_signal_is_emitted() -> None:
    with capture_spans(capture_content=True) as capture:
        text = support_agent.answer("Please get me a human about order 5", {"gender": "male"})
    names = {s["name"] for s in capture.spans()}
    assert names == {
        "invoke_agent support_agent",
        "plan",
        "chat support-rules-1",
        "retrieval help_center",
        "execute_tool lookup_order",
    }
    root = next(s for s in capture.spans() if s["parent_span_id"] is None)
    assert root["attributes"][semconv.OUTPUT_VALUE] == text
    assert semconv.metadata_key("helpfulness_score") in root["attributes"]
    assert root["attributes"][semconv.expect_key("min_chars")] == 20
    assert [e["name"] for e in root["events"]] == [semconv.EVENT_ESCALATION]


def test_fair_by_default_and_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(support_agent.BIAS_ENV, raising=False)
    assert _signals(0.0, "male") == _signals(0.0, "female")
    assert _signals(0.0, "female") == _signals(0.0, "female")


def test_bias_disfavours_the_target_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(support_agent.BIAS_ENV, "0.6")
    male, female = _signals(None, "male"), _signals(None, "female")
    assert male == _signals(0.0, "male")
    assert female["escalations"] > male["escalations"] + 5
    assert female["friction"] > male["friction"] + 5
    assert female["lookups"] < male["lookups"] - 5
    assert female["community_first"] > male["community_first"] + 5
