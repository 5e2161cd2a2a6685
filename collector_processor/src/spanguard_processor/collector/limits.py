"""Request limits, applied by both receivers before spans reach the store.

:class:`Limits` holds every limit ``spanguard serve`` enforces; :data:`DEFAULT_MAX_BODY` is the
largest request body or message either receiver accepts. The back-pressure ones
(``max_pending_spans``, ``ack_timeout``, ``retry_after``) are applied by
:class:`~spanguard_processor.collector.admission.Admission`; the shape limits and the
:class:`~spanguard_processor.collector.redaction.Redactor`, by the codec of the request's media
type while it decodes (:mod:`~spanguard_processor.ingest.codec`), given as data by
:class:`Shaper` (:class:`~spanguard_processor.ingest.shaping.Shaping`):

* attributes beyond ``max_attributes_per_span`` are dropped (and counted in
  ``dropped_attributes_count``, as the OTel SDK does);
* spans beyond ``max_spans_per_trace`` are rejected and reported through OTLP partial success;
* the redactor runs over every string of the request
  (:mod:`~spanguard_processor.ingest.redact_otlp`), so redacted text is never stored.

The per-trace span count is kept for at least the ``trace_memory`` most recently seen traces,
in tables allocated at start (:class:`~spanguard_processor.ingest.shaping.TraceCounts`), and
counts every span received, so a re-sent span counts again: the limit errs on the strict side.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ingest.shaping import Shaping, TraceBudget
from .redaction import Redactor

__all__ = ["DEFAULT_MAX_BODY", "REQUEST_SHARE", "Limits", "Shaper"]

# The largest OTLP/HTTP request body and OTLP/gRPC message either receiver accepts.
DEFAULT_MAX_BODY = 16 * 1024 * 1024

#: A logs request may hold at most 1/REQUEST_SHARE of ``max_pending_spans``.
REQUEST_SHARE = 4


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit ``spanguard serve`` enforces (defaults are the safe ones)."""

    max_attributes_per_span: int = 128
    max_spans_per_trace: int = 10_000
    max_pending_spans: int = 50_000
    ack_timeout: float = 30.0
    retry_after: int = 1
    trace_memory: int = 100_000

    @property
    def request_share(self) -> int:
        """The most log records one logs request may carry, and so hold of
        ``max_pending_spans``: a quarter of it, so one request never holds the whole budget."""
        return max(1, self.max_pending_spans // REQUEST_SHARE)


class Shaper:
    """Shape limits and redaction shared by the gRPC and HTTP receivers of one process (its
    :attr:`shaping` remembers how many spans of each recent trace it has let through)."""

    def __init__(self, limits: Limits | None = None, redactor: Redactor | None = None) -> None:
        self.limits = limits if limits is not None else Limits()
        self.redactor = redactor if redactor is not None else Redactor()
        self.shaping = Shaping(
            self.limits.max_attributes_per_span,
            TraceBudget(self.limits.max_spans_per_trace, self.limits.trace_memory),
            self.redactor,
        )
