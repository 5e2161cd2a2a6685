"""A trace's spans made readable before conversion: foreign keys mapped, placeholders dropped,
nested model calls merged.

Part of the one conversion (:mod:`~spanguard_processor.traces.convert`), run first so every
reader after it (tool calls, model calls, text, documents, events, identity) sees one shape:

* **Langfuse** (its OTel SDK, v3 and later): ``langfuse.observation.type`` ``tool`` →
  ``execute_tool`` named after the span, ``generation`` → a ``chat`` model call (model, usage,
  cost), ``retriever`` → ``retrieval`` (its output, when a list of objects, as the documents
  ``[{"id", "group", "rank", "score"}]``), ``agent`` → ``invoke_agent``; ``event`` spans
  named ``escalation``, ``friction`` or ``plan_step`` → spanguard's event of that name;
  ``langfuse.observation.input|output`` (else ``langfuse.trace.input|output``) →
  ``input.value|output.value``; ``langfuse.observation.metadata.*`` →
  ``spanguard.metadata.*``. Keys the span already has are never overwritten.
* **Placeholders**: values an instrumentation writes in place of hidden text (OpenInference's
  ``__REDACTED__`` under ``OPENINFERENCE_HIDE_INPUTS`` / ``_OUTPUTS``, Logfire's
  ``[Scrubbed due to …]``) are dropped, so hidden text counts as absent, and counted as
  :class:`~.parts.Unread` notes (``output.value=<placeholder>``) that the diagnosis names.
* **One operation, counted once**: spans that record the same model or tool call (nested
  model calls, sibling calls with one ``gen_ai.response.id``, a framework's empty LLM span
  beside the call, a tool span inside a tool span of the same tool) are merged into one
  (:mod:`._dedup`), so calls, tokens, cost and tool calls count once.

Pure; a span that needs none of this is passed through as it is.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from spanguard import semconv

from ..ingest.spans import AttrValue, SpanEvent, SpanRecord
from ._dedup import counted_once
from .parts import Unread

__all__ = ["PLACEHOLDER", "Normalized", "is_placeholder", "normalize"]

PLACEHOLDER = "<placeholder>"  # how an Unread note shows a placeholder value
_SCRUBBED = "[Scrubbed due to "  # Logfire's scrubbing placeholder prefix
_LF_METADATA = semconv.LANGFUSE_OBSERVATION_METADATA + "."
_LF_EVENTS = {
    "escalation": (semconv.EVENT_ESCALATION, {"reason": semconv.ESCALATION_REASON}),
    "friction": (semconv.EVENT_FRICTION, {"point": semconv.FRICTION_POINT}),
    "plan_step": (semconv.EVENT_PLAN_STEP, {"step": semconv.PLAN_STEP}),
}
_LF_KINDS = {
    semconv.LF_TYPE_TOOL: semconv.OP_EXECUTE_TOOL,
    semconv.LF_TYPE_GENERATION: semconv.OP_CHAT,
    semconv.LF_TYPE_RETRIEVER: semconv.OP_RETRIEVAL,
    semconv.LF_TYPE_AGENT: semconv.OP_INVOKE_AGENT,
}


@dataclass(frozen=True)
class Normalized:
    """The spans to convert and the placeholders dropped from them (key, span name, count)."""

    spans: tuple[SpanRecord, ...]
    placeholders: tuple[Unread, ...] = ()


def is_placeholder(value: AttrValue) -> bool:
    """A value standing for hidden text: ``__REDACTED__`` (also JSON-quoted) or Logfire's
    ``[Scrubbed due to …]``."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    return text in (semconv.OI_REDACTED, f'"{semconv.OI_REDACTED}"') or text.startswith(_SCRUBBED)


def _decoded(value: AttrValue) -> AttrValue:
    """A Langfuse metadata value: JSON-encoded by its SDK (``'"acme"'``), raw from others."""
    if isinstance(value, str):
        try:
            data = json.loads(value)
        except ValueError:
            return value
        if isinstance(data, str | int | float | bool):
            return data
    return value


def _usage(value: AttrValue) -> dict[str, AttrValue]:
    data = json.loads(value) if isinstance(value, str) and value.startswith("{") else value
    out: dict[str, AttrValue] = {}
    if not isinstance(data, Mapping):
        return out
    for key, names in (
        (semconv.GEN_AI_USAGE_INPUT_TOKENS, ("input", "prompt_tokens", "input_tokens")),
        (semconv.GEN_AI_USAGE_OUTPUT_TOKENS, ("output", "completion_tokens", "output_tokens")),
    ):
        found = next((data[n] for n in names if isinstance(data.get(n), int)), None)
        if found is not None:
            out[key] = found
    return out


def _cost(value: AttrValue) -> dict[str, AttrValue]:
    data = json.loads(value) if isinstance(value, str) and value.startswith("{") else value
    total = data.get("total") if isinstance(data, Mapping) else None
    if isinstance(total, int | float) and not isinstance(total, bool):
        return {semconv.LLM_COST_TOTAL: float(total)}
    return {}


def _message_list(value: AttrValue) -> AttrValue:
    """Langfuse keeps one output message as an object: a list of one, as readers expect."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            data = json.loads(value)
        except ValueError:
            return value
        if isinstance(data, dict) and "role" in data:
            return json.dumps([data], ensure_ascii=False)
    return value


def _is_object_list(value: AttrValue) -> bool:
    """A JSON list of objects: a retriever's documents (``[{"id", "group", …}]``)."""
    if not isinstance(value, str) or not value.startswith("["):
        return False
    try:
        data = json.loads(value)
    except ValueError:
        return False
    return isinstance(data, list) and bool(data) and all(isinstance(d, dict) for d in data)


def _langfuse(span: SpanRecord) -> SpanRecord:
    attrs = span.attributes
    kind = attrs.get(semconv.LANGFUSE_OBSERVATION_TYPE)
    kind = kind.lower() if isinstance(kind, str) else None
    added: dict[str, AttrValue] = {}
    operation = _LF_KINDS.get(kind or "")
    if operation is not None:
        added[semconv.GEN_AI_OPERATION_NAME] = operation
    if kind == semconv.LF_TYPE_TOOL:
        added[semconv.GEN_AI_TOOL_NAME] = span.name
    for target, keys in (
        (semconv.INPUT_VALUE, (semconv.LANGFUSE_OBSERVATION_INPUT, semconv.LANGFUSE_TRACE_INPUT)),
        (
            semconv.OUTPUT_VALUE,
            (semconv.LANGFUSE_OBSERVATION_OUTPUT, semconv.LANGFUSE_TRACE_OUTPUT),
        ),
    ):
        value = next((attrs[k] for k in keys if attrs.get(k) is not None), None)
        if value is not None:
            added[target] = _message_list(value) if kind == semconv.LF_TYPE_GENERATION else value
    if kind == semconv.LF_TYPE_RETRIEVER and _is_object_list(added.get(semconv.OUTPUT_VALUE)):
        added[semconv.GEN_AI_RETRIEVAL_DOCUMENTS] = added[semconv.OUTPUT_VALUE]
    if kind == semconv.LF_TYPE_GENERATION:
        model = attrs.get(semconv.LANGFUSE_OBSERVATION_MODEL)
        if isinstance(model, str) and model:
            added[semconv.GEN_AI_REQUEST_MODEL] = model
        try:
            added.update(_usage(attrs.get(semconv.LANGFUSE_OBSERVATION_USAGE)))
            added.update(_cost(attrs.get(semconv.LANGFUSE_OBSERVATION_COST)))
        except ValueError:
            pass
    metadata = {
        k[len(_LF_METADATA) :]: _decoded(v) for k, v in attrs.items() if k.startswith(_LF_METADATA)
    }
    for key, value in metadata.items():
        added[semconv.metadata_key(key)] = value
    events = span.events
    if kind == semconv.LF_TYPE_EVENT and span.name.lower() in _LF_EVENTS:
        name, fields = _LF_EVENTS[span.name.lower()]
        event_attrs = {fields.get(k, k): v for k, v in metadata.items()}
        events = (*events, SpanEvent(name, span.start_ns, event_attrs))
    added = {k: v for k, v in added.items() if k not in attrs}
    if not added and events is span.events:
        return span
    return replace(span, attributes={**attrs, **added}, events=events)


def _without_placeholders(span: SpanRecord, counts: Counter[tuple[str, str]]) -> SpanRecord:
    attrs = span.attributes
    hidden = [k for k, v in attrs.items() if is_placeholder(v)]
    if not hidden:
        return span
    for key in hidden:
        counts[(f"{key}={PLACEHOLDER}", span.name)] += 1
    return replace(span, attributes={k: v for k, v in attrs.items() if k not in hidden})


def normalize(spans: Sequence[SpanRecord]) -> Normalized:
    """The spans of one trace, readable by the conversion (see the module doc)."""
    counts: Counter[tuple[str, str]] = Counter()
    cleaned = [_langfuse(_without_placeholders(s, counts)) for s in spans]
    merged = counted_once(cleaned)
    notes = tuple(Unread(key, name, n) for (key, name), n in sorted(counts.items()))
    return Normalized(tuple(merged), notes)
