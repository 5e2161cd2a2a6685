"""The processor's own span records: what every decoder produces and conversion reads.

Two shapes, both frozen:

* :class:`TraceGroup` — what ingest indexes: the spans of one trace in one batch (their ids,
  the earliest start, whether the trace's root is among them). The batch (one OTLP request,
  file line or document) is stored once, still encoded (:class:`DecodedBatch` ``fmt`` and
  ``body``); attributes are decoded only at conversion, so the receive path stays close to
  protobuf parsing speed. :class:`EncodedSpan` is the same per span, as the file decoders
  (and tests) itemize a batch.
* :class:`SpanRecord` — a fully decoded span (attributes, events), produced from a stored
  batch (:func:`spanguard_processor.ingest.batches.decode_batch`) or from an in-process OTel
  SDK ``ReadableSpan`` (:mod:`spanguard_processor.traces.convert`). Conversion to agent traces is
  written once, over these.

Ids are lowercase hex strings (32 characters for a trace id, 16 for a span id); a root span has
an empty ``parent_span_id``.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import itemgetter
from typing import NamedTuple, TypeAlias

__all__ = [
    "FORMAT_JSON",
    "FORMAT_PROTOBUF",
    "AttrValue",
    "DecodedBatch",
    "EncodedSpan",
    "SpanEvent",
    "SpanRecord",
    "TraceGroup",
    "gc_paused",
    "group_spans",
    "valid_span_id",
    "valid_trace_id",
]

AttrValue: TypeAlias = (
    str | bool | int | float | bytes | tuple["AttrValue", ...] | Mapping[str, "AttrValue"] | None
)

FORMAT_PROTOBUF = "p"
FORMAT_JSON = "j"

_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")
_ZERO_TRACE_ID = "0" * 32
_ZERO_SPAN_ID = "0" * 16


def valid_trace_id(value: str) -> bool:
    """True for 32 lowercase hex digits that are not all zero (the OTel rule)."""
    return _TRACE_ID.fullmatch(value) is not None and value != _ZERO_TRACE_ID


def valid_span_id(value: str) -> bool:
    """True for 16 lowercase hex digits that are not all zero (the OTel rule)."""
    return _SPAN_ID.fullmatch(value) is not None and value != _ZERO_SPAN_ID


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event: its name, time and attributes."""

    name: str
    time_ns: int
    attributes: Mapping[str, AttrValue]


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One decoded span, whatever it was read from."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, AttrValue]
    events: tuple[SpanEvent, ...] = ()
    kind: int = 0
    status_code: int = 0

    @property
    def is_root(self) -> bool:
        """True when the span has no parent at all (not merely none in this trace)."""
        return not self.parent_span_id


class EncodedSpan(NamedTuple):
    """One received span: its ids, and its position among all spans of its batch.

    A named tuple rather than a frozen dataclass: one is built per received span on the hot
    path, and tuples construct several times faster.
    """

    trace_id: str
    span_id: str
    parent_span_id: str
    start_ns: int
    annotation: bool
    position: int

    @property
    def is_root(self) -> bool:
        return not self.parent_span_id


class TraceGroup(NamedTuple):
    """The spans of one trace in one batch: one index row of the store, one step of the
    assembler (so neither works per span)."""

    trace_id: str
    span_ids: bytes  # their 8-byte ids, joined: each once, in batch order
    start_ns: int  # the earliest start among them
    root: bool  # a parentless span is among them
    annotations: int  # how many of them are annotation spans

    @property
    def span_count(self) -> int:
        return len(self.span_ids) // 8


def group_spans(spans: Iterable[EncodedSpan]) -> tuple[TraceGroup, ...]:
    """Itemized spans as trace groups, in order of each trace's first span; a span id seen
    twice in a trace keeps its first span."""
    found: dict[str, tuple[list[bytes], set[bytes], list[int]]] = {}
    for span in spans:
        held = found.get(span.trace_id)
        if held is None:
            held = found[span.trace_id] = ([], set(), [span.start_ns, 0, 0])
        ids, seen, facts = held
        span_id = bytes.fromhex(span.span_id)
        if span_id in seen:
            continue
        ids.append(span_id)
        seen.add(span_id)
        facts[0] = min(facts[0], span.start_ns)
        facts[1] |= not span.parent_span_id
        facts[2] += span.annotation
    return tuple(
        TraceGroup(trace_id, b"".join(ids), start, bool(root), annotations)
        for trace_id, (ids, _, (start, root, annotations)) in found.items()
    )


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """One request, file line or document: its valid spans, how many were rejected (with the
    first reason), and the encoded body they came from (``fmt``: protobuf or OTLP-JSON).

    The spans come itemized (``spans``, from the file decoders) or already grouped by trace
    (``groups``, from the receive path, which never makes an object per span); ``traces``
    is the grouped form either way.
    """

    spans: tuple[EncodedSpan, ...] = ()
    rejected: int = 0
    error: str | None = None
    fmt: str = FORMAT_PROTOBUF
    body: bytes = b""
    groups: tuple[TraceGroup, ...] = ()

    @property
    def traces(self) -> tuple[TraceGroup, ...]:
        """The batch's spans grouped by trace (each span id once per trace)."""
        return self.groups if self.groups or not self.spans else group_spans(self.spans)

    #: How many valid spans the batch holds (before any de-duplication): counted once, as
    #: the receive path, admission and the writer each ask.
    count: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "count",
            len(self.spans) if self.spans else sum(map(len, map(itemgetter(1), self.groups))) >> 3,
        )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while decoding JSON.

    Parsing OTLP-JSON allocates many small containers and no cycles; the collector's
    generation-0 passes then dominate (measured on a 2-core machine: ``json.loads`` 43k spans/s,
    96k with the GC paused). Reference counting still frees everything; the GC resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
