"""Agent traces from a span store: the store returns span records by trace
(:meth:`~spanguard_processor.store.span_store.SpanStore.trace_records`), this assembles them.

:func:`stored_agent_traces` turns a store's traces, in order, into agent traces with the
annotations of :func:`stored_annotations` (or of several partitions, merged by the caller),
merging a conversation's parentless model calls into one request.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..ingest.otlp_logs import LOG_SPAN
from ..ingest.spans import SpanRecord
from ..store.span_store import SpanStore
from ..traces.annotations import Annotations
from ..traces.convert import annotated_trace, conversation_key
from ..traces.model import AgentTrace

__all__ = ["stored_agent_traces", "stored_annotations"]


def stored_annotations(store: SpanStore, skipped: list[str] | None = None) -> Annotations:
    """A store's annotation spans by the request id they annotate; with ``skipped``,
    unreadable ones are left out and described there instead of raising ``DamagedStore``."""
    return Annotations(store.annotation_spans(skipped))


def stored_agent_traces(
    store: SpanStore,
    *,
    include_pending: bool = False,
    annotations: Annotations | None = None,
    skipped: list[str] | None = None,
    orphans: list[str] | None = None,
) -> Iterator[AgentTrace]:
    """Every released trace of ``store`` as an agent trace, by start time then trace id.

    A trace of log records only (their spans never arrived: a logs receiver keeps records
    naming spans it has not seen) is no agent trace: it is left out, and its id appended to
    ``orphans`` when given.

    With ``include_pending``, traces still in flight come too, marked partial. Traces made
    only of annotation spans are merged into their request's trace, not returned;
    ``annotations`` replaces this store's own (to merge those of several partitions).
    A trace with an unreadable span raises ``DamagedStore``; with ``skipped`` it is left out
    and the problem appended there.
    Parentless model calls of one conversation (see :func:`conversation_key`) come out as
    one request, after the other traces, in order of their first call.
    """
    if annotations is None:
        annotations = stored_annotations(store, skipped)
    conversations: dict[str, tuple[list[SpanRecord], bool]] = {}
    for trace_id, released, spans in store.trace_records(
        include_pending=include_pending, skipped=skipped
    ):
        if all(span.name == LOG_SPAN for span in spans):
            if orphans is not None:
                orphans.append(trace_id)
            continue
        key = conversation_key(spans)
        if key is not None:
            held, partial = conversations.get(key, ([], False))
            held.extend(spans)
            conversations[key] = (held, partial or not released)
            continue
        yield annotated_trace(
            spans, annotations, partial=not released or not any(span.is_root for span in spans)
        )
    for held, partial in conversations.values():
        held.sort(key=lambda span: (span.start_ns, span.span_id))
        yield annotated_trace(held, annotations, partial=partial)
