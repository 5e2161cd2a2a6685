"""Which span is the request, and what it says about itself: identity, question and answer.

Part of the one conversion (:mod:`~spanguard_processor.traces.convert`): the root
(:func:`find_root`, agent spans first), the spans that are tool calls (:func:`tool_name`), the
counterfactual identity (:func:`request_identity`: spanguard's attributes and baggage,
OpenInference ``metadata``, Langfuse metadata, traceloop association properties), the request's
question and answer (the key lists :data:`ROOT_INPUT` / :data:`ROOT_OUTPUT`), its cost and the
conventions it was recorded with (:func:`sources`). Pure: span records in, values out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spanguard import semconv

from ..common._json import parse_json
from ..ingest.spans import AttrValue, SpanRecord
from ._documents import finite_number
from ._llm import is_llm_span, text_of

__all__ = [
    "ROOT_INPUT",
    "ROOT_OUTPUT",
    "SESSION_KEYS",
    "USER_KEYS",
    "content",
    "conversation_key",
    "cost",
    "find_root",
    "is_agent_span",
    "mcp_method",
    "metadata_identity",
    "plain",
    "prefixed",
    "repeat_of",
    "request_identity",
    "sender",
    "sources",
    "str_or_none",
    "tool_name",
]

_AGENT_KINDS = (semconv.TRACELOOP_KIND_WORKFLOW, semconv.TRACELOOP_KIND_AGENT)


# --- attribute values ----------------------------------------------------------------------


def str_or_none(value: AttrValue) -> str | None:
    """A scalar attribute as text; None for missing, bytes, lists and maps."""
    if value is None or isinstance(value, bytes | tuple | Mapping):
        return None
    return str(value)


def plain(value: AttrValue) -> Any:
    """An attribute value as plain JSON data (lists, dicts, bytes as hex)."""
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def prefixed(attrs: Mapping[str, AttrValue], prefix: str) -> dict[str, AttrValue]:
    """The attributes under ``prefix``, keyed by the rest of their name."""
    return {k[len(prefix) :]: v for k, v in attrs.items() if k.startswith(prefix) and k != prefix}


def repeat_of(value: AttrValue) -> int:
    """A repeat number: a non-negative integer (or its digits); anything else is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int) and value >= 0:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def _text(attrs: Mapping[str, AttrValue], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, tuple | Mapping):
            return json.dumps(plain(value), ensure_ascii=False, sort_keys=True)
    return None


# --- span roles: the request, tool calls ---------------------------------------------------


def is_agent_span(span: SpanRecord) -> bool:
    """An agent (or workflow) span under any convention: preferred as the request's root."""
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
    return min(candidates, key=lambda s: (not is_agent_span(s), s.start_ns, s.span_id))


def tool_name(span: SpanRecord) -> str | None:
    """The tool a span calls under any convention, or None when it is not a tool span.

    An MCP ``tools/call`` span (the mcp SDK's client span ``MCP send tools/call X``, which
    carries only ``mcp.method.name``, and its server span ``tools/call X``) is a tool call
    named by ``gen_ai.tool.name``, else ``mcp.tool.name``, else the span name's target."""
    attrs = span.attributes
    mcp = attrs.get(semconv.MCP_METHOD_NAME) == semconv.MCP_TOOLS_CALL
    is_tool = (
        mcp
        or attrs.get(semconv.GEN_AI_OPERATION_NAME) == semconv.OP_EXECUTE_TOOL
        or attrs.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.OI_KIND_TOOL
        or attrs.get(semconv.TRACELOOP_SPAN_KIND) == semconv.TRACELOOP_KIND_TOOL
    )
    if not is_tool:
        return None
    for key in (
        semconv.GEN_AI_TOOL_NAME,
        semconv.TOOL_NAME,
        semconv.MCP_TOOL_NAME,
        semconv.TRACELOOP_ENTITY_NAME,
    ):
        value = attrs.get(key)
        if isinstance(value, str) and value.strip():
            return value
    name = span.name
    if mcp:
        name = name.removeprefix(semconv.MCP_CLIENT_SPAN_PREFIX).removeprefix(
            semconv.MCP_TOOLS_CALL
        )
    name = name.removeprefix(semconv.OP_EXECUTE_TOOL).strip()
    return name or span.name or "tool"


def mcp_method(span: SpanRecord) -> str | None:
    """The MCP method of a span of the mcp SDK (``tools/call``, ``tools/list``, …), else None."""
    value = span.attributes.get(semconv.MCP_METHOD_NAME)
    return value if isinstance(value, str) and value else None


def conversation_key(spans: Sequence[SpanRecord]) -> str | None:
    """What groups the parentless model calls of one turn when no parent span exists:
    ``gen_ai.conversation.id``, ``session.id`` (OpenInference's and Langfuse's; also
    ``langfuse.session.id``), ``mcp.session.id`` (an MCP client's calls) or traceloop's
    association properties, on any span of a trace whose root is a model call or a tool call.
    None otherwise (a trace with an agent, chain, workflow or spanguard root is one request by
    itself)."""
    root = find_root(spans)
    if (
        root is None
        or root.parent_span_id
        or not (is_llm_span(root) or tool_name(root) is not None)
    ):
        return None
    if any(is_agent_span(s) or semconv.REQUEST_ID in s.attributes for s in spans):
        return None
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        attrs = span.attributes
        for key in (
            semconv.GEN_AI_CONVERSATION_ID,
            semconv.SESSION_ID,
            semconv.LANGFUSE_SESSION_ID,
            semconv.MCP_SESSION_ID,
        ):
            value = attrs.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return f"{key}={value}"
        props = prefixed(attrs, semconv.TRACELOOP_ASSOCIATION_PREFIX)
        if props:
            return "traceloop.association.properties=" + json.dumps(
                {k: plain(v) for k, v in sorted(props.items())}, sort_keys=True
            )
    return None


#: who sent a request, the person first: OTel's ``user.id`` (``enduser.id`` its older name),
#: Langfuse's ``langfuse.user.id``; then the conversation: ``session.id`` (OpenInference's and
#: Langfuse's), ``langfuse.session.id``, ``gen_ai.conversation.id``
USER_KEYS = (semconv.USER_ID, semconv.ENDUSER_ID, semconv.LANGFUSE_USER_ID)
SESSION_KEYS = (semconv.SESSION_ID, semconv.LANGFUSE_SESSION_ID, semconv.GEN_AI_CONVERSATION_ID)


def sender(root: SpanRecord, spans: Sequence[SpanRecord]) -> tuple[str | None, str | None]:
    """The request's ``(user_id, session_id)``, each from the root first, then the other spans
    earliest first (Langfuse and OpenInference propagate them to every span); None when no
    span records one."""
    ordered = [
        root,
        *sorted((s for s in spans if s is not root), key=lambda s: (s.start_ns, s.span_id)),
    ]

    def first(keys: tuple[str, ...]) -> str | None:
        for span in ordered:
            for key in keys:
                value = span.attributes.get(key)
                if (
                    isinstance(value, str | int)
                    and not isinstance(value, bool)
                    and str(value).strip()
                ):
                    return str(value)
        return None

    return first(USER_KEYS), first(SESSION_KEYS)


# --- identity, cost, conventions -----------------------------------------------------------


def metadata_identity(value: AttrValue) -> dict[str, Any]:
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


def _spanguard_identity(attrs: Mapping[str, AttrValue]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for field, key in (("seed_id", semconv.SEED_ID), ("variant_id", semconv.VARIANT_ID)):
        value = str_or_none(attrs.get(key))
        if value:
            found[field] = value
    assignments = {
        k: str(plain(v))
        for k, v in prefixed(attrs, semconv.ASSIGNMENT_PREFIX).items()
        if v is not None
    }
    if assignments:
        found["assignments"] = assignments
    if semconv.REPEAT in attrs:
        found["repeat"] = repeat_of(attrs[semconv.REPEAT])
    return found


def _decoded(value: AttrValue) -> Any:
    """A Langfuse metadata value (JSON-encoded by its SDK), or the raw value."""
    if isinstance(value, str):
        try:
            return parse_json(value)
        except ValueError:
            return value
    return plain(value)


def _mapping_identity(values: Mapping[str, Any]) -> dict[str, Any]:
    """Identity from flat key/values (Langfuse metadata, traceloop association properties):
    ``seed_id``, ``variant_id``, ``repeat``, ``assignments`` (an object or its JSON) and
    ``assignment.<attr>`` keys."""
    found: dict[str, Any] = {}
    for key in ("seed_id", "variant_id"):
        value = values.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            found[key] = str(value)
    assignments = values.get("assignments")
    if isinstance(assignments, str):
        assignments = _decoded(assignments)
    pairs = dict(assignments) if isinstance(assignments, dict) else {}
    pairs.update(
        {
            k[len("assignment.") :]: v
            for k, v in values.items()
            if k.startswith("assignment.") and len(k) > len("assignment.")
        }
    )
    if pairs and all(isinstance(v, str) for v in pairs.values()):
        found["assignments"] = dict(sorted(pairs.items()))
    if "repeat" in values:
        found["repeat"] = repeat_of(values["repeat"])
    return found


def _flat(spans: Sequence[SpanRecord], prefix: str) -> dict[str, Any]:
    """Keys under ``prefix`` over the spans, earliest span first (the first value wins)."""
    found: dict[str, Any] = {}
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        for key, value in prefixed(span.attributes, prefix).items():
            found.setdefault(key, _decoded(value))
    return found


def request_identity(root: SpanRecord, spans: Sequence[SpanRecord]) -> dict[str, Any]:
    """The request's counterfactual identity (``seed_id``, ``variant_id``, ``assignments``,
    ``repeat``; each optional), each field from the first source that has it:

    1. ``spanguard.*`` on the root (``spanguard.request``, or ``spanguard.*`` baggage that
       ``configure()`` copies onto spans);
    2. ``spanguard.*`` on the trace's other spans, earliest first (baggage copied onto spans
       by another service, or by the OTel baggage span processor);
    3. OpenInference ``metadata`` JSON on the root;
    4. Langfuse trace metadata (``langfuse.trace.metadata.*``, on any span), then the root's
       observation metadata (``langfuse.observation.metadata.*``);
    5. traceloop association properties (``traceloop.association.properties.*``, any span).

    ``assignments`` come whole from one source. See docs/attributes.md, "Identity".
    """
    others = [s for s in sorted(spans, key=lambda s: (s.start_ns, s.span_id)) if s is not root]
    langfuse = _flat(spans, semconv.LANGFUSE_TRACE_METADATA + ".")
    for key, value in _flat([root], semconv.LANGFUSE_OBSERVATION_METADATA + ".").items():
        langfuse.setdefault(key, value)
    found: dict[str, Any] = {}
    for source in (
        _spanguard_identity(root.attributes),
        *(_spanguard_identity(s.attributes) for s in others),
        metadata_identity(root.attributes.get(semconv.OI_METADATA)),
        _mapping_identity(langfuse),
        _mapping_identity(_flat(spans, semconv.TRACELOOP_ASSOCIATION_PREFIX)),
    ):
        for key, value in source.items():
            found.setdefault(key, value)
    return found


def cost(root: SpanRecord, spans: Sequence[SpanRecord]) -> float | None:
    """The request's cost: the root's own, else the sum over its spans (None when no span
    says)."""
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


def sources(spans: Iterable[SpanRecord]) -> tuple[str, ...]:
    """The conventions the spans were recorded with (``gen_ai``, ``openinference``, …)."""
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
            elif key.startswith("langfuse."):
                found.add("langfuse")
            elif key.startswith(semconv.NAMESPACE + "."):
                found.add("spanguard")
        if any(e.name.startswith(semconv.NAMESPACE + ".") for e in span.events):
            found.add("spanguard")
    return tuple(sorted(found))


# --- the request's question and answer -----------------------------------------------------


ROOT_INPUT = (
    (semconv.INPUT_VALUE, semconv.INPUT_MIME_TYPE),
    (semconv.TRACELOOP_ENTITY_INPUT, None),
    (semconv.GEN_AI_INPUT_MESSAGES, None),
)
ROOT_OUTPUT = (
    (semconv.OUTPUT_VALUE, semconv.OUTPUT_MIME_TYPE),
    (semconv.TRACELOOP_ENTITY_OUTPUT, None),
    (semconv.GEN_AI_OUTPUT_MESSAGES, None),
)


def content(
    root: SpanRecord,
    keys: tuple[tuple[str, str | None], ...],
    from_llm: tuple[str, str] | None,
    *,
    input_side: bool,
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
            found = text_of(
                attrs[key], attrs.get(mime_key) if mime_key else None, key, input_side=input_side
            )
            if found is None:
                continue
            text, source, is_raw = found
            if not is_raw:
                return text, source
            raw = raw or (text, source)
    if from_llm is not None:
        return from_llm
    return raw if raw is not None else (None, None)
