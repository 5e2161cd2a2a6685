"""Spans of one trace → one :class:`AgentTrace`, across four conventions.

Reads spanguard's own spans (``docs/attributes.md``), the OpenTelemetry GenAI conventions,
OpenInference and OpenLLMetry. Everything here is pure: span records in, agent traces out.

Public entry points:

* :func:`trace_from_records` — one trace's :class:`SpanRecord` s (plus annotation spans) to an
  :class:`AgentTrace`;
* :func:`traces_from_records` — any spans, grouped by trace id, annotations merged by request id;
* :func:`traces_from_readable_spans` — the same for in-process OTel SDK spans (for example from an
  ``InMemorySpanExporter``), used by ``spanguard run``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spanguard import semconv

from ..common._json import parse_json
from ..ingest.spans import AttrValue, SpanEvent, SpanRecord
from ._documents import finite_number, span_documents
from ._llm import (
    Message,
    is_llm_span,
    llm_call,
    output_messages,
    question_and_answer,
    requested_tools,
    text_of,
)
from .model import AgentTrace, JSONScalar, ProcessTrace, ToolCall

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "annotation_request_id",
    "conversation_key",
    "is_annotation",
    "record_from_readable_span",
    "trace_from_records",
    "traces_from_readable_spans",
    "traces_from_records",
]

_AGENT_KINDS = (semconv.TRACELOOP_KIND_WORKFLOW, semconv.TRACELOOP_KIND_AGENT)
_EXPECT_LITERAL = frozenset({"min_chars", "max_chars", "regex", "contains", "not_contains", "json"})


def is_annotation(span: SpanRecord) -> bool:
    """True for a ``spanguard.annotate`` span (feedback, retry marks, expectations)."""
    return span.name == semconv.SPAN_ANNOTATION


def annotation_request_id(span: SpanRecord) -> str | None:
    """The request id an annotation span annotates, or None."""
    value = span.attributes.get(semconv.REQUEST_ID)
    return str(value) if value is not None and value != "" else None


# --- root and identity --------------------------------------------------------------------


def _is_agent_span(span: SpanRecord) -> bool:
    attrs = span.attributes
    return (
        attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_INVOKE_AGENT
        or attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OI_KIND_AGENT
        or attrs.get(semconv.TRACELOOP_SPAN_KIND) in _AGENT_KINDS
    )


def find_root(spans: Sequence[SpanRecord]) -> SpanRecord | None:
    """The request span: parentless within the trace; agent spans first, then the earliest."""
    ids = {span.span_id for span in spans}
    candidates = [s for s in spans if not s.parent_span_id or s.parent_span_id not in ids]
    if not candidates:
        return None
    return min(candidates, key=lambda s: (not _is_agent_span(s), s.start_ns, s.span_id))


def _str_or_none(value: AttrValue) -> str | None:
    if value is None or isinstance(value, bytes | tuple | Mapping):
        return None
    return str(value)


def _text(attrs: Mapping[str, AttrValue], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, tuple | Mapping):
            return json.dumps(_plain(value), ensure_ascii=False, sort_keys=True)
    return None


def _plain(value: AttrValue) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def _cost(root: SpanRecord, spans: Sequence[SpanRecord]) -> float | None:
    own = finite_number(root.attributes.get(semconv.COST_USD))
    if own is not None:
        return own
    total: float | None = None
    for span in spans:
        value = finite_number(span.attributes.get(semconv.COST_USD))
        if value is None:
            value = finite_number(span.attributes.get(semconv.LLM_COST_TOTAL))
        if value is not None:
            total = (total or 0.0) + value
    return total


def _prefixed(attrs: Mapping[str, AttrValue], prefix: str) -> dict[str, AttrValue]:
    return {k[len(prefix):]: v for k, v in attrs.items() if k.startswith(prefix) and k != prefix}


def _repeat(value: AttrValue) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


# --- feedback, retries, expectations (root, events, annotation spans) ----------------------


def _feedback_value(value: AttrValue) -> JSONScalar:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    return _str_or_none(value)


def _expect_value(check: str, value: AttrValue) -> Any:
    if check not in _EXPECT_LITERAL and isinstance(value, str):
        try:
            return parse_json(value)
        except ValueError:
            return value
    return _plain(value)


class _Outcome:
    """Feedback, retry mark and expectations, merged in time order (later values win)."""

    def __init__(self) -> None:
        self.feedback: JSONScalar = None
        self.retried = False
        self.expect: dict[str, Any] = {}

    def absorb(self, attrs: Mapping[str, AttrValue]) -> None:
        if semconv.FEEDBACK in attrs:
            self.feedback = _feedback_value(attrs[semconv.FEEDBACK])
        if attrs.get(semconv.RETRIED) is True:
            self.retried = True
        for check, value in _prefixed(attrs, semconv.EXPECT_PREFIX).items():
            self.expect[check] = _expect_value(check, value)


def _outcome(root: SpanRecord, spans: Sequence[SpanRecord],
             annotations: Sequence[SpanRecord]) -> _Outcome:
    outcome = _Outcome()
    outcome.absorb(root.attributes)
    for _, _, event in _events(spans):
        if event.name in (semconv.EVENT_FEEDBACK, semconv.EVENT_RETRY, semconv.EVENT_EXPECT):
            outcome.absorb(event.attributes)
    for span in sorted(annotations, key=lambda s: (s.end_ns, s.span_id)):
        outcome.absorb(span.attributes)
        for event in span.events:
            outcome.absorb(event.attributes)
    return outcome


# --- process signals -----------------------------------------------------------------------


def _events(spans: Sequence[SpanRecord]) -> list[tuple[int, str, SpanEvent]]:
    found = [(e.time_ns, s.span_id, e) for s in spans for e in s.events]
    found.sort(key=lambda item: (item[0], item[1]))
    return found


def tool_name(span: SpanRecord) -> str | None:
    """The tool a span calls under any convention, or None when it is not a tool span."""
    attrs = span.attributes
    is_tool = (
        attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_EXECUTE_TOOL
        or attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OI_KIND_TOOL
        or attrs.get(semconv.TRACELOOP_SPAN_KIND) == semconv.TRACELOOP_KIND_TOOL
    )
    if not is_tool:
        return None
    for key in (semconv.GEN_AI_TOOL_NAME, semconv.TOOL_NAME, semconv.TRACELOOP_ENTITY_NAME):
        value = attrs.get(key)
        if isinstance(value, str) and value.strip():
            return value
    name = span.name.removeprefix(semconv.OP_EXECUTE_TOOL).strip()
    return name or span.name or "tool"


def _tool_calls(ordered: Sequence[SpanRecord], outputs: Mapping[str, Sequence[Message]]
                ) -> tuple[ToolCall, ...]:
    """Executed tool spans, plus the calls models requested that no executed span answers.

    A requested call is answered by an executed tool span with the same call id, else by an
    unanswered one with the same name. Executed calls sit at their span's start, requested ones
    at the end of the LLM span that asked for them.
    """
    executed = [(s, name) for s in ordered if (name := tool_name(s)) is not None]
    requested = [(s, name, ident) for s in ordered if s.span_id in outputs
                 for name, ident in requested_tools(outputs[s.span_id])]
    answered: set[int] = set()
    ids = {}
    for index, (span, _) in enumerate(executed):
        call_id = span.attributes.get(semconv.GEN_AI_TOOL_CALL_ID)
        if isinstance(call_id, str) and call_id:
            ids[call_id] = index
    timeline: list[tuple[int, str, int, ToolCall]] = [
        (span.start_ns, span.span_id, 0, ToolCall(name)) for span, name in executed]
    for position, (span, name, ident) in enumerate(requested):
        match = ids.get(ident) if ident else None
        if match is not None and match not in answered:
            answered.add(match)
            continue
        same = next((i for i, (_, executed_name) in enumerate(executed)
                     if executed_name == name and i not in answered), None)
        if same is not None:
            answered.add(same)
            continue
        timeline.append((span.end_ns, span.span_id, 1 + position,
                         ToolCall(name, ident, requested=True)))
    timeline.sort(key=lambda item: item[:3])
    return tuple(call for *_, call in timeline)


def _process(spans: Sequence[SpanRecord], outputs: Mapping[str, Sequence[Message]]
             ) -> ProcessTrace:
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    tools = _tool_calls(ordered, outputs)
    documents = tuple(doc for s in ordered for doc in span_documents(s))
    plan: list[str] = []
    friction: list[str] = []
    escalated = False
    reason: str | None = None
    for _, _, event in _events(spans):
        attrs = event.attributes
        if event.name == semconv.EVENT_PLAN_STEP:
            step = _str_or_none(attrs.get(semconv.PLAN_STEP))
            if step:
                plan.append(step)
        elif event.name == semconv.EVENT_FRICTION:
            point = _str_or_none(attrs.get(semconv.FRICTION_POINT))
            if point:
                friction.append(point)
        elif event.name == semconv.EVENT_ESCALATION:
            escalated = True
            given = _str_or_none(attrs.get(semconv.ESCALATION_REASON))
            if reason is None and given:
                reason = given
    return ProcessTrace(
        tool_calls=tools,
        retrieved_documents=documents,
        plan_steps=tuple(plan),
        escalated=escalated,
        escalation_reason=reason,
        friction_points=tuple(friction),
    )


def _sources(spans: Iterable[SpanRecord]) -> tuple[str, ...]:
    found: set[str] = set()
    for span in spans:
        for key in span.attributes:
            if key.startswith("gen_ai."):
                found.add("gen_ai")
            elif key == semconv.OPENINFERENCE_SPAN_KIND or key.startswith(
                semconv.RETRIEVAL_DOCUMENTS_PREFIX + "."
            ):
                found.add("openinference")
            elif key.startswith("traceloop."):
                found.add("openllmetry")
            elif key.startswith(semconv.NAMESPACE + "."):
                found.add("spanguard")
        if any(e.name.startswith(semconv.NAMESPACE + ".") for e in span.events):
            found.add("spanguard")
    return tuple(sorted(found))


# --- assembly ------------------------------------------------------------------------------


def _metadata_identity(value: AttrValue) -> dict[str, Any]:
    """Counterfactual identity from an OpenInference ``metadata`` JSON object on the root:
    ``{"seed_id", "variant_id", "assignments": {attr: value}, "repeat"}`` (each optional), so an
    app instrumented only with OpenInference can still say which variant a request answers.
    The ``spanguard.*`` keys win where both are present; malformed values are ignored."""
    if not isinstance(value, str):
        return {}
    try:
        data = parse_json(value)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    found: dict[str, Any] = {}
    for key in ("seed_id", "variant_id"):
        if isinstance(data.get(key), str) and data[key]:
            found[key] = data[key]
    assignments = data.get("assignments")
    if isinstance(assignments, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in assignments.items()
    ):
        found["assignments"] = dict(assignments)
    repeat = data.get("repeat")
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat >= 0:
        found["repeat"] = repeat
    return found


def conversation_key(spans: Sequence[SpanRecord]) -> str | None:
    """What groups the parentless model calls of one turn when no parent span exists:
    ``gen_ai.conversation.id``, OpenInference ``session.id`` or traceloop's association
    properties, on any span of a trace whose root is a model call or a tool call. None
    otherwise (a trace with an agent, chain, workflow or spanguard root is one request by
    itself)."""
    root = find_root(spans)
    if root is None or root.parent_span_id or not (is_llm_span(root)
                                                   or tool_name(root) is not None):
        return None
    if any(_is_agent_span(s) or semconv.REQUEST_ID in s.attributes for s in spans):
        return None
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        attrs = span.attributes
        for key in (semconv.GEN_AI_CONVERSATION_ID, semconv.SESSION_ID):
            value = attrs.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return f"{key}={value}"
        props = _prefixed(attrs, semconv.TRACELOOP_ASSOCIATION_PREFIX)
        if props:
            return "traceloop.association.properties=" + json.dumps(
                {k: _plain(v) for k, v in sorted(props.items())}, sort_keys=True)
    return None


_ROOT_INPUT = ((semconv.INPUT_VALUE, semconv.INPUT_MIME_TYPE),
               (semconv.TRACELOOP_ENTITY_INPUT, None), (semconv.GEN_AI_INPUT_MESSAGES, None))
_ROOT_OUTPUT = ((semconv.OUTPUT_VALUE, semconv.OUTPUT_MIME_TYPE),
                (semconv.TRACELOOP_ENTITY_OUTPUT, None), (semconv.GEN_AI_OUTPUT_MESSAGES, None))


def _content(root: SpanRecord, keys: tuple[tuple[str, str | None], ...],
             from_llm: tuple[str, str] | None, *, input_side: bool
             ) -> tuple[str | None, str | None]:
    """The request's question or answer as text, and where it came from.

    spanguard's own request spans keep what the app recorded, verbatim. Otherwise the root's
    value is read as text (plain text, messages, request bodies, traceloop wrappers); failing
    that, the model calls' messages; raw JSON only when nothing better exists. A root that
    is a model or tool call (a turn without a parent) says nothing about the request as a
    whole, so its own values are skipped.
    """
    attrs = root.attributes
    own = semconv.REQUEST_ID in attrs
    raw: tuple[str, str] | None = None
    if own or not (is_llm_span(root) or tool_name(root) is not None):
        for key, mime_key in keys:
            if key not in attrs:
                continue
            if own:
                text = _text(attrs, key)
                return text, key if text is not None else None
            found = text_of(attrs[key], attrs.get(mime_key) if mime_key else None, key,
                            input_side=input_side)
            if found is None:
                continue
            text, source, is_raw = found
            if not is_raw:
                return text, source
            raw = raw or (text, source)
    if from_llm is not None:
        return from_llm
    return raw if raw is not None else (None, None)


def trace_from_records(
    spans: Sequence[SpanRecord],
    annotations: Sequence[SpanRecord] = (),
    *,
    partial: bool = False,
) -> AgentTrace:
    """One agent trace from the spans of one trace and the annotation spans aimed at it.

    ``partial`` marks a trace released before it was complete; a trace with no parentless span
    is always partial. Raises ``ValueError`` for an empty span list.
    """
    if not spans:
        raise ValueError("a trace needs at least one span")
    root = find_root(spans)
    assert root is not None  # a non-empty trace always has a span whose parent is not in it
    attrs = root.attributes
    outcome = _outcome(root, spans, annotations)
    assignments = {
        key: str(_plain(value))
        for key, value in _prefixed(attrs, semconv.ASSIGNMENT_PREFIX).items()
        if value is not None
    }
    foreign = _metadata_identity(attrs.get(semconv.OI_METADATA))
    if not assignments:
        assignments = foreign.pop("assignments", {})
    latency = (root.end_ns - root.start_ns) / 1e6 if root.end_ns >= root.start_ns > 0 else None
    if len({s.trace_id for s in spans}) > 1:  # a turn grouped from parentless model calls
        tops = [s for s in spans if not s.parent_span_id]
        start, end = min(s.start_ns for s in tops), max(s.end_ns for s in tops)
        latency = (end - start) / 1e6 if end >= start > 0 else None
    llm_spans = sorted((s for s in spans if is_llm_span(s)), key=lambda s: (s.start_ns,
                                                                           s.span_id))
    outputs = {s.span_id: output_messages(s) for s in llm_spans}
    question, answer = question_and_answer(llm_spans, outputs)
    input_text, input_source = _content(root, _ROOT_INPUT, question, input_side=True)
    output_text, output_source = _content(root, _ROOT_OUTPUT, answer, input_side=False)
    return AgentTrace(
        trace_id=root.trace_id,
        request_id=_str_or_none(attrs.get(semconv.REQUEST_ID)),
        seed_id=_str_or_none(attrs.get(semconv.SEED_ID)) or foreign.get("seed_id"),
        variant_id=_str_or_none(attrs.get(semconv.VARIANT_ID)) or foreign.get("variant_id"),
        assignments=dict(sorted(assignments.items())),
        repeat=_repeat(attrs.get(semconv.REPEAT, foreign.get("repeat"))),
        input=input_text,
        output=output_text,
        latency_ms=latency,
        cost_usd=_cost(root, spans),
        feedback=outcome.feedback,
        retried=outcome.retried,
        expect=dict(sorted(outcome.expect.items())) or None,
        metadata={
            k: _plain(v) for k, v in sorted(_prefixed(attrs, semconv.METADATA_PREFIX).items())
        },
        trace=_process(spans, outputs),
        partial=partial or root.parent_span_id != "",
        source=_sources([*spans, *annotations]),
        input_source=input_source,
        output_source=output_source,
        llm_calls=tuple(llm_call(s, outputs[s.span_id]) for s in llm_spans),
    )


def traces_from_records(spans: Iterable[SpanRecord]) -> list[AgentTrace]:
    """Group spans by trace id and convert each trace, merging annotations by request id.

    Annotation traces themselves are not returned; annotations whose request id matches no
    trace are dropped. Traces come out ordered by root start time, then trace id.
    """
    by_trace: dict[str, dict[str, SpanRecord]] = defaultdict(dict)
    annotations: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        if is_annotation(span):
            request_id = annotation_request_id(span)
            if request_id is not None:
                annotations[request_id].append(span)
            continue
        by_trace[span.trace_id][span.span_id] = span  # a re-delivered span counts once
    traces = []
    conversations: dict[str, list[SpanRecord]] = {}
    groups: list[list[SpanRecord]] = []
    for members in by_trace.values():
        group = sorted(members.values(), key=lambda s: (s.start_ns, s.span_id))
        key = conversation_key(group)
        if key is None:
            groups.append(group)
        elif key in conversations:
            conversations[key].extend(group)
        else:
            groups.append(conversations.setdefault(key, list(group)))
    for group in groups:
        group.sort(key=lambda s: (s.start_ns, s.span_id))
        root = find_root(group)
        request_id = _str_or_none(root.attributes.get(semconv.REQUEST_ID)) if root else None
        traces.append((root.start_ns if root else 0, trace_from_records(
            group, annotations.get(request_id, []) if request_id else []
        )))
    traces.sort(key=lambda item: (item[0], item[1].trace_id))
    return [trace for _, trace in traces]


# --- in-process OTel SDK spans -------------------------------------------------------------


def _sdk_value(value: Any) -> AttrValue:
    if isinstance(value, list | tuple):
        return tuple(_sdk_value(v) for v in value)
    if isinstance(value, str | bool | int | float | bytes) or value is None:
        return value
    return str(value)


def _sdk_attributes(attributes: Mapping[str, Any] | None) -> dict[str, AttrValue]:
    return {str(k): _sdk_value(v) for k, v in (attributes or {}).items()}


def record_from_readable_span(span: ReadableSpan) -> SpanRecord:
    """An OTel SDK ``ReadableSpan`` (ended) as a :class:`SpanRecord`."""
    context = span.get_span_context()
    if context is None:
        raise ValueError(f"span {span.name!r} has no span context")
    parent = span.parent
    return SpanRecord(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_span_id=format(parent.span_id, "016x") if parent is not None else "",
        name=span.name,
        start_ns=span.start_time or 0,
        end_ns=span.end_time or 0,
        attributes=_sdk_attributes(span.attributes),
        events=tuple(
            SpanEvent(e.name, e.timestamp, _sdk_attributes(e.attributes)) for e in span.events
        ),
        kind=span.kind.value + 1,  # OTLP numbers kinds from UNSPECIFIED = 0
        status_code=span.status.status_code.value,
    )


def traces_from_readable_spans(spans: Iterable[ReadableSpan]) -> list[AgentTrace]:
    """Agent traces from in-process OTel SDK spans (``InMemorySpanExporter.get_finished_spans()``).

    Spans are grouped by trace id and each trace is converted as the processor would (see
    :func:`traces_from_records`); ``spanguard.annotate`` spans merge into the trace whose root
    has the same ``spanguard.request.id``. Traces are ordered by root start time, then trace id.
    """
    return traces_from_records(record_from_readable_span(span) for span in spans)
