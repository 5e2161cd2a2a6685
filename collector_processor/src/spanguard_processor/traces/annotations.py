"""Annotation spans, and the one rule that merges them into the trace they annotate.

``spanguard.feedback``, ``expect`` and ``mark_retried`` send a ``spanguard.annotate`` span —
a trace of its own, often sent long after the request — carrying the request id it is aimed at.
:class:`Annotations` collects them by that id, each span once, and
:meth:`Annotations.for_trace` hands a trace the ones aimed at its root's request id. Every
route to an agent trace merges through it: in-process spans and span files
(:func:`~spanguard_processor.traces.convert.traces_from_records`) and span stores, one or
several partitions (:func:`~spanguard_processor.inputs.stored_traces.stored_agent_traces`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from spanguard import semconv

from ..ingest.spans import SpanRecord
from .identity import find_root

__all__ = ["Annotations", "annotation_request_id", "is_annotation"]


def is_annotation(span: SpanRecord) -> bool:
    """True for a ``spanguard.annotate`` span (feedback, retry marks, expectations)."""
    return span.name == semconv.SPAN_ANNOTATION


def annotation_request_id(span: SpanRecord) -> str | None:
    """The request id a span carries (an annotation: the request it annotates), or None."""
    value = span.attributes.get(semconv.REQUEST_ID)
    return str(value) if value is not None and value != "" else None


class Annotations:
    """Annotation spans by the request id they annotate; a span delivered twice, or held by two
    store partitions, counts once. Spans without a request id annotate nothing and are
    dropped."""

    def __init__(self, spans: Iterable[SpanRecord] = ()) -> None:
        self._by_request: dict[str, dict[tuple[str, str], SpanRecord]] = {}
        self.extend(spans)

    def add(self, span: SpanRecord) -> None:
        request_id = annotation_request_id(span)
        if request_id is not None:
            held = self._by_request.setdefault(request_id, {})
            held.setdefault((span.trace_id, span.span_id), span)

    def extend(self, spans: Iterable[SpanRecord]) -> None:
        for span in spans:
            self.add(span)

    def update(self, other: Annotations) -> None:
        """Add another collection's spans (e.g. another store partition's)."""
        for held in other._by_request.values():
            self.extend(held.values())

    def for_request(self, request_id: str | None) -> list[SpanRecord]:
        """The annotation spans aimed at ``request_id`` (none for None)."""
        if request_id is None:
            return []
        return list(self._by_request.get(request_id, {}).values())

    def for_trace(self, spans: Sequence[SpanRecord]) -> list[SpanRecord]:
        """The annotation spans aimed at the request these spans record: matched by the request
        id on the trace's root (:func:`~spanguard_processor.traces.identity.find_root`)."""
        root = find_root(spans)
        return self.for_request(annotation_request_id(root) if root is not None else None)

    def __len__(self) -> int:
        return sum(len(held) for held in self._by_request.values())
