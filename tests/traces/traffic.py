"""Traffic for the SQL-map tests: the example support agent's spans, recorded in process by
the real SDK (deterministic ids and clock), and the span fixtures of ``tests/**/data``."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import spanguard
from spanguard.exceptions import SpanguardError
from spanguard.testing import SpanCapture
from spanguard_processor.ingest.spans import SpanRecord
from spanguard_processor.inputs.sql_load import spans_of
from spanguard_processor.traces.convert import record_from_readable_span

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT.parent / "examples" / "support_agent.py"
PROMPTS = (
    "Where is my order 1234?",
    "I want a refund for order 77.",
    "Can a human help me with my account?",
    "Should my loan application be approved?",
    "How do I reset my password?",
    "Is my refund for order 5150 on its way?",
)
PROFILES = tuple({"gender": g, "age": a} for g in ("female", "male") for a in ("30", "60"))


def _agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sqlmap_support_agent", AGENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variants() -> list[dict[str, Any]]:
    """The suite's variants: every prompt with every profile."""
    return [
        {"id": f"s{s}::{i}", "seed_id": f"s{s}", "prompt": p, "assignments": dict(profile)}
        for s, p in enumerate(PROMPTS)
        for i, profile in enumerate(PROFILES)
    ]


def demo_spans(bias: float = 0.6) -> list[SpanRecord]:
    """The support agent answering every variant (biased against ``female``), with user
    feedback on some answers, as the processor would receive its spans."""
    agent = _agent()
    capture = SpanCapture(capture_content=True, deterministic=True).start()
    try:
        for n, variant in enumerate(variants()):
            with spanguard.request(
                "support_agent",
                request_id=variant["id"],
                seed_id=variant["seed_id"],
                variant_id=variant["id"],
                assignments=variant["assignments"],
                input=variant["prompt"],
            ) as request:
                reply = agent.answer(variant["prompt"], variant["assignments"], bias=bias)
                request.set_output(reply)
            if n % 3 == 0:
                spanguard.feedback(variant["id"], "negative")
    finally:
        capture.stop()
    return [record_from_readable_span(s) for s in capture.exporter.get_finished_spans()]


def span_fixtures() -> list[Path]:
    """Every file under a ``data`` folder of the tests that holds spans."""
    found = []
    for path in sorted(ROOT.glob("**/data/**/*")):
        if not path.is_file() or path.suffix in (".py", ".md", ".yaml"):
            continue
        try:
            if next(iter(spans_of([path])), None) is not None:
                found.append(path)
        except (SpanguardError, ValueError, OSError):
            continue
    return found
