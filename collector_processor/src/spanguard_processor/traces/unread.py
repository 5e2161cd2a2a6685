"""What a trace holds that the conversion does not read but that looks like a signal.

A metric whose signal no record carries is NO_SIGNAL, and the team needs to know why: the app
recorded nothing, or recorded it under keys spanguard does not read (a Langfuse
``langfuse.observation.type=embedding`` span, an OpenInference kind without a mapping, GenAI content
events, an ``escalated`` attribute of the app's own). Conversion keeps a compact per-trace note
of those keys (:class:`Unread`: the key, the span name, how many spans), which travels with the
agent trace through JSONL, the store and ``traces export``, so the diagnosis is the same on
every path. Placeholders dropped as hidden text (``output.value=<placeholder>``, see
:mod:`._normalize`) are noted too. Runs on the normalized spans: Langfuse keys that are read
are not noted. Pure: span records in, notes out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from spanguard import semconv

from ..ingest.spans import SpanRecord
from ._documents import span_documents
from ._llm import MESSAGE_KEYS, is_llm_span
from .identity import is_agent_span, mcp_method, tool_name
from .parts import Unread

__all__ = ["MAX_NOTES", "NO_DOCUMENTS", "NO_TEXT", "Unread", "content_switch", "unread_keys"]

MAX_NOTES = 32  # per trace: a diagnosis needs examples, not every span
# notes of spans that carry no content because their instrumentation's content switch is off:
# the key is the prefix and the switch that turns it on (a diagnosis names it)
NO_TEXT = "no text: "
NO_DOCUMENTS = "no documents: "
# a model call's text: its messages, or OpenInference's raw input/output value
_MESSAGE_KEYS = (*MESSAGE_KEYS, semconv.INPUT_VALUE, semconv.OUTPUT_VALUE)
# the content switch of each instrumentation, told apart by the keys its spans carry (scope
# names do not survive the span store): first match wins
_ANTHROPIC_SWITCH = "ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE=content (the Anthropic SDK)"
_TRACELOOP_SWITCH = "TRACELOOP_TRACE_CONTENT=true (OpenLLMetry)"
_GENAI_SWITCH = (
    f"{semconv.CAPTURE_MESSAGE_CONTENT_ENV}={semconv.ContentCapture.SPAN_ONLY} or "
    f"{semconv.ContentCapture.EVENT_ONLY} (the OpenTelemetry GenAI instrumentations)"
)
_SPANGUARD_SWITCH = "configure(capture_content=True) (spanguard's SDK)"

LANGFUSE_TYPE = semconv.LANGFUSE_OBSERVATION_TYPE
# Langfuse observation types that stand for a signal; tool, retriever, generation, agent and
# the events named like spanguard's are read (see ._normalize), so their spans count as read
_LANGFUSE_SIGNAL_TYPES = frozenset(
    {"tool", "retriever", "generation", "embedding", "event", "guardrail", "evaluator"}
)
# OpenInference kinds with no mapping (TOOL, RETRIEVER, AGENT and LLM are read)
_OI_UNMAPPED = frozenset({"RERANKER", "EMBEDDING", "GUARDRAIL", "EVALUATOR", "PROMPT", "DECISION"})
# an app's own names for process signals (never keys of the conventions read, whose message
# keys may mention tool calls or plans that are read as such)
_SUGGESTIVE = re.compile(r"escalat|hand_?off|friction|plan_?step", re.IGNORECASE)
_SPANGUARD = semconv.NAMESPACE + "."
_CONVENTIONS = (
    _SPANGUARD,
    "gen_ai.",
    "llm.",
    "input.",
    "output.",
    "traceloop.",
    "retrieval.",
    "tool.",
    "openinference.",
    "langfuse.",
)


def _read(span: SpanRecord) -> bool:
    """Whether the conversion reads the span as a tool, model call, retrieval, agent or
    (a Langfuse event span named like one of spanguard's) an event."""
    return (
        tool_name(span) is not None
        or is_llm_span(span)
        or is_agent_span(span)
        or any(e.name.startswith(_SPANGUARD) for e in span.events)
        or bool(span_documents(span))
        or span.attributes.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_RETRIEVAL
    )


def content_switch(span: SpanRecord) -> str | None:
    """The switch that puts content on this span, named for its instrumentation; None when
    the span is no instrumentation's we know."""
    attrs = span.attributes
    if span.name.startswith("anthropic.") and any(k.startswith("anthropic.") for k in attrs):
        return _ANTHROPIC_SWITCH
    if semconv.TRACELOOP_LLM_REQUEST_TYPE in attrs or any(
        k.startswith("traceloop.") for k in attrs
    ):
        return _TRACELOOP_SWITCH
    if semconv.REQUEST_ID in attrs or any(k.startswith(_SPANGUARD) for k in attrs):
        return _SPANGUARD_SWITCH
    if semconv.GEN_AI_OPERATION_NAME in attrs:
        return _GENAI_SWITCH
    return None


def _content_keys(span: SpanRecord, missing: frozenset[str]) -> list[str]:
    """A model call without text, a retrieval without documents, when the trace misses that
    content (``missing`` holds ``"text"`` and/or ``"documents"``): the switch that is off."""
    attrs = span.attributes
    switch = content_switch(span)
    if switch is None:
        return []
    text = is_llm_span(span) and not any(k.startswith(_MESSAGE_KEYS) for k in attrs)
    if text and "text" in missing:
        return [NO_TEXT + switch]
    retrieval = attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_RETRIEVAL
    if retrieval and "documents" in missing and not span_documents(span):
        return [NO_DOCUMENTS + switch]
    return []


def _span_keys(span: SpanRecord, missing: frozenset[str]) -> list[str]:
    attrs = span.attributes
    keys: list[str] = _content_keys(span, missing)
    read = _read(span)
    kind = attrs.get(LANGFUSE_TYPE)
    if not read and isinstance(kind, str) and kind.lower() in _LANGFUSE_SIGNAL_TYPES:
        keys.append(f"{LANGFUSE_TYPE}={kind}")
    oi = attrs.get(semconv.OPENINFERENCE_SPAN_KIND)
    if not read and isinstance(oi, str) and oi.upper() in _OI_UNMAPPED:
        keys.append(f"{semconv.OPENINFERENCE_SPAN_KIND}={oi}")
    loop = attrs.get(semconv.TRACELOOP_SPAN_KIND)
    if not read and loop == semconv.TRACELOOP_KIND_TASK:  # a task may be a tool call
        keys.append(f"{semconv.TRACELOOP_SPAN_KIND}={loop}")
    op = attrs.get(semconv.GEN_AI_OPERATION_NAME)
    if not read and isinstance(op, str) and op and op not in semconv.OPS_NOT_A_SIGNAL:
        keys.append(f"{semconv.GEN_AI_OPERATION_NAME}={op}")
    method = mcp_method(span)
    if not read and method is not None:  # an MCP request that is no tool call: shown, counted
        keys.append(f"{semconv.MCP_METHOD_NAME}={method}")
    keys.extend(
        key for key in attrs if not key.startswith(_CONVENTIONS) and _SUGGESTIVE.search(key)
    )
    for event in span.events:
        if event.name.startswith(_SPANGUARD) or event.name == semconv.EVENT_EVALUATION_RESULT:
            continue  # the evaluation results are read (traces/evaluations.py)
        if event.name.startswith("gen_ai.") or _SUGGESTIVE.search(event.name):
            keys.append(f"event {event.name}")
    return keys


def unread_keys(
    spans: Sequence[SpanRecord],
    extra: Sequence[Unread] = (),
    missing: frozenset[str] = frozenset(),
) -> tuple[Unread, ...]:
    """The trace's unread-but-suggestive keys, counted per (key, span name), sorted; at most
    :data:`MAX_NOTES`. ``extra`` notes (the placeholders conversion dropped) are counted in.
    ``missing`` names the content the trace lacks (``"text"``: no output, ``"documents"``):
    its spans that would hold it are noted with their instrumentation's switch
    (:data:`NO_TEXT`, :data:`NO_DOCUMENTS`)."""
    counts: Counter[tuple[str, str]] = Counter()
    for note in extra:
        counts[(note.key, note.span)] += note.count
    for span in spans:
        for key in dict.fromkeys(_span_keys(span, missing)):
            counts[(key, span.name)] += 1
    notes = sorted(counts.items())[:MAX_NOTES]
    return tuple(Unread(key, name, count) for (key, name), count in notes)
