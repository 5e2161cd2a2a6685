"""A request's spans grouped by trace from its bytes, at C speed, when they are laid out the
way every OTLP exporter writes them — or no answer, and the caller reads span by span.

Reading a span's ids, start and parent through upb's Python objects costs more than parsing
it; :func:`group_frames` reads them from the request's bytes instead, with numpy, over every
span at once, and proves that what it read is what the parsed request holds:

* each span's bytes (a *frame*, from a flat parse of the request: every span as bytes, in
  order) must begin with the fields an exporter writes first, in field order: ``trace_id``
  (tag ``0x0A``, 16 bytes), ``span_id`` (``0x12``, 8 bytes), an optional ``parent_span_id``
  (``0x22``, 8 bytes; a ``trace_state`` there, ``0x1A``, is left to the exact reading), an
  optional ``name`` (``0x2A``), an optional ``kind`` (``0x30``, one byte) and
  ``start_time_unix_nano`` (``0x39``, 8 bytes), all inside the frame;
* a *merged* parse of the request (:func:`merged_span`) counts every
  occurrence of fields 1, 2, 4, 5 and 7 in all spans. Each span has at least one occurrence of
  fields 1, 2 and 7 (the one found above): when each total equals the number of spans, and
  field 4's equals the spans found with a parent (field 5's: with a name), no span holds a
  second occurrence — which protobuf would have let override the first — so the values found
  are the parsed ones (a parent of another length, or one after a ``trace_state``, fails the
  count too);
* ids must be valid (not all zero), no span id may repeat in the request, and no two traces
  may share their first 8 bytes (the grouping key); every span must have at most
  ``attribute_limit`` attributes, bounded by the ``0x4A`` bytes (field 9's tag) in its frame;
* no span may be an annotation span (named ``spanguard.annotate``: the exact reading counts
  them per trace), told by its name's length and first 8 bytes.

Anything else — another layout, a second occurrence, a duplicate, a span possibly over the
limit, a possible annotation — returns None, and the caller's exact reading decides: the
answer is the same either way (``tests/ingest/test_receive_columns.py`` checks this on
hostile encodings).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import pairwise
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from .spans import TraceGroup

__all__ = [
    "ANNOTATION_BYTES",
    "COLUMNS_MIN_SPANS",
    "MALFORMED",
    "count_spans",
    "framed_count",
    "group_frames",
    "merged_span",
    "read_columns",
    "span_frames",
]

MALFORMED = "is not a valid OTLP protobuf trace request (malformed wire format)."

#: Below this many spans the per-request cost of the numpy calls (≈ 600k instructions)
#: outweighs what they save: measured with callgrind, receive instructions per span against
#: the exact reading are 2.6× at 16 spans, 1.3× at 64, 1.0× at 128 and 0.8× at 512.
COLUMNS_MIN_SPANS = 192

_GROUP = partial(tuple.__new__, TraceGroup)
_PAD = bytes(64)  # after the last frame: every fixed-offset read stays inside the buffer
_ATTRIBUTE_TAG = 0x4A
_COUNT_WRAPS = 1 << 16  # frames this long may hold more tags than a uint16 counts
#: The name of an annotation span, as on the wire (under 128 bytes).
ANNOTATION_BYTES = semconv.SPAN_ANNOTATION.encode()
_NOTE_HEAD = np.uint64(int.from_bytes(ANNOTATION_BYTES[:8], "little"))
_NOTE_MASK = np.uint64((1 << 8 * min(8, len(ANNOTATION_BYTES))) - 1)


#: The field of ``ScopeSpans``, ``ResourceSpans`` and the request that holds the message below.
_ITEM_NUMBER = {"Scope": 2, "Resource": 2, "Request": 1}


def _request_class(package: str, leaf: str, fields: tuple[tuple[str, int, str], ...]) -> Any:
    """An ``ExportTraceServiceRequest`` class made at run time (no static fields): message
    ``leaf`` with the repeated ``fields`` (name, number, protobuf type), held by each message
    above it (scopes, resources, the request) as one singular ``item``: protobuf merges the
    repeated instances of a singular message field, so everything below lands in one
    message, at C speed and in wire order."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    kind = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name=f"spanguard_{package}_otlp.proto", package=f"spanguard.{package}", syntax="proto3"
    )
    message = proto.message_type.add(name=leaf)
    for name, number, type_ in fields:
        message.field.add(
            name=name, number=number, label=kind.LABEL_REPEATED, type=getattr(kind, type_)
        )
    chain = ("Span", "Scope", "Resource", "Request")
    for below, above in pairwise(chain[chain.index(leaf) :]):
        proto.message_type.add(name=above).field.add(
            name="item",
            number=_ITEM_NUMBER[above],
            label=kind.LABEL_OPTIONAL,
            type=kind.TYPE_MESSAGE,
            type_name=f".spanguard.{package}.{below}",
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"spanguard.{package}.Request")
    )


#: Down to the spans, each kept as bytes: parsing a request as this frames its spans, in
#: order, in one list, without building them.
_FLAT = _request_class("flat", "Scope", (("spans", 2, "TYPE_BYTES"),))


def span_frames(body: bytes) -> Sequence[bytes]:
    """The bytes of each span of a serialized ``ExportTraceServiceRequest``, in order, framed
    by a flat protobuf parse (no span is built; at worst ~17 bytes of memory per body byte,
    for a body of empty spans). Raises :class:`TraceFormatError` on malformed framing."""
    try:
        frames: Sequence[bytes] = _FLAT.FromString(body).item.item.spans
    except DecodeError:
        raise TraceFormatError(MALFORMED) from None
    return frames


#: One span holding every occurrence, in every span, of the ids, parents, names, start times
#: and events (as bytes; the rest is skipped).
_MERGED = _request_class(
    "merged",
    "Span",
    (
        ("trace_ids", 1, "TYPE_BYTES"),
        ("span_ids", 2, "TYPE_BYTES"),
        ("parents", 4, "TYPE_BYTES"),
        ("names", 5, "TYPE_BYTES"),
        ("starts", 7, "TYPE_FIXED64"),
        ("events", 11, "TYPE_BYTES"),
    ),
)


def merged_span(body: bytes) -> Any:
    """The merged span of a request's bytes (``_MERGED``), or None if that parse fails (a
    request well-formed as OTLP need not be as the merged class)."""
    try:
        return _MERGED.FromString(body).item.item.item
    except DecodeError:
        return None


def group_frames(
    frames: Sequence[bytes], merged: Any, attribute_limit: int
) -> tuple[TraceGroup, ...] | None:
    """The trace groups of a request whose spans are ``frames`` (each span's bytes, in
    request order) and whose merged span is ``merged``, exactly as reading every span would
    give them, or None when that cannot be proved from the bytes (see the module docstring).
    """
    spans = list(frames)
    n = len(spans)
    if not n or len(merged.trace_ids) != n or len(merged.span_ids) != n or len(merged.starts) != n:
        return None
    lens = np.fromiter(map(len, spans), np.int64, n)
    end = np.cumsum(lens)
    off = end - lens
    spans.append(_PAD)
    joined = b"".join(spans)
    # byte[i], half[i], word[i]: the 1, 2 and 8 bytes from byte i, little-endian (unaligned,
    # overlapping views); a read past the buffer (a name running past it) raises IndexError
    byte = np.frombuffer(joined, np.uint8)
    half = np.ndarray(shape=(len(joined) - 1,), dtype="<u2", buffer=joined, strides=(1,))
    word = np.ndarray(shape=(len(joined) - 7,), dtype="<u8", buffer=joined, strides=(1,))
    if not ((half[off] == 0x100A) & (half[off + 18] == 0x0812)).all():
        return None
    # a parent of another length, or after a trace_state, is counted by the merged parse but
    # not here; a trace_state where the parent would be is not a name, kind or start either
    parented = half[off + 28] == 0x0822
    if int(np.count_nonzero(parented)) != len(merged.parents):
        return None
    name = off + 28
    name[parented] += 10
    try:
        start = _past_name(byte, word, name, len(merged.names))
        if start is None:
            return None
        kinded = byte[start] == 0x30
        if (kinded & (byte[start + 1] >= 0x80)).any():  # a kind of more than one byte
            return None
        start += 2 * kinded
        if not ((start + 9 <= end) & (byte[start] == 0x39)).all():
            return None
    except IndexError:
        return None
    # proved: each frame holds its ids, parent and start where they were looked for
    high, low, span_id = word[off + 2], word[off + 10], word[off + 20]
    if not ((high | low).all() and span_id.all()) or (parented & (word[off + 30] == 0)).any():
        return None
    ordered = np.sort(span_id)
    if (ordered[1:] == ordered[:-1]).any():
        return None
    if not _within_limit(spans, joined, lens, off, int(end[-1]), attribute_limit):
        return None
    return _groups(high, low, span_id, word[start + 1], parented)


def _past_name(byte: Any, word: Any, name: Any, names: int) -> Any:
    """Where each frame's field after its optional name begins (``name``: where the name
    would be); None if the request has other names (``names``: how many the merged parse
    found), a name of 2 MiB or more, or a span that may be an annotation span (those are
    counted per trace: the exact reading does that)."""
    named = byte[name] == 0x2A
    if int(np.count_nonzero(named)) != names:  # a name elsewhere, which protobuf lets win
        return None
    b1 = byte[name + 1].astype(np.int64)
    if not (named & (b1 >= 0x80)).any():  # every name shorter than 128 bytes: the usual
        size = b1
        past = name + named * (2 + b1)
    else:
        b2, b3 = byte[name + 2].astype(np.int64), byte[name + 3].astype(np.int64)
        one = b1 < 0x80
        two = ~one & (b2 < 0x80)
        three = ~one & ~two & (b3 < 0x80)
        if (named & ~(one | two | three)).any():
            return None
        size = np.where(
            one,
            b1,
            np.where(two, (b1 & 0x7F) | (b2 << 7), (b1 & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)),
        )
        past = name + named * (2 + two + 2 * three + size)
    # an annotation's name is short (one length byte): its length and first bytes tell
    if (
        named & (size == len(ANNOTATION_BYTES)) & (word[name + 2] & _NOTE_MASK == _NOTE_HEAD)
    ).any():
        return None
    return past


def _within_limit(
    spans: list[bytes], joined: bytes, lens: Any, off: Any, total: int, limit: int
) -> bool:
    """True if no frame can hold more than ``limit`` attributes: each attribute begins with
    a ``0x4A`` byte, and takes at least two bytes."""
    long = lens > 2 * limit + 1
    if not long.any():
        return True
    tags = np.frombuffer(joined, np.uint8, total) == _ATTRIBUTE_TAG
    counts = np.add.reduceat(tags.view(np.uint8), off, dtype=np.uint16)
    doubtful = np.flatnonzero(long & ((counts > limit) | (lens >= _COUNT_WRAPS)))
    return all(spans[i].count(_ATTRIBUTE_TAG) <= limit for i in doubtful.tolist())


def _groups(
    high: Any, low: Any, span_id: Any, start: Any, parented: Any
) -> tuple[TraceGroup, ...] | None:
    """Spans grouped by trace id (``high``, ``low``: its two halves), in order of each
    trace's first span, the span ids of each in request order."""
    n = len(high)
    by_first: Any = slice(None)  # each trace's index among the groups, by its first span
    new = np.empty(n, bool)
    new[0] = True
    np.not_equal(high[1:], high[:-1], out=new[1:])
    first_at = np.flatnonzero(new)
    heads = np.sort(high[first_at])
    # each trace's spans side by side (as an app's batch usually has them) are grouped as they
    # are; otherwise they are put together first
    if (heads[1:] == heads[:-1]).any():
        order = np.argsort(high, kind="stable")
        high, low, span_id, start, parented = (
            high[order],
            low[order],
            span_id[order],
            start[order],
            parented[order],
        )
        np.not_equal(high[1:], high[:-1], out=new[1:])
        first_at = np.flatnonzero(new)
        by_first = np.argsort(order[first_at], kind="stable")
    if (low[1:] != low[:-1])[~new[1:]].any():
        return None  # two traces share their first 8 bytes
    bounds = np.append(first_at, n) * 8
    begin = bounds[:-1][by_first].tolist()
    stop = bounds[1:][by_first].tolist()
    starts = np.minimum.reduceat(start, first_at)[by_first].tolist()
    roots = np.logical_or.reduceat(~parented, first_at)[by_first].tolist()
    ids = span_id.tobytes()
    hexes = np.column_stack((high[first_at][by_first], low[first_at][by_first])).tobytes().hex()
    count = len(first_at)
    # comprehensions slice about twice as fast as map(str.__getitem__, map(slice, ...))
    return tuple(
        map(
            _GROUP,
            zip(
                [hexes[at : at + 32] for at in range(0, 32 * count, 32)],
                [ids[a:b] for a, b in zip(begin, stop, strict=True)],
                starts,
                roots,
                [0] * count,
                strict=True,
            ),
        )
    )


def _events_over(spans: Any, attribute_limit: int) -> bool:
    """From a request's merged span (the request already parsed whole, so well-formed):
    whether any event has more than ``attribute_limit`` attributes, read at C speed."""
    events = spans.events
    # every attribute takes at least 2 bytes (tag and length): only events at least this
    # long can be over the limit, and only those are parsed
    longest = 2 * (attribute_limit + 1)
    return (
        bool(events)
        and max(map(len, events)) >= longest
        and any(
            len(Span.Event.FromString(event).attributes) > attribute_limit
            for event in events
            if len(event) >= longest
        )
    )


def read_columns(
    body: bytes, frames: Sequence[bytes] | None, attribute_limit: int
) -> tuple[Any, bool, tuple[TraceGroup, ...] | None]:
    """What the bytes of a parsed request tell at C speed: its merged span (None when the
    merged parse fails: read span by span), whether an event is over ``attribute_limit``, and
    its spans grouped by trace when the request has at least :data:`COLUMNS_MIN_SPANS` spans
    laid out as exporters write them (:func:`group_frames`; ``frames``: its spans' bytes, if
    already framed), else None."""
    merged = merged_span(body)
    if merged is None:
        return None, False, None
    over = _events_over(merged, attribute_limit)
    grouped = None
    if len(merged.span_ids) >= COLUMNS_MIN_SPANS:
        grouped = group_frames(
            span_frames(body) if frames is None else frames, merged, attribute_limit
        )
    return merged, over, grouped


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise TraceFormatError(MALFORMED)
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _submessages(
    buf: bytes, pos: int, end: int, number: int, stop: int, collect: bool = True
) -> tuple[list[tuple[int, int]], int]:
    """Offsets (when ``collect``) of the length-delimited fields ``number`` in ``buf[pos:end]``
    (other fields are skipped by wire type), and how many there were; stops after ``stop``."""
    found: list[tuple[int, int]] = []
    count = 0
    while pos < end:
        tag = buf[pos]
        if tag < 0x80:
            pos += 1
        else:
            tag, pos = _varint(buf, pos)
        wire = tag & 7
        if wire == 2:
            size = buf[pos] if pos < end else 0x80
            if size < 0x80:
                pos += 1
            elif pos + 1 < end and buf[pos + 1] < 0x80:  # most spans: 128 B to 16 KiB
                size = (size & 0x7F) | (buf[pos + 1] << 7)
                pos += 2
            else:
                size, pos = _varint(buf, pos)
            if tag >> 3 == number:
                count += 1
                if count > stop:
                    return found, count
                if collect:
                    found.append((pos, pos + size))
            pos += size
        elif wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:  # groups (3, 4) are not used by OTLP; 6 and 7 do not exist
            raise TraceFormatError(MALFORMED)
    if pos != end:
        raise TraceFormatError(MALFORMED)
    return found, count


#: Bodies up to this size are counted from their frames (:func:`span_frames`); larger ones by
#: the wire scan, which stops early.
_FRAMED_MAX = 1 << 20


def count_spans(body: bytes, stop: int) -> int:
    """The spans of a serialized ``ExportTraceServiceRequest``, counted from the wire format
    (no span is built), so a request can be admitted or refused before it is decoded; see
    :func:`framed_count`."""
    return framed_count(body, stop)[0]


def framed_count(body: bytes, stop: int) -> tuple[int, Sequence[bytes] | None]:
    """:func:`count_spans`, with the spans' bytes when counting framed them (for
    :func:`group_request`, which then need not frame them again).

    Bodies up to 1 MiB are framed by :func:`span_frames`; larger ones are scanned in
    Python and counting stops once it passes ``stop``: a request of millions of empty spans
    costs no more than ``stop`` steps. Raises :class:`TraceFormatError` on malformed framing.
    """
    if len(body) <= _FRAMED_MAX:
        frames = span_frames(body)
        return len(frames), frames
    total = 0
    resources, _ = _submessages(body, 0, len(body), 1, len(body))
    for start, end in resources:
        scopes, _ = _submessages(body, start, end, 2, len(body))
        for scope_start, scope_end in scopes:
            _, spans = _submessages(body, scope_start, scope_end, 2, stop - total, False)
            total += spans
            if total > stop:
                return total, None
    return total, None
