"""What a codec applies to a request before decoding it, as data: the limits, the per-trace
span budget and the redactor (:class:`Shaping`).

* attributes beyond ``attribute_limit`` are dropped (and counted in
  ``dropped_attributes_count``, as the OTel SDK does);
* spans beyond ``max_spans_per_trace`` are rejected and reported through OTLP partial success
  (:class:`TraceBudget`);
* the redactor runs over every string of the request (:mod:`.redact_otlp`), so redacted text is
  never stored.

The per-trace span count is kept for at least the ``trace_memory`` most recently seen traces
and counts every span received, so a re-sent span counts again: the limit errs on the strict
side. The counts live in two fixed-size tables allocated at start (:class:`TraceCounts`), so a
burst of new traces does not grow the Python heap, and an idle server has nothing to give back:
a client that pauses keeps the budget it used. The codecs (:mod:`.codec_protobuf`,
:mod:`.codec_json`) apply it each to its own media type.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from .redact_otlp import TextRedactor

__all__ = ["Shape", "Shaping", "TraceBudget", "TraceCounts"]


@dataclass
class Shape:
    """What shaping did to one request: spans rejected, the first reason, whether it changed."""

    rejected: int = 0
    error: str | None = None
    changed: bool = False


class TraceCounts:
    """Span counts of at least the ``memory`` traces seen most recently (at most twice as many),
    by trace id, in two generations of fixed-size open-addressing tables allocated (and
    touched) at start: 2 × 16 bytes × 2 × ``memory`` slots (6.4 MB for 100,000 traces), so
    each is at most half full. A slot holds the trace id's hash and ``epoch << 32 | count``;
    a slot whose epoch is not its table's is free, so a generation is emptied by a new epoch,
    without writing a byte. Two trace ids of the same 64-bit hash share a count (the strict side).
    Not thread-safe (:class:`TraceBudget` locks)."""

    __slots__ = ("_epoch", "_fill", "_new", "_old", "_size", "_slots")

    def __init__(self, memory: int) -> None:
        slots = self._slots = 2 * max(1, memory)
        self._fill = max(1, memory)  # traces per generation
        zero = array("q", [0])
        self._new = (zero * slots, zero * slots, 1)  # written: in the RSS from the start
        self._old = (zero * slots, zero * slots, 2)
        self._epoch = 2
        self._size = 0  # traces in the new generation

    def add(self, trace_id: str, count: int) -> int:
        """Add ``count`` spans to ``trace_id``'s count; returns the count before."""
        key = hash(trace_id)
        slots = self._slots
        keys, values, epoch = self._new
        slot = key % slots
        while True:  # (inline: this runs for every trace of every request)
            value = values[slot]
            if value >> 32 != epoch:
                return self._insert(key, slot, count)
            if keys[slot] == key:
                before = value & 0xFFFFFFFF
                values[slot] = epoch << 32 | min(before + count, 0xFFFFFFFF)
                return before
            slot += 1
            if slot == slots:
                slot = 0

    def _insert(self, key: int, slot: int, count: int) -> int:
        """A trace not in the new generation, whose free slot there is ``slot``: its count
        from the old generation (0 if not there either) plus ``count``, in the new one."""
        slots = self._slots
        keys, values, epoch = self._old
        at = key % slots
        before = 0
        while True:
            value = values[at]
            if value >> 32 != epoch:
                break
            if keys[at] == key:
                before = value & 0xFFFFFFFF
                break
            at += 1
            if at == slots:
                at = 0
        if self._size >= self._fill:  # the new generation is full: it becomes the old
            self._epoch += 1
            self._old, self._new = self._new, (keys, values, self._epoch)
            self._size = 0
            slot = key % slots  # the emptied table: the first slot is free
        self._size += 1
        keys, values, epoch = self._new
        keys[slot] = key
        values[slot] = epoch << 32 | min(before + count, 0xFFFFFFFF)
        return before


class TraceBudget:
    """How many spans of each recent trace were let through, shared by every receiver of one
    process (thread-safe)."""

    def __init__(self, max_spans_per_trace: int, trace_memory: int) -> None:
        self.limit = max_spans_per_trace
        self.memory = trace_memory
        self._counts = TraceCounts(trace_memory)
        self._lock = threading.Lock()

    def admit(self, counts: Iterable[tuple[str, int]], shape: Shape) -> dict[str, int]:
        """Count this request's spans per trace (each trace once in ``counts``); returns how
        many spans may pass of each trace the limit cuts (the others pass whole)."""
        limit = self.limit
        limited: dict[str, int] = {}
        with self._lock:
            add = self._counts.add
            for trace_id, count in counts:
                before = add(trace_id, count)
                if before + count > limit:
                    allowed = limited[trace_id] = max(0, limit - before)
                    shape.rejected += count - allowed
                    shape.error = shape.error or (
                        f"trace {trace_id} has more than {limit} spans; later spans of it are "
                        "rejected."
                    )
        return limited


@dataclass(frozen=True, slots=True, eq=False)
class Shaping:
    """The limits a codec applies while decoding, as data: the attribute limit, the process's
    per-trace budget, and the redactor (inactive: nothing is redacted)."""

    attribute_limit: int
    budget: TraceBudget
    redactor: TextRedactor
