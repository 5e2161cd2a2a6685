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
from ._llm import is_llm_span
from .identity import is_agent_span, mcp_method, tool_name
from .parts import Unread

__all__ = ["MAX_NOTES", "Unread", "unread_keys"]

MAX_NOTES = 32  # per trace: a diagnosis needs examples, not every span

LANGFUSE_TYPE = semconv.LANGFUSE_OBSERVATION_TYPE
# Langfuse observation types that stand for a signal; tool, retriever, generation, agent and
# the events named like spanguard's are read (see ._normalize), so their spans count as read
_LANGFUSE_SIGNAL_TYPES = frozenset(
    {"tool", "retriever", "generation", "embedding", "event", "guardrail", "evaluator"}
)
# OpenInference kinds with no mapping (TOOL, RETRIEVER, AGENT and LLM are read)
_OI_UNMAPPED = frozenset({"RERANKER", "EMBEDDING", "GUARDRAIL", "EVALUATOR"})
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


def _span_keys(span: SpanRecord) -> list[str]:
    attrs = span.attributes
    keys: list[str] = []
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


def unread_keys(spans: Sequence[SpanRecord], extra: Sequence[Unread] = ()) -> tuple[Unread, ...]:
    """The trace's unread-but-suggestive keys, counted per (key, span name), sorted; at most
    :data:`MAX_NOTES`. ``extra`` notes (the placeholders conversion dropped) are counted in."""
    counts: Counter[tuple[str, str]] = Counter()
    for note in extra:
        counts[(note.key, note.span)] += note.count
    for span in spans:
        for key in dict.fromkeys(_span_keys(span)):
            counts[(key, span.name)] += 1
    notes = sorted(counts.items())[:MAX_NOTES]
    return tuple(Unread(key, name, count) for (key, name), count in notes)
