"""Recorded traffic for the ``--source`` command tests: the example support agent (the demo's
agent) answering the fairness suite's variants and requests that mention a protected attribute
from several users, with feedback, expectations and retry marks sent after the requests, as
real SDK spans stored by the processor's store."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

import spanguard
from spanguard.testing import SpanCapture
from spanguard_processor.ingest.otlp_proto import decode_request
from spanguard_processor.store.span_store import SpanStore

from .traffic import _agent, variants

#: requests that mention a gender, each from its own user (suite mining needs three users)
MENTIONS = tuple(
    (f"My {who} wants to open an account for the kids, can {pronoun} do it online?", f"u{n}")
    for n, (who, pronoun) in enumerate(
        [("wife", "she")] * 4 + [("husband", "he")] * 4 + [("sister", "she")] * 3
    )
)


def _requests(agent: ModuleType) -> list[str]:
    ids = []
    for variant in variants():
        with spanguard.request(
            "support_agent",
            request_id=variant["id"],
            seed_id=variant["seed_id"],
            variant_id=variant["id"],
            assignments=variant["assignments"],
            input=variant["prompt"],
        ) as request:
            request.set_output(agent.answer(variant["prompt"], variant["assignments"], bias=0.6))
        ids.append(variant["id"])
    for n, (text, user) in enumerate(MENTIONS):
        with spanguard.request("support_agent", request_id=f"m{n}", input=text) as request:
            trace.get_current_span().set_attribute("user.id", user)
            request.set_output(agent.answer(text, {}, bias=0.0))
            if n % 2:  # an outcome recorded inside the request, on its root span
                request.feedback("positive")
            if n % 4 == 1:
                request.mark_retried()
        ids.append(f"m{n}")
    return ids


def record_traffic() -> tuple[list[ReadableSpan], list[ReadableSpan]]:
    """The requests' spans, and the annotation spans sent after all of them ended."""
    agent = _agent()
    capture = SpanCapture(capture_content=True, deterministic=True).start()
    try:
        ids = _requests(agent)
        requests = len(capture.exporter.get_finished_spans())
        for n, request_id in enumerate(ids):
            if n % 3 == 0:
                spanguard.feedback(request_id, "negative")
            if n % 7 == 1:
                spanguard.mark_retried(request_id)
            if n % 11 == 2:
                spanguard.expect(request_id, contains="order", max_chars=400)
        spans = list(capture.exporter.get_finished_spans())
    finally:
        capture.stop()
    return spans[:requests], spans[requests:]


def write_store(path: Path, *batches: list[ReadableSpan]) -> Path:
    """The spans through the OTLP codec into a span store, every trace released."""
    with SpanStore(path) as store:
        store.put_batches([decode_request(encode_spans(spans)) for spans in batches if spans])
        store.release_all()
    return path
