"""Trace assembly: group spans by trace id and decide when each trace is whole.

A pure class (no I/O, no threads, an injected clock), named after the OpenTelemetry Collector's
``groupbytrace`` processor:

* ``wait_duration`` — a trace is released once its root span has arrived and no span of it has
  arrived for this long;
* ``num_traces`` — at most this many traces are held in flight; adding one more releases the
  least recently active trace early (``reason="evicted"``);
* a trace whose root never comes is released after ``orphan_timeout`` of silence, or at
  :meth:`TraceAssembler.flush`; either way it is marked ``partial``;
* a span of a trace released earlier (remembered for at least the last ``remember_released``
  traces released, at most twice as many) opens a
  *late* group that is released like any other, as if its root had come (so not ``partial``,
  and due ``wait_duration`` after its last span): the store merges it into the trace already
  stored.

The assembler holds no span: per trace in flight only its times and whether its root came.
Spans come a trace at a time (:meth:`TraceAssembler.add_groups`: one step per trace in a
batch) or one by one (:meth:`TraceAssembler.add`). A span delivered twice is the store's to
find (:meth:`~spanguard_processor.store.span_store.SpanStore.put_batches` stores it once).
"""

from __future__ import annotations

import enum
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, NamedTuple, Protocol

from ..ingest.spans import TraceGroup

__all__ = ["ReleaseReason", "ReleasedTrace", "SpanKey", "TraceAssembler"]


class SpanKey(Protocol):
    """What the assembler needs of a span (``EncodedSpan`` and ``SpanRecord`` both fit)."""

    @property
    def trace_id(self) -> str: ...

    @property
    def span_id(self) -> str: ...

    @property
    def is_root(self) -> bool: ...


class ReleaseReason(enum.StrEnum):
    """Why the assembler let a trace go."""

    COMPLETE = "complete"  # its root came, then ``wait_duration`` of silence
    EVICTED = "evicted"  # more than ``num_traces`` in flight: the least recently active
    ORPHANED = "orphaned"  # no root after ``orphan_timeout`` of silence
    FLUSHED = "flushed"  # everything in flight, at shutdown


class ReleasedTrace(NamedTuple):  # one per trace: a tuple is the cheapest record to make
    """A trace the assembler let go: how many spans it received, why, and whether it is whole."""

    trace_id: str
    spans: int
    partial: bool
    reason: ReleaseReason


#: What the assembler holds per trace in flight, in a list (made and updated several times
#: faster than an object, once per trace in every batch): when its last span arrived, whether
#: its root came (or it is a late group of a trace released before), how many spans it has.
_LAST, _ROOT, _SPANS = range(3)
_RELEASED = partial(tuple.__new__, ReleasedTrace)


class TraceAssembler:
    """Groups spans into traces and releases each when it is whole (see the module docstring)."""

    def __init__(
        self,
        wait_duration: float = 2.0,
        num_traces: int = 10_000,
        *,
        clock: Callable[[], float] = time.monotonic,
        orphan_timeout: float = 60.0,
        remember_released: int | None = None,
    ) -> None:
        if wait_duration < 0:
            raise ValueError("wait_duration must not be negative")
        if num_traces < 1:
            raise ValueError("num_traces must be at least 1")
        self.wait_duration = wait_duration
        self.num_traces = num_traces
        self.orphan_timeout = max(orphan_timeout, wait_duration)
        self._clock = clock
        self._groups: OrderedDict[str, list[Any]] = OrderedDict()  # least recently active first
        # the traces released lately (two generations: a set dropped whole costs nothing per
        # trace, unlike trimming an ordered set one by one)
        self._recent: set[str] = set()
        self._older: set[str] = set()
        self._remember = max(
            1, remember_released if remember_released is not None else 10 * num_traces
        )
        self.spans_added = 0

    @property
    def in_flight(self) -> int:
        """How many traces are held, waiting to be released."""
        return len(self._groups)

    def add(self, spans: Iterable[SpanKey]) -> list[ReleasedTrace]:
        """Take spans in one by one; returns the traces evicted to stay within ``num_traces``."""
        groups: dict[str, list[int]] = {}
        for span in spans:
            held = groups.setdefault(span.trace_id, [0, 0])
            held[0] += 1
            held[1] |= span.is_root
        return self._add(
            (trace_id, count, bool(root)) for trace_id, (count, root) in groups.items()
        )

    def add_groups(self, groups: Iterable[TraceGroup]) -> list[ReleasedTrace]:
        """Take spans in a trace at a time; returns the traces evicted to stay within
        ``num_traces``."""
        return self._add(
            (trace_id, len(span_ids) >> 3, root) for trace_id, span_ids, _, root, _ in groups
        )

    def _add(self, traces: Iterable[tuple[str, int, bool]]) -> list[ReleasedTrace]:
        now = self._clock()
        evicted: list[ReleasedTrace] = []
        held = self._groups
        get, move_to_end = held.get, held.move_to_end
        added = 0
        num_traces = self.num_traces
        for trace_id, count, root in traces:
            added += count
            group = get(trace_id)
            if group is None:
                if len(held) >= num_traces:  # the least recently active goes
                    evicted.append(self._let_go(*held.popitem(last=False), ReleaseReason.EVICTED))
                late = trace_id in self._recent or trace_id in self._older
                held[trace_id] = [now, late or root, count]
                continue
            move_to_end(trace_id)
            group[_LAST] = now  # keeps _groups ordered by last activity
            group[_SPANS] += count
            if root:
                group[_ROOT] = True
        self.spans_added += added
        return evicted

    def poll(self) -> list[ReleasedTrace]:
        """The traces due now: root seen and quiet for ``wait_duration``, or orphaned."""
        now = self._clock()
        due: list[str] = []
        orphaned: list[str] = []
        for trace_id, group in self._groups.items():
            idle = now - group[_LAST]
            if idle < self.wait_duration:
                break  # groups are ordered by last activity: the rest are younger
            if group[_ROOT]:
                due.append(trace_id)
            elif idle >= self.orphan_timeout:
                orphaned.append(trace_id)
        return [self._release(t, ReleaseReason.COMPLETE) for t in due] + [
            self._release(t, ReleaseReason.ORPHANED) for t in orphaned
        ]

    def next_due(self) -> float | None:
        """Seconds until the next trace could be released, or None when nothing is in flight:
        ``wait_duration`` after its last span for a trace whose root came, ``orphan_timeout``
        after it for one still without (never "now" for a trace that :meth:`poll` keeps)."""
        wait, orphan = self.wait_duration, self.orphan_timeout
        best: float | None = None
        for group in self._groups.values():  # by last activity: stops at the first rooted
            last = group[_LAST]
            if best is not None and last + wait >= best:
                break  # every later trace is due at its last span + wait_duration or after
            due = last + (wait if group[_ROOT] else orphan)
            if best is None or due < best:
                best = due
        return None if best is None else max(0.0, best - self._clock())

    def forget_released(self) -> None:
        """Forget which traces were released (an idle writer gives the memory back; a later
        span of one then opens an ordinary group, which the store merges all the same)."""
        self._recent, self._older = set(), set()

    def flush(self) -> list[ReleasedTrace]:
        """Release every trace in flight now (at shutdown); those without a root are partial."""
        return [self._release(trace_id, ReleaseReason.FLUSHED) for trace_id in list(self._groups)]

    def _release(self, trace_id: str, reason: ReleaseReason) -> ReleasedTrace:
        return self._let_go(trace_id, self._groups.pop(trace_id), reason)

    def _let_go(self, trace_id: str, group: list[Any], reason: ReleaseReason) -> ReleasedTrace:
        """The record of a trace taken out of flight, remembered as released (a later span
        of it opens a late group)."""
        _, root, spans = group
        recent = self._recent
        recent.add(trace_id)
        if len(recent) >= self._remember:
            self._older, self._recent = recent, set()
        return _RELEASED((trace_id, spans, not root, reason))
