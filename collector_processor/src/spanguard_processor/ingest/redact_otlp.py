"""Redaction over every string an OTLP trace request can carry, protobuf or JSON, at any depth.

:func:`redact_request` (a parsed ``ExportTraceServiceRequest``) and :func:`redact_document` (a
parsed OTLP-JSON document) walk the whole message, not a list of known fields: every string
field of every message is redacted, so a field added to OTLP later is redacted too (a test
builds its list of string fields from the protobuf descriptors). What the
:class:`TextRedactor` (``collector/redaction.Redactor``) is asked, as ``(key, text)``:

* an attribute's value — on a resource, scope, span, event or link — under the attribute's
  key: a string; every string element of an array (each under the attribute's key); every
  value of a key-value list under ``<key>.<inner key>`` (at any depth); a bytes value decoded
  as UTF-8 (a bytes value that is not UTF-8 text is dropped: it cannot be checked);
* an attribute's key itself, under :data:`ATTRIBUTE_KEY` (``None`` drops the attribute; a
  new text renames it);
* every other string field under ``otlp.<holder>.<field>``, e.g. ``otlp.span.name``,
  ``otlp.span.trace_state``, ``otlp.status.message``, ``otlp.event.name``,
  ``otlp.link.trace_state``, ``otlp.scope.name``, ``otlp.scope.version``,
  ``otlp.scope_spans.schema_url``, ``otlp.resource_spans.schema_url``,
  ``otlp.entity_ref.type`` (``None`` empties the field, or removes a list element).

Span, trace and parent ids are the only bytes fields left as they are. Dropped attributes are
counted in their holder's ``dropped_attributes_count``. Both functions return whether anything
changed (the request is then serialized again, so the original text is never stored).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import MutableMapping
from typing import Any, Protocol

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = ["ATTRIBUTE_KEY", "ID_FIELDS", "TextRedactor", "redact_document", "redact_request"]


class TextRedactor(Protocol):
    """What the walks ask of a redactor (``collector/redaction.Redactor`` is the one)."""

    @property
    def active(self) -> bool: ...

    def keeps(self, key: str) -> bool: ...

    def text(self, key: str, value: str | None) -> tuple[bool, str | None]: ...


ATTRIBUTE_KEY = "otlp.attribute_key"
ID_FIELDS = frozenset({"trace_id", "span_id", "parent_span_id"})
_JSON_ID_FIELDS = frozenset({"traceId", "spanId", "parentSpanId"})
# OTLP-JSON fields whose strings are numbers or enum names, not text (64-bit integers are
# strings in JSON)
_JSON_NOT_TEXT = _JSON_ID_FIELDS | frozenset(
    {
        "startTimeUnixNano",
        "endTimeUnixNano",
        "timeUnixNano",
        "intValue",
        "doubleValue",
        "boolValue",
        "kind",
        "code",
        "flags",
        "droppedAttributesCount",
        "droppedEventsCount",
        "droppedLinksCount",
    }
)
_HOLDERS = {
    "Span": "span",
    "Event": "event",
    "Link": "link",
    "Status": "status",
    "InstrumentationScope": "scope",
    "Resource": "resource",
    "ScopeSpans": "scope_spans",
    "ResourceSpans": "resource_spans",
    "EntityRef": "entity_ref",
}
_JSON_HOLDERS = {
    "resourceSpans": "resource_spans",
    "scopeSpans": "scope_spans",
    "instrumentationLibrarySpans": "scope_spans",
    "spans": "span",
    "events": "event",
    "links": "link",
    "status": "status",
    "scope": "scope",
    "instrumentationLibrary": "scope",
    "resource": "resource",
    "entityRefs": "entity_ref",
}
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")
_STRING = FieldDescriptor.TYPE_STRING
_BYTES = FieldDescriptor.TYPE_BYTES
_MESSAGE = FieldDescriptor.TYPE_MESSAGE
_KEY_VALUE = KeyValue.DESCRIPTOR


def _holder(descriptor: Any) -> str:
    return _HOLDERS.get(descriptor.name) or _CAMEL.sub("_", descriptor.name).lower()


def _text_of(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


# --- protobuf --------------------------------------------------------------------------------


def redact_request(redactor: TextRedactor, message: Message) -> bool:
    """Redact every string of a parsed protobuf ``message`` (e.g. an
    ``ExportTraceServiceRequest``) in place; True when anything changed."""
    return _message(redactor, message)


def _message(redactor: TextRedactor, message: Message) -> bool:
    changed = False
    holder = _holder(message.DESCRIPTOR)
    for field, value in message.ListFields():
        if field.type == _MESSAGE:
            if field.message_type is _KEY_VALUE:
                changed |= _attributes(redactor, message, value, "")
            elif field.is_repeated:
                for item in value:
                    changed |= _message(redactor, item)
            else:
                changed |= _message(redactor, value)
        elif field.type == _STRING:
            changed |= _strings(redactor, message, field, value, f"otlp.{holder}.{field.name}")
        elif field.type == _BYTES and field.name not in ID_FIELDS:
            changed |= _other_bytes(redactor, message, field, value, holder)
    return changed


def _strings(
    redactor: TextRedactor, message: Message, field: FieldDescriptor, value: Any, key: str
) -> bool:
    if not field.is_repeated:
        _keep, new = redactor.text(key, value)
        if new == value:
            return False
        setattr(message, field.name, new or "")
        return True
    changed = False
    for index in range(len(value) - 1, -1, -1):
        _keep, new = redactor.text(key, value[index])
        if new is None:
            del value[index]
            changed = True
        elif new != value[index]:
            value[index] = new
            changed = True
    return changed


def _other_bytes(
    redactor: TextRedactor, message: Message, field: FieldDescriptor, value: Any, holder: str
) -> bool:
    """A bytes field other than an id (none in OTLP traces today): as text, or cleared."""
    items = list(value) if field.is_repeated else [value]
    kept = []
    for data in items:
        text = _text_of(data)
        new = None if text is None else redactor.text(f"otlp.{holder}.{field.name}", text)[1]
        if new is not None:
            kept.append(new.encode("utf-8"))
    if kept == items:
        return False
    if field.is_repeated:
        del value[:]
        value.extend(kept)
    else:
        setattr(message, field.name, kept[0] if kept else b"")
    return True


def _attributes(redactor: TextRedactor, holder: Message, attributes: Any, prefix: str) -> bool:
    """Redact a repeated ``KeyValue`` field; attributes dropped are counted on ``holder``."""
    changed = False
    for index in range(len(attributes) - 1, -1, -1):
        kv = attributes[index]
        key = prefix + kv.key
        outcome: bool | None = False
        if redactor.keeps(key):
            outcome = _any_value(redactor, kv.value, key)
        if outcome is not False:
            outcome = _renamed(redactor, kv, outcome)
        changed |= outcome is not True
        if outcome is False:
            del attributes[index]
            if "dropped_attributes_count" in holder.DESCRIPTOR.fields_by_name:
                holder.dropped_attributes_count += 1  # type: ignore[attr-defined]
    return changed


def _redacted(redactor: TextRedactor, key: str, text: str) -> tuple[bool | None, str]:
    """One text value's outcome and its text to store: True (kept unchanged), None (kept,
    changed: store the new text) or False (drop it)."""
    keep, new = redactor.text(key, text)
    if not keep or new is None:
        return False, text
    if new == text:
        return True, text
    return None, new


def _any_value(redactor: TextRedactor, value: AnyValue, key: str) -> bool | None:
    """Redact one attribute value in place: True (kept unchanged), None (kept, changed) or
    False (drop it)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        outcome, new = _redacted(redactor, key, value.string_value)
        if outcome is None:
            value.string_value = new
        return outcome
    if kind == "bytes_value":
        text = _text_of(value.bytes_value)
        if text is None:
            return False
        outcome, new = _redacted(redactor, key, text)
        if outcome is None:
            value.bytes_value = new.encode("utf-8")
        return outcome
    if kind == "array_value":
        return _array(redactor, value.array_value.values, key)
    if kind == "kvlist_value":
        return (
            None
            if _attributes(redactor, value.kvlist_value, value.kvlist_value.values, key + ".")
            else True
        )
    return True


def _array(redactor: TextRedactor, values: Any, key: str) -> bool | None:
    changed = False
    for index in range(len(values) - 1, -1, -1):
        outcome = _any_value(redactor, values[index], key)
        if outcome is False:
            del values[index]
            changed = True
        elif outcome is None:
            changed = True
    return None if changed else True


# --- OTLP-JSON -------------------------------------------------------------------------------


def redact_document(redactor: TextRedactor, document: Any) -> bool:
    """Redact every string of a parsed OTLP-JSON document in place; True when anything
    changed. Parts that are not OTLP-shaped are left to the decoder to refuse."""
    return _json_value(redactor, document, "document")


def _json_value(redactor: TextRedactor, value: Any, holder: str) -> bool:
    if isinstance(value, list):
        changed = False
        for item in value:
            changed |= _json_value(redactor, item, holder)
        return changed
    if not isinstance(value, dict):
        return False
    changed = False
    for name in list(value):
        item = value[name]
        if name in _JSON_NOT_TEXT:
            continue
        if name == "attributes" and isinstance(item, list):
            changed |= _json_attributes(redactor, value, item, "")
        elif isinstance(item, str):
            key = f"otlp.{holder}.{_CAMEL.sub('_', name).lower()}"
            _keep, new = redactor.text(key, item)
            if new != item:
                value[name] = new or ""
                changed = True
        elif isinstance(item, dict | list):
            changed |= _json_strings_list(redactor, value, name, item, holder)
    return changed


def _json_strings_list(
    redactor: TextRedactor, parent: MutableMapping[str, Any], name: str, item: Any, holder: str
) -> bool:
    """A nested message (or list of them), or a list of strings (e.g. an entity's keys)."""
    inner = _JSON_HOLDERS.get(name) or _CAMEL.sub("_", name).lower()
    if isinstance(item, list) and any(isinstance(entry, str) for entry in item):
        key = f"otlp.{holder}.{_CAMEL.sub('_', name).lower()}"
        kept = []
        for entry in item:
            new = redactor.text(key, entry)[1] if isinstance(entry, str) else entry
            if new is not None:
                kept.append(new)
        if kept != item:
            parent[name] = kept
            return True
        return False
    return _json_value(redactor, item, inner)


def _json_attributes(
    redactor: TextRedactor, holder: MutableMapping[str, Any], attributes: list[Any], prefix: str
) -> bool:
    kept: list[Any] = []
    changed = False
    for kv in attributes:
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            kept.append(kv)  # malformed: the decoder refuses it
            continue
        key = prefix + kv["key"]
        value = kv.get("value")
        outcome: bool | None = False
        if redactor.keeps(key):
            outcome = _json_any(redactor, value, key) if isinstance(value, dict) else True
        if outcome is not False:
            outcome = _renamed(redactor, kv, outcome)
        changed |= outcome is not True
        if outcome is not False:
            kept.append(kv)
    dropped = len(attributes) - len(kept)
    if dropped:
        attributes[:] = kept
        previous = holder.get("droppedAttributesCount")
        holder["droppedAttributesCount"] = dropped + (
            previous if isinstance(previous, int) and not isinstance(previous, bool) else 0
        )
    return changed


def _renamed(redactor: TextRedactor, kv: Any, outcome: bool | None) -> bool | None:
    """Redact an attribute's key (a protobuf ``KeyValue`` or a JSON object): False drops it."""
    old = kv["key"] if isinstance(kv, dict) else kv.key
    keep, new = redactor.text(ATTRIBUTE_KEY, old)
    if not keep or new is None:
        return False
    if new == old:
        return outcome
    if isinstance(kv, dict):
        kv["key"] = new
    else:
        kv.key = new
    return None


def _json_any(redactor: TextRedactor, value: MutableMapping[str, Any], key: str) -> bool | None:
    if isinstance(value.get("stringValue"), str):
        return _json_text(redactor, value, "stringValue", key, value["stringValue"])
    if isinstance(value.get("bytesValue"), str):
        try:
            text = base64.b64decode(value["bytesValue"], validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return False
        outcome, new = _redacted(redactor, key, text)
        if outcome is None:
            value["bytesValue"] = base64.b64encode(new.encode("utf-8")).decode("ascii")
        return outcome
    array = value.get("arrayValue")
    if isinstance(array, dict) and isinstance(array.get("values"), list):
        return _json_array(redactor, array, key)
    kvlist = value.get("kvlistValue")
    if isinstance(kvlist, dict) and isinstance(kvlist.get("values"), list):
        before = len(kvlist["values"])
        changed = _json_attributes(redactor, kvlist, kvlist["values"], key + ".")
        return None if changed or len(kvlist["values"]) != before else True
    return True


def _json_text(
    redactor: TextRedactor, value: MutableMapping[str, Any], name: str, key: str, text: str
) -> bool | None:
    outcome, new = _redacted(redactor, key, text)
    if outcome is None:
        value[name] = new
    return outcome


def _json_array(redactor: TextRedactor, array: MutableMapping[str, Any], key: str) -> bool | None:
    kept, changed = [], False
    for item in array["values"]:
        outcome = _json_any(redactor, item, key) if isinstance(item, dict) else True
        if outcome is False:
            changed = True
            continue
        changed |= outcome is None
        kept.append(item)
    array["values"] = kept
    return None if changed else True
