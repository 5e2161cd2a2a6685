"""OTLP log records in (OTLP-JSON ``{"resourceLogs": ...}`` documents and protobuf
``ExportLogsServiceRequest`` s), kept beside the spans they belong to.

The Collector's ``file`` exporter writes log records beside spans when a logs pipeline shares
it; GenAI instrumentations put message content in log-based events
(``gen_ai.client.inference.operation.details``, ...) emitted with the span's context. A record
is a :class:`LogEvent`; :func:`attach_to_document` / :func:`attach_to_request` join events to
their span by (trace_id, span_id) as span events of the same name, attributes and (under
:data:`LOG_BODY`) body, so conversion reads them wherever the span is stored
(:mod:`spanguard_processor.traces.events` says what they mean). Records without a span context
cannot be joined and are left out.

A record without an event name (neither ``event_name`` nor the older ``event.name``
attribute) is named by what it holds (:func:`inferred_name`): GenAI evaluation attributes, the
inference-details message attributes, or a GenAI message body (``role``, or a choice's
``message``); a record that says nothing of what it is stays out, and is reported as such. A
record's ``severity_text`` and ``severity_number`` are kept as event attributes
(:data:`LOG_SEVERITY_TEXT`, :data:`LOG_SEVERITY_NUMBER`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, MutableMapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from .spans import valid_span_id, valid_trace_id

__all__ = [
    "EVENT_NAME_ATTRIBUTE",
    "LOG_BODY",
    "LOG_SEVERITY_NUMBER",
    "LOG_SEVERITY_TEXT",
    "LOG_SPAN",
    "LOG_SPANS_SCOPE",
    "TRACE_LEVEL",
    "TRACE_LEVEL_EVENTS",
    "EventIndex",
    "LogEvent",
    "attach_to_document",
    "attach_to_request",
    "events_from_document",
    "events_from_request",
    "inferred_name",
    "is_logs_document",
    "logs_as_spans",
    "parse_logs_request",
    "unnamed_in_document",
]

#: the span event attribute that carries a joined log record's body (OTLP-JSON ``AnyValue``)
LOG_BODY = "spanguard.log.body"
#: the name of a span that carries log records to the span it names (its parent), for stores
#: that hold spans only: see :func:`logs_as_spans`
LOG_SPAN = "spanguard.log"
EVENT_NAME_ATTRIBUTE = "event.name"  # where the older Events API put the name
#: the span event attributes that keep a record's severity
LOG_SEVERITY_TEXT = "spanguard.log.severity_text"
LOG_SEVERITY_NUMBER = "spanguard.log.severity_number"
_DETAILS_KEYS = frozenset(
    {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
)
_MESSAGE_ROLES = frozenset({"system", "user", "assistant", "tool"})
#: the instrumentation scope of the spans :func:`logs_as_spans` makes
LOG_SPANS_SCOPE = "spanguard.logs"
#: the parent span id of a :data:`LOG_SPAN` carrying a record that names its trace but no span
#: (a ``gen_ai.evaluation.result`` about a whole trace): conversion moves it to the trace's root
TRACE_LEVEL = "ffffffffffffffff"
#: the records kept with their trace when they name no span
TRACE_LEVEL_EVENTS = frozenset({"gen_ai.evaluation.result"})

#: (trace_id, span_id) → the events of that span, in the order read
EventIndex = MutableMapping[tuple[str, str], list["LogEvent"]]


@dataclass(frozen=True)
class LogEvent:
    """One log record that names a span: its event name, time, and OTLP-JSON attributes
    (``[{"key", "value": AnyValue}]``) and body (an ``AnyValue`` object, or None)."""

    trace_id: str
    span_id: str
    name: str
    time_ns: int
    attributes: tuple[Mapping[str, Any], ...]
    body: Mapping[str, Any] | None = None
    severity: tuple[Mapping[str, Any], ...] = ()  # LOG_SEVERITY_* attributes, when set
    #: the record's resource and instrumentation scope (OTLP-JSON objects), which the
    #: :data:`LOG_SPAN` span it becomes keeps
    resource: Mapping[str, Any] | None = field(default=None, compare=False)
    scope: Mapping[str, Any] | None = field(default=None, compare=False)

    def json_event(self) -> dict[str, Any]:
        """The span event it becomes, as an OTLP-JSON span event object."""
        attributes = list(self.attributes)
        if self.body:
            attributes.append({"key": LOG_BODY, "value": dict(self.body)})
        attributes.extend(self.severity)
        return {"name": self.name, "timeUnixNano": str(self.time_ns), "attributes": attributes}


def is_logs_document(doc: object) -> bool:
    """True for an OTLP-JSON logs document (``resourceLogs`` and no ``resourceSpans``)."""
    return isinstance(doc, Mapping) and "resourceLogs" in doc and "resourceSpans" not in doc


def _hex(value: object) -> str:
    return value.lower() if isinstance(value, str) else ""


_MAX_NANOS = 2**64 - 1  # a fixed64 field


def _nanos(value: object) -> int:
    """A timestamp (a number or a decimal string) within OTLP's 64 bits, else 0 (unknown)."""
    if isinstance(value, str) and value.isdigit() and len(value) <= 20:
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_NANOS:
        return value
    return 0


def _name(record: Mapping[str, Any], attributes: Sequence[Mapping[str, Any]]) -> str:
    name = record.get("eventName")
    if isinstance(name, str) and name:
        return name
    for kv in attributes:
        value = kv.get("value")
        if kv.get("key") == EVENT_NAME_ATTRIBUTE and isinstance(value, Mapping):
            return str(value.get("stringValue", ""))
    return ""


def inferred_name(attribute_keys: Collection[str], body: Mapping[str, str]) -> str:
    """The GenAI event a record without an event name is, from its attribute keys and its
    body's fields (key → string value; "" for others), or "" when they do not say."""
    if "gen_ai.evaluation.name" in attribute_keys:
        return "gen_ai.evaluation.result"
    if any(key in _DETAILS_KEYS for key in attribute_keys):
        return "gen_ai.client.inference.operation.details"
    role = body.get("role", "")
    if role in _MESSAGE_ROLES:
        return f"gen_ai.{role}.message"
    if "message" in body and ("finish_reason" in body or "index" in body):
        return "gen_ai.choice"
    return ""


def _keys(attributes: Sequence[Mapping[str, Any]]) -> set[str]:
    return {key for kv in attributes if isinstance(key := kv.get("key"), str)}


def _json_body_fields(body: object) -> dict[str, str]:
    values = body.get("kvlistValue", {}) if isinstance(body, Mapping) else {}
    items = values.get("values", []) if isinstance(values, Mapping) else []
    fields: dict[str, str] = {}
    for kv in items if isinstance(items, list) else ():
        if isinstance(kv, Mapping) and isinstance(kv.get("key"), str):
            value = kv.get("value")
            text = value.get("stringValue") if isinstance(value, Mapping) else None
            fields[kv["key"]] = text if isinstance(text, str) else ""
    return fields


def _severity(record: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    kept: list[Mapping[str, Any]] = []
    text, number = record.get("severityText"), record.get("severityNumber")
    if isinstance(number, str):  # MessageToDict spells the enum by name
        number = SeverityNumber.Value(number) if number in SeverityNumber.keys() else 0  # noqa: SIM118
    if isinstance(text, str) and text:
        kept.append({"key": LOG_SEVERITY_TEXT, "value": {"stringValue": text}})
    if isinstance(number, int) and not isinstance(number, bool) and number:
        kept.append({"key": LOG_SEVERITY_NUMBER, "value": {"intValue": str(number)}})
    return tuple(kept)


def _event(record: object, trace_level: bool = False) -> LogEvent | None:
    if not isinstance(record, Mapping):
        return None
    trace_id, span_id = _hex(record.get("traceId")), _hex(record.get("spanId"))
    if not valid_trace_id(trace_id):
        return None
    raw = record.get("attributes")
    attributes = tuple(kv for kv in raw if isinstance(kv, Mapping)) if isinstance(raw, list) else ()
    name = _name(record, attributes) or inferred_name(
        _keys(attributes), _json_body_fields(record.get("body"))
    )
    if not name:
        return None
    if not valid_span_id(span_id):
        if not (trace_level and name in TRACE_LEVEL_EVENTS):
            return None
        span_id = ""
    body = record.get("body")
    time_ns = _nanos(record.get("timeUnixNano")) or _nanos(record.get("observedTimeUnixNano"))
    return LogEvent(
        trace_id,
        span_id,
        name,
        time_ns,
        attributes,
        body if isinstance(body, Mapping) and body else None,
        _severity(record),
    )


def _items(parent: object, key: str) -> list[Any]:
    """``parent[key]`` when ``parent`` is an object and that is a list, else ``[]``."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, list) else []


def events_from_document(doc: Mapping[str, Any], *, trace_level: bool = False) -> list[LogEvent]:
    """The span-bound events of one OTLP-JSON logs document (malformed parts are skipped);
    with ``trace_level``, also the evaluation results that name their trace but no span
    (``span_id`` "": :func:`logs_as_spans` puts them under :data:`TRACE_LEVEL`)."""
    found = []
    for resource in _items(doc, "resourceLogs"):
        held = _object_of(resource, "resource")
        for scope in _items(resource, "scopeLogs"):
            named = _object_of(scope, "scope")
            for record in _items(scope, "logRecords"):
                event = _event(record, trace_level)
                if event is not None:
                    found.append(replace(event, resource=held, scope=named))
    return found


def _object_of(parent: object, key: str) -> Mapping[str, Any] | None:
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, Mapping) else None


def unnamed_in_document(doc: Mapping[str, Any]) -> int:
    """The records of an OTLP-JSON logs document that name a trace but no event, and say
    nothing of what they are (left out by :func:`events_from_document`)."""
    count = 0
    for resource in _items(doc, "resourceLogs"):
        for scope in _items(resource, "scopeLogs"):
            for record in _items(scope, "logRecords"):
                if isinstance(record, Mapping) and valid_trace_id(_hex(record.get("traceId"))):
                    raw = record.get("attributes")
                    attributes = (
                        [kv for kv in raw if isinstance(kv, Mapping)]
                        if isinstance(raw, list)
                        else []
                    )
                    if not (
                        _name(record, attributes)
                        or inferred_name(_keys(attributes), _json_body_fields(record.get("body")))
                    ):
                        count += 1
    return count


def parse_logs_request(body: bytes) -> ExportLogsServiceRequest | None:
    """``body`` as an ``ExportLogsServiceRequest`` when it is one whose records name spans.

    Both requests put their resources in field 1, so a trace request parses as a logs request
    too; its spans then have no 8-byte ``span_id`` (a span's field 10 is a count), which is how
    the two are told apart: a request none of whose records names a span is not taken.
    """
    request = ExportLogsServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError:
        return None
    for resource in request.resource_logs:
        for scope in resource.scope_logs:
            for record in scope.log_records:
                if len(record.span_id) == 8 and len(record.trace_id) == 16:
                    return request
    return None


def events_from_request(
    request: ExportLogsServiceRequest, *, trace_level: bool = False
) -> list[LogEvent]:
    """The span-bound events of a protobuf logs request (``trace_level``: as above)."""
    from google.protobuf.json_format import MessageToDict

    found = []
    for resource in request.resource_logs:
        held = MessageToDict(resource.resource) if resource.HasField("resource") else None
        for scope in resource.scope_logs:
            named = MessageToDict(scope.scope) if scope.HasField("scope") else None
            for record in scope.log_records:
                as_json = MessageToDict(record)
                as_json["traceId"] = record.trace_id.hex()
                as_json["spanId"] = record.span_id.hex()
                event = _event(as_json, trace_level)
                if event is not None:
                    found.append(replace(event, resource=held, scope=named))
    return found


def attach_to_document(doc: MutableMapping[str, Any], index: EventIndex) -> bool:
    """Add the indexed events of each span of an OTLP-JSON trace document to its ``events``;
    True when any was added (each event is attached once: it leaves the index)."""
    added = False
    for resource in _items(doc, "resourceSpans"):
        scope_key = (
            "scopeSpans"
            if not isinstance(resource, Mapping) or "scopeSpans" in resource
            else "instrumentationLibrarySpans"
        )
        for scope in _items(resource, scope_key):
            for span in _items(scope, "spans"):
                if not isinstance(span, MutableMapping):
                    continue
                events = index.pop((_hex(span.get("traceId")), _hex(span.get("spanId"))), None)
                if events:
                    existing = span.get("events")
                    span["events"] = [
                        *(existing if isinstance(existing, list) else []),
                        *(event.json_event() for event in events),
                    ]
                    added = True
    return added


def attach_to_request(request: ExportTraceServiceRequest, index: EventIndex) -> bool:
    """The same for a protobuf trace request (modified in place)."""
    added = False
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                events = index.pop((span.trace_id.hex(), span.span_id.hex()), None)
                for event in events or []:
                    added = True
                    _add_event(span, event)
    return added


def _add_event(span: Span, event: LogEvent) -> None:
    """Append ``event`` to the protobuf ``span`` as a span event."""
    item = span.events.add(name=event.name, time_unix_nano=event.time_ns)
    for kv in event.json_event()["attributes"]:
        try:
            item.attributes.append(ParseDict(kv, KeyValue()))
        except ParseError:
            continue  # an attribute protobuf cannot hold is left out


def _log_span_id(event: LogEvent) -> bytes:
    """From the record alone (not its place in a request), so a record re-sent in another
    batch is the same span."""
    try:
        content = orjson.dumps(
            [event.attributes, event.body], option=orjson.OPT_SORT_KEYS, default=str
        )
    except TypeError:  # nested past orjson's depth
        content = b"".join(map(_canonical, (*event.attributes, event.body)))
    digest = hashlib.sha256(
        f"{event.trace_id}{event.span_id}{event.time_ns}{event.name}".encode() + content
    ).digest()
    return digest[:8] if any(digest[:8]) else b"\x00" * 7 + b"\x01"


def _canonical(value: object) -> bytes:
    """``value`` as sorted JSON; a value nested past orjson's depth (which protobuf, nesting
    at most 100 deep, could not hold either: :func:`_add_event` leaves it out) is its
    placeholder, so a deep record is converted like any other instead of failing."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except TypeError:
        return b'"<too deep>"'


def _scope_spans(
    request: ExportTraceServiceRequest,
    resource: Mapping[str, Any] | None,
    scope: Mapping[str, Any] | None,
) -> ScopeSpans:
    """A new resource and scope in ``request`` for the spans of records from ``resource`` and
    ``scope`` (kept as they were; a scope without a name is :data:`LOG_SPANS_SCOPE`)."""
    spans = request.resource_spans.add()
    with suppress(ParseError, TypeError, ValueError):
        if resource is not None:
            ParseDict(dict(resource), spans.resource)
    out = spans.scope_spans.add()
    with suppress(ParseError, TypeError, ValueError):
        if scope is not None:
            ParseDict(dict(scope), out.scope)
    if not out.scope.name:
        out.scope.name = LOG_SPANS_SCOPE
    return out


def logs_as_spans(events: Sequence[LogEvent]) -> ExportTraceServiceRequest:
    """Log records as a trace request a span store holds without a schema change: one span
    named :data:`LOG_SPAN` per record, a child of the span the record names, carrying the record
    as its one event (ids derived from the record, so a re-delivered record is stored once).
    Conversion folds the event into the parent span
    (:func:`spanguard_processor.traces.events.with_log_events`), whichever arrived first: the
    one assembly of traces, late spans included, joins them. A record naming its trace only
    (``span_id`` "") gets the parent :data:`TRACE_LEVEL`, which conversion reads as the trace's
    root. This is what an OTLP logs receiver puts through the trace receive pipeline."""
    request = ExportTraceServiceRequest()
    scope = None
    held: tuple[object, object] | None = None
    for event in events:
        if held is None or held[0] is not event.resource or held[1] is not event.scope:
            held = (event.resource, event.scope)
            scope = _scope_spans(request, event.resource, event.scope)
        assert scope is not None
        span = scope.spans.add(
            trace_id=bytes.fromhex(event.trace_id),
            span_id=_log_span_id(event),
            parent_span_id=bytes.fromhex(event.span_id or TRACE_LEVEL),
            name=LOG_SPAN,
            start_time_unix_nano=event.time_ns,
            end_time_unix_nano=event.time_ns,
        )
        _add_event(span, event)
    return request
