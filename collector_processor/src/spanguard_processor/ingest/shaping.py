"""What a codec applies to a request before decoding it, as data: the limits, the per-trace
span budget and the redactor (:class:`Shaping`).

* attributes beyond ``attribute_limit`` are dropped (and counted in
  ``dropped_attributes_count``, as the OTel SDK does);
* spans beyond ``max_spans_per_trace`` are rejected and reported through OTLP partial success
  (:class:`TraceBudget`);
* the redactor runs over every string of the request (:mod:`.redact_otlp`), so redacted text is
  never stored.

The per-trace span count is kept for the ``trace_memory`` most recently seen traces and counts
every span received, so a re-sent span counts again: the limit errs on the strict side. The
codecs (:mod:`.codec_protobuf`, :mod:`.codec_json`) apply it each to its own media type.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from .redact_otlp import TextRedactor

__all__ = ["Shape", "Shaping", "TraceBudget"]


@dataclass
class Shape:
    """What shaping did to one request: spans rejected, the first reason, whether it changed."""

    rejected: int = 0
    error: str | None = None
    changed: bool = False


class TraceBudget:
    """How many spans of each recent trace were let through, shared by every receiver of one
    process (thread-safe)."""

    def __init__(self, max_spans_per_trace: int, trace_memory: int) -> None:
        self.limit = max_spans_per_trace
        self.memory = trace_memory
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def admit(self, counts: Iterable[tuple[str, int]], shape: Shape) -> dict[str, int]:
        """Count this request's spans per trace (each trace once in ``counts``); returns how
        many spans may pass of each trace the limit cuts (the others pass whole)."""
        limit = self.limit
        memory = self.memory
        limited: dict[str, int] = {}
        with self._lock:
            counted = self._counts
            pop = counted.pop
            for trace_id, count in counts:
                before = pop(trace_id, 0)
                total = counted[trace_id] = before + count  # now the most recently seen
                if total > limit:
                    allowed = limited[trace_id] = max(0, limit - before)
                    shape.rejected += count - allowed
                    shape.error = shape.error or (
                        f"trace {trace_id} has more than {limit} spans; later spans of it are "
                        "rejected."
                    )
            while len(counted) > memory:  # forget the least recently seen
                counted.popitem(last=False)
        return limited


@dataclass(frozen=True, slots=True, eq=False)
class Shaping:
    """The limits a codec applies while decoding, as data: the attribute limit, the process's
    per-trace budget, and the redactor (inactive: nothing is redacted)."""

    attribute_limit: int
    budget: TraceBudget
    redactor: TextRedactor
