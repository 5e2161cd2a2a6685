"""Observations: one evaluated request, from a fairtrace scenario record or an AgentTrace.

A fairtrace record's trace is validated as strictly as fairtrace 0.1.0 validates it (with its
camelCase and item aliases), but nothing is silently rewritten: an alias that collides with its
canonical key, a tool call that is not an object, or a rank below 1 is an error naming the record
and the field. A record without a trace is kept for the text metrics and excluded (and counted)
by the process metrics.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spanguard.exceptions import InputError, TraceFormatError

from ..traces.formats import to_fairtrace_record
from ..traces.model import (
    AgentTrace,
    ProcessTrace,
    RetrievedDocument,
    ToolCall,
    Unread,
    usage_totals,
)

if TYPE_CHECKING:
    from ..inputs.evaluation import Entry

__all__ = [
    "STATED_KEY",
    "Observation",
    "group_label",
    "observation_from_entry",
    "observation_from_record",
    "observation_from_trace",
    "observations_of",
    "read_observations",
]

_TRACE_ALIASES = {
    "toolCalls": "tool_calls",
    "retrievedDocuments": "retrieved_documents",
    "planSteps": "plan_steps",
    "escalationReason": "escalation_reason",
    "frictionPoints": "friction_points",
}


#: the response-metadata key under which a ``trace_mapper``'s explicit statements travel
#: through spans ("escalated,tool_calls"): a stated ``escalated: false`` or ``tool_calls: []``
#: is a recorded "none", where a missing event says nothing (docs/adapters.md)
STATED_KEY = "spanguard_stated"
_STATABLE = ("escalated", "friction_points", "plan_steps", "tool_calls")


def stated_keys(raw_trace: object) -> tuple[str, ...]:
    """The process keys a fairtrace-shaped trace states (aliases normalised), sorted."""
    if not isinstance(raw_trace, Mapping):
        return ()
    keys = {_TRACE_ALIASES.get(str(k), str(k)) for k in raw_trace}
    return tuple(k for k in _STATABLE if k in keys)


def _stated_metadata(metadata: Mapping[str, Any]) -> tuple[frozenset[str], dict[str, Any]]:
    """What a record from spans states (its ``STATED_KEY`` metadata) and the other metadata."""
    value = metadata.get(STATED_KEY)
    if not isinstance(value, str):
        return frozenset(), dict(metadata)
    rest = {k: v for k, v in metadata.items() if k != STATED_KEY}
    return frozenset(k for k in value.split(",") if k in _STATABLE), rest


_SHARED_LIMIT = 65_536
_shared: dict[object, Any] = {}


def _share(key: object, build: Any, *args: Any) -> Any:
    """One instance per distinct immutable value (assignments, tool calls, documents), so a
    million observations do not hold a million copies of the same few values."""
    value = _shared.get(key)
    if value is None:
        if len(_shared) >= _SHARED_LIMIT:
            _shared.clear()
        value = _shared[key] = build(*args)
    return value


@dataclass(frozen=True, slots=True)
class Observation:
    """One response to one variant (one repeat), as every metric reads it."""

    id: str
    seed_id: str
    variant_id: str
    assignments: Mapping[str, str]
    prompt: str
    response: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    trace: ProcessTrace | None = None
    trace_id: str | None = None  # the OpenTelemetry trace id, when the record came from spans
    span_id: str | None = None  # the trace's root span id, where verdicts are sent (--emit-otlp)
    captured: bool = True  # False when the trace was recorded with content capture off
    # model-call totals (AgentTrace.usage); None when the source does not say (a fairtrace
    # record not written by spanguard)
    usage: Mapping[str, Any] | None = None
    # whether the record holds the app's answer (False: recorded with content capture off, or
    # the text sits under keys spanguard does not read); an empty answer is still an answer
    has_output: bool = True
    # keys the record's trace held that look like a signal but were not read (diagnosis)
    unread: tuple[Unread, ...] = ()
    # the keys a fairtrace record's trace states explicitly (``escalated``, ...); for a record
    # from spans, those a trace_mapper stated (``STATED_KEY``): a missing event says nothing
    stated: frozenset[str] = frozenset()

    @property
    def group(self) -> str:
        return group_label(self.assignments)

    def record(self) -> dict[str, Any]:
        """The fairtrace scenario record handed to evaluator hooks and written to reports."""
        metadata = dict(self.metadata)
        if self.trace is not None:
            metadata["trace"] = _fairtrace_trace(self.trace)
        return {
            "id": self.id,
            "seed_id": self.seed_id,
            "prompt": self.prompt,
            "assignments": dict(self.assignments),
            "response": self.response,
            "response_metadata": metadata,
        }


def group_label(assignments: Mapping[str, str]) -> str:
    """fairtrace's group label: sorted ``k=v`` pairs joined by ", ", or "base"."""
    if not assignments:
        return "base"
    return ", ".join(f"{k}={v}" for k, v in sorted(assignments.items()))


def _fairtrace_trace(trace: ProcessTrace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "tool_calls": [{"name": t.name} for t in trace.tool_calls],
        "retrieved_documents": [
            {"group": d.group, "rank": d.rank} for d in trace.retrieved_documents if d.group
        ],
        "plan_steps": list(trace.plan_steps),
        "escalated": trace.escalated,
        "friction_points": list(trace.friction_points),
    }
    if trace.escalation_reason is not None:
        out["escalation_reason"] = trace.escalation_reason
    return out


def _value_key(value: Any) -> object:
    """A hashable key equal only for values that are the same JSON (``1``, ``1.0``, ``True``
    and ``0.0``, ``-0.0`` apart); raises ``TypeError`` for a value that has none."""
    if isinstance(value, dict):
        return ("{", tuple((k, _value_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("[", tuple(_value_key(v) for v in value))
    if isinstance(value, float):
        return ("f", repr(value))
    hash(value)
    return (type(value).__name__, value)


def _one_of(tag: str, value: Any) -> Any:
    """One instance per distinct value (``_share``), or ``value`` itself when unhashable: an
    observation keeps the few distinct usage totals, metadata and process traces of a run,
    not a copy per record (issue 50: 13.2 KB a record read from a store)."""
    try:
        key = (tag, _value_key(value))
    except TypeError:
        return value
    return _share(key, lambda: value)


def _shared_trace(trace: ProcessTrace) -> ProcessTrace:
    scores = tuple(repr(d.score) for d in trace.retrieved_documents)
    shared: ProcessTrace = _share(("p", trace, scores), lambda: trace)
    return shared


def observation_from_trace(trace: AgentTrace) -> Observation:
    """An observation from an assembled agent trace (its process trace is always present);
    equal values of different records share one instance."""
    record = to_fairtrace_record(trace)
    metadata = dict(record["response_metadata"])
    metadata.pop("trace", None)
    metadata.pop("spanguard", None)
    stated, metadata = _stated_metadata(metadata)
    ident = str(record["id"])
    return Observation(
        id=f"{ident}#{trace.repeat}" if trace.repeat else ident,
        seed_id=sys.intern(str(record["seed_id"])),
        variant_id=ident,
        assignments=_one_of("a", dict(trace.assignments)),
        prompt=_one_of("t", str(record["prompt"])),  # a variant's repeats ask the same
        response=_one_of("t", str(record["response"])),
        metadata=_one_of("m", metadata),
        trace=_shared_trace(trace.trace),
        stated=_one_of("s", stated),
        trace_id=trace.trace_id,
        span_id=trace.root_span_id,
        captured=trace.input is not None or trace.output is not None,
        usage=_one_of("u", trace.usage),
        has_output=trace.output is not None,
        unread=trace.unread,
    )


def _err(message: str, where: str) -> TraceFormatError:
    return TraceFormatError(message, field=where)


def _string(obj: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = obj.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise _err("must be a string.", f"{where}{key}")
    return value


def observation_from_record(data: object, index: int = 0) -> Observation:
    """Validate one fairtrace scenario record ``{id, seed_id, prompt, assignments, response,
    response_metadata}``; errors name the field (the caller adds file and line)."""
    if not isinstance(data, dict):
        raise _err("a scenario record must be a JSON object.", f"[{index}]")
    ident = _string(data, "id", "")
    if not ident.strip():
        raise _err("must not be empty.", "id")
    seed = _string(data, "seed_id", "")
    if not seed.strip():
        raise _err("must not be empty.", "seed_id")
    assignments = data.get("assignments", {})
    if not isinstance(assignments, dict):
        raise _err("must be an object mapping attribute names to strings.", "assignments")
    for key, value in assignments.items():
        if not isinstance(value, str):
            raise _err("must be a string.", f"assignments.{key}")
    meta = data.get("response_metadata", {})
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise _err("must be an object.", "response_metadata")
    raw_trace = meta.get("trace")
    metadata = meta
    if "trace" in meta:
        metadata = dict(meta)
        del metadata["trace"]
    items = tuple(assignments.items())
    block = meta.get("spanguard")
    return Observation(
        id=ident,
        seed_id=sys.intern(seed),
        variant_id=ident,
        assignments=_share(("a", items), dict, items),
        prompt=_string(data, "prompt", "", required=False),
        response=_string(data, "response", ""),
        metadata=metadata,
        trace=None if raw_trace is None else parse_fairtrace_trace(raw_trace),
        stated=_stated(raw_trace, block, meta),
        # a fairtrace record has no spanguard block: the fields' defaults, without five calls
        **(_from_spans(block) if isinstance(block, dict) else {}),
    )


def _from_spans(block: dict[str, Any]) -> dict[str, Any]:
    """The fields a record spanguard wrote from spans keeps in its ``spanguard`` block."""
    return {
        "trace_id": _record_trace_id(block),
        "captured": _record_captured(block),
        "usage": _record_usage(block),
        "has_output": _record_has_output(block),
        "unread": _record_unread(block),
    }


def _stated(raw_trace: object, block: object, metadata: Mapping[str, Any]) -> frozenset[str]:
    """The trace keys a fairtrace record states (an ``escalated: false`` is a recorded "no
    escalation"); for a record spanguard wrote from spans, which writes every key, only what
    a trace_mapper stated (``STATED_KEY``)."""
    if isinstance(block, dict):
        return _stated_metadata(metadata)[0]
    if not isinstance(raw_trace, dict):
        return frozenset()
    keys = tuple(raw_trace)  # records of one source share a few key lists: one set each
    stated = _shared.get(("k", keys))
    if stated is None:
        stated = _share(("k", keys), frozenset, (_TRACE_ALIASES.get(str(k), str(k)) for k in keys))
    return stated


def _record_trace_id(block: object) -> str | None:
    """The OpenTelemetry trace id of a record spanguard wrote from spans."""
    value = block.get("trace_id") if isinstance(block, dict) else None
    return value if isinstance(value, str) and value else None


def _record_captured(block: object) -> bool:
    """False for a record spanguard wrote from a trace without any text (its block keeps
    ``input: null`` and ``output: null``), as :func:`observation_from_trace` says."""
    return not (
        isinstance(block, dict)
        and "input" in block
        and block["input"] is None
        and "output" in block
        and block["output"] is None
    )


def _record_has_output(block: object) -> bool:
    """A record spanguard wrote from a trace without output text keeps ``output: null`` in
    its ``response_metadata.spanguard`` block (its ``response`` is then "")."""
    return not (isinstance(block, dict) and "output" in block and block["output"] is None)


def _record_unread(block: object) -> tuple[Unread, ...]:
    if not isinstance(block, dict) or not isinstance(block.get("unread"), list):
        return ()
    try:
        return tuple(
            Unread.from_dict(item, f"response_metadata.spanguard.unread[{i}]")
            for i, item in enumerate(block["unread"])
        )
    except InputError:
        return ()  # a note for diagnosis only: a malformed one is not worth failing on


def _record_usage(block: object) -> Mapping[str, Any] | None:
    """Model-call totals of a record spanguard wrote (its ``response_metadata.spanguard``
    block); a block without ``usage`` means the request made no model call."""
    if not isinstance(block, dict):
        return None
    usage = block.get("usage")
    return usage if isinstance(usage, dict) else usage_totals(())


def _canonical(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    if raw.keys().isdisjoint(_TRACE_ALIASES):
        return raw
    out: dict[str, Any] = {}
    for key, value in raw.items():
        name = _TRACE_ALIASES.get(str(key), str(key))
        if name in out:
            raise _err(
                f"both '{name}' and its alias are present; keep one.",
                f"response_metadata.trace.{key}",
            )
        out[name] = value
    return out


def _items(trace: Mapping[str, Any], key: str) -> list[Any]:
    value = trace.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise _err("must be a list.", f"response_metadata.trace.{key}")
    return value


def _nonempty_strings(trace: Mapping[str, Any], key: str) -> tuple[str, ...]:
    items = _items(trace, key)
    for i, item in enumerate(items):
        if not isinstance(item, str) or not item:
            raise _err("must be a non-empty string.", f"response_metadata.trace.{key}[{i}]")
    return tuple(items)


def _aliased(item: Mapping[str, Any], key: str, alias: str, where: str) -> Any:
    if alias not in item:
        return item.get(key)
    if key in item:
        raise _err(f"both '{key}' and '{alias}' are present; keep one.", where)
    return item[alias]


def parse_fairtrace_trace(raw: object) -> ProcessTrace:
    """A fairtrace ``response_metadata.trace`` as a :class:`ProcessTrace`."""
    base = "response_metadata.trace"
    if not isinstance(raw, dict):
        raise _err("must be an object.", base)
    trace = _canonical(raw)
    tools = []
    for i, item in enumerate(_items(trace, "tool_calls")):
        where = f"{base}.tool_calls[{i}]"
        if not isinstance(item, dict):
            raise _err('must be an object such as {"name": "search"}.', where)
        name = _aliased(item, "name", "tool", where)
        if not isinstance(name, str) or not name:
            raise _err("must be a non-empty string.", f"{where}.name")
        tools.append(_share(("t", name), ToolCall, name))
    docs = []
    for i, item in enumerate(_items(trace, "retrieved_documents")):
        where = f"{base}.retrieved_documents[{i}]"
        if not isinstance(item, dict):
            raise _err('must be an object such as {"group": "A", "rank": 1}.', where)
        group = _aliased(item, "group", "source_group", where)
        if not isinstance(group, str) or not group:
            raise _err("must be a non-empty string.", f"{where}.group")
        rank = _aliased(item, "rank", "position", where)
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise _err("must be a positive integer (ranks start at 1).", f"{where}.rank")
        ident = item.get("id")
        doc_id = ident if isinstance(ident, str) else None
        docs.append(_share(("d", doc_id, group, rank), RetrievedDocument, doc_id, group, rank))
    escalated = trace.get("escalated", False)
    if escalated is None:
        escalated = False
    if not isinstance(escalated, bool):
        raise _err("must be true or false.", f"{base}.escalated")
    reason = trace.get("escalation_reason")
    if reason is not None and (not isinstance(reason, str) or not reason):
        raise _err("must be a non-empty string or null.", f"{base}.escalation_reason")
    return ProcessTrace(
        tool_calls=tuple(tools),
        retrieved_documents=tuple(docs),
        plan_steps=_nonempty_strings(trace, "plan_steps"),
        escalated=escalated,
        escalation_reason=reason,
        friction_points=_nonempty_strings(trace, "friction_points"),
    )


def observation_from_entry(entry: Entry) -> Observation:
    """An observation from one entry of :func:`~spanguard_processor.inputs.evaluation.
    read_evaluation_inputs`: an agent trace, or a fairtrace record validated here (errors
    located at the entry's file and line, or index within a JSON document)."""
    if entry.trace is not None:
        return observation_from_trace(entry.trace)
    try:
        return observation_from_record(entry.row, entry.line)
    except InputError as exc:
        raise entry.locate(exc) from None


def observations_of(traces: Iterable[AgentTrace]) -> list[Observation]:
    """Observations from agent traces already read (``--source``: an engine's SQL map)."""
    return [observation_from_trace(trace) for trace in traces]


def read_observations(paths: Iterable[Path]) -> list[Observation]:
    """Observations from any evaluation input: agent-trace or record JSONL files, JSON files
    holding a list of records or a fairtrace/spanguard ``report.json`` (its
    ``scenario_results``), span files and span stores — told apart by content."""
    from ..inputs.evaluation import RowFormat, read_evaluation_inputs  # loads protobuf

    return [
        observation_from_entry(entry)
        for entry in read_evaluation_inputs(list(paths), rows=RowFormat.FAIRTRACE)
    ]
