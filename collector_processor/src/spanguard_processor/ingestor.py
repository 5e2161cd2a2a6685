"""The ingest pipeline shared by both servers: durable store first, then assembly.

One writer thread owns the :class:`SpanStore` and the :class:`TraceAssembler`. Servers call
:meth:`Ingestor.submit` and wait on the returned future, which resolves only after the spans
are committed (so a request is acknowledged only when its spans are durable). Requests that
arrive together are committed together (group commit), which keeps fsyncs off the per-request
path. Released traces are marked in the store; at :meth:`Ingestor.close` every trace still in
flight is flushed.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import cast

from .assembler import ReleasedTrace, TraceAssembler
from .spans import EncodedSpan
from .store import SpanStore

__all__ = ["IngestStats", "Ingestor"]

_log = logging.getLogger(__name__)
_STOP = object()
_MAX_TICK = 0.25


@dataclass(frozen=True, slots=True)
class IngestStats:
    """Counters for the health endpoint and the shutdown summary."""

    spans_received: int
    spans_duplicated: int
    traces_in_flight: int
    traces_released: int


class Ingestor:
    """Store-then-assemble pipeline on a single writer thread."""

    def __init__(self, store: SpanStore, assembler: TraceAssembler) -> None:
        self.store = store
        self.assembler = assembler
        self._queue: queue.Queue[object] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="spanguard-writer", daemon=True)
        self._closed = False
        self._received = 0
        self._released = 0
        self._failure: BaseException | None = None

    def start(self) -> Ingestor:
        """Refill the assembler with traces left pending by a previous run, then start."""
        pending = list(self.store.pending_spans())
        if pending:
            _log.info("resuming %d pending spans from %s", len(pending), self.store.path)
            self._mark(self.assembler.add(pending))
        self._thread.start()
        return self

    @property
    def healthy(self) -> bool:
        return not self._closed and self._failure is None and self._thread.is_alive()

    def stats(self) -> IngestStats:
        return IngestStats(
            spans_received=self._received,
            spans_duplicated=self.assembler.duplicates,
            traces_in_flight=self.assembler.in_flight,
            traces_released=self._released,
        )

    def submit(self, spans: Sequence[EncodedSpan]) -> Future[None]:
        """Queue spans; the future resolves once they are durable (or fails with the reason)."""
        future: Future[None] = Future()
        if self._closed or self._failure is not None:
            future.set_exception(RuntimeError("the processor is shutting down"))
            return future
        if not spans:
            future.set_result(None)
            return future
        self._queue.put((spans, future))
        return future

    def close(self, *, flush: bool = True) -> None:
        """Stop accepting spans, finish queued ones, and release every trace in flight."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
        if flush and self._failure is None:
            self._mark(self.assembler.flush())

    def _mark(self, released: list[ReleasedTrace]) -> None:
        if released:
            self.store.mark_released(r.trace_id for r in released)
            self._released += len(released)

    def _run(self) -> None:
        stop = False
        while not stop:
            due = self.assembler.next_due()
            timeout = _MAX_TICK if due is None else min(max(due, 0.001), _MAX_TICK)
            try:
                first = self._queue.get(timeout=timeout)
            except queue.Empty:
                first = None
            items = [] if first is None else [first]
            while True:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            batches: list[tuple[Sequence[EncodedSpan], Future[None]]] = []
            for item in items:
                if item is _STOP:
                    stop = True
                else:
                    batches.append(cast(tuple[Sequence[EncodedSpan], Future[None]], item))
            try:
                self._write(batches)
            except BaseException as exc:  # the store failed: refuse further spans, loudly
                _log.exception("the span store failed; refusing further spans")
                self._failure = exc
                return

    def _write(self, batches: list[tuple[Sequence[EncodedSpan], Future[None]]]) -> None:
        spans: list[EncodedSpan] = []
        futures: list[Future[None]] = []
        for batch, future in batches:
            spans.extend(batch)
            futures.append(future)
        if spans:
            try:
                self.store.put_spans(spans)
            except BaseException as exc:
                for future in futures:
                    future.set_exception(exc)
                raise
            for future in futures:
                future.set_result(None)
            self._received += len(spans)
            self._mark(self.assembler.add(spans))
        self._mark(self.assembler.poll())
