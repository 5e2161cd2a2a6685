"""The ingest pipeline shared by both servers: durable store first, then assembly.

One writer thread owns the :class:`SpanStore` and the :class:`TraceAssembler`. Servers call
:meth:`Ingestor.submit` and wait on the returned future, which resolves only after the spans
are committed (so a request is acknowledged only when its spans are durable). Requests that
arrive together are committed together (group commit), which keeps fsyncs off the per-request
path.

The commit that acknowledges a request stores its body only
(:meth:`SpanStore.append_batches`); its spans are indexed by trace later, many requests in
one transaction (:meth:`SpanStore.index_batches`): once ``_INDEX_BATCHES`` requests or
``_INDEX_SPANS`` spans are waiting, after ``_INDEX_IDLE`` seconds without a request, and at
most ``_INDEX_AGE`` seconds after the first. Index rows are keyed by trace id, so every commit
writes a page per trace it touches: indexing 32 requests at once writes each such page once
instead of 32 times (bench/bench_ingest.py). A writer stopped in between loses nothing: a
store opened with batches never indexed indexes them first. Released traces are marked in the
store with the index commit after their spans are indexed; at :meth:`Ingestor.close` every
trace still in flight is flushed. Duplicated spans (exporter retries) are counted when indexed.
"""

from __future__ import annotations

import gc
import logging
import queue
import sqlite3
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import cast

from spanguard.exceptions import InputError

from ..ingest.spans import DecodedBatch
from ..store.span_store import SpanStore, Unindexed
from .assembler import ReleasedTrace, TraceAssembler
from .os_threads import name_os_thread, return_free_memory

__all__ = ["IngestStats", "Ingestor"]

_log = logging.getLogger(__name__)
# SQLite primary result codes a later write may not meet: BUSY, LOCKED, IOERR, FULL (disk full)
_TRANSIENT_CODES = frozenset({5, 6, 10, 13})


def _transient(exc: BaseException) -> bool:
    """True for a store error worth answering "retry later" to while the writer carries on."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.OperationalError)
        and isinstance(code, int)
        and code & 0xFF in _TRANSIENT_CODES
    )


_STOP = object()
_CHECKED = object()  # the deferred checks are over (passed or not)
_MAX_TICK = 0.25
_INDEX_BATCHES = 32
_INDEX_SPANS = 32_768
_INDEX_IDLE = 0.05
_INDEX_AGE = 1.0
_REST_AFTER = 5.0  # seconds without a request before the writer gives memory back


@dataclass(frozen=True, slots=True)
class IngestStats:
    """Counters for the health endpoint and the shutdown summary."""

    spans_received: int
    spans_duplicated: int
    traces_in_flight: int
    traces_released: int


class Ingestor:
    """Store-then-assemble pipeline on a single writer thread."""

    def __init__(
        self, store: SpanStore, assembler: TraceAssembler, *, background_start: bool = False
    ) -> None:
        self.store = store
        self._background_start = background_start
        #: what the writer does before taking requests (None once it takes them)
        self.starting: str | None = None
        self.assembler = assembler
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()  # C: no Condition per call
        self._thread = threading.Thread(target=self._run, name="spanguard-writer", daemon=True)
        self._closed = False
        self._received = 0
        self._duplicates = 0
        self._released = 0
        self._unmarked: list[str] = []  # released, not yet marked in the store
        self._unindexed: list[Unindexed] = []  # stored, acknowledged, not yet indexed
        self._unindexed_spans = 0
        self._first_unindexed = 0.0  # monotonic times
        self._last_stored = time.monotonic()
        self._rested = False  # memory given back since the last request
        self.rests = 0  # times the idle writer gave memory back (tests wait on it)
        self._retry_at = 0.0  # after a refused index commit: not before this
        self._index_refused = False
        self._failure: BaseException | None = None
        self.beat = time.monotonic()  # when the writer last came round its loop
        self.refused: tuple[float, str] | None = None  # the last write the store refused
        # background start: what the checks found, and what was stored while they ran
        self._checks: Exception | None = None
        self._early: list[Unindexed] = []
        self._early_spans = 0

    def start(self) -> Ingestor:
        """Refill the assembler with the traces a previous run left pending, then start the
        writer thread.

        With ``background_start`` (a store opened with ``defer_checks``) the checks that read
        the whole store (``quick_check``, every stored batch and index row against its
        checksum: :meth:`SpanStore.check_deferred`) run on a thread and a connection of their
        own that only read, while the writer already stores and acknowledges requests
        (their bodies only: :meth:`SpanStore.append_batches` with ``before_checks``). Once
        the checks pass, the writer indexes what a stopped writer left unindexed, refills the
        assembler, then indexes and assembles what it stored meanwhile. If they find the
        store damaged, the writer fails saying so, and how many requests it acknowledged
        into it (stored intact: ``spanguard store recover`` copies them out).
        :attr:`starting` says what the writer is doing until it is ready."""
        if self._background_start:
            self.starting = "storing requests while the store's checks run"
            threading.Thread(target=self._check, name="spanguard-checks", daemon=True).start()
        else:
            self._resume()
        self._thread.start()
        return self

    def _check(self) -> None:
        name_os_thread()
        try:
            self.store.check_deferred()
        except Exception as exc:  # the writer reports it
            self._checks = exc
        self._queue.put(_CHECKED)

    def _finish_start(self) -> None:
        """The checks are over: go on from what they found (on the writer's thread)."""
        early = len(self._early)
        if self._checks is not None:
            if early:
                _log.error(
                    "the store's checks failed after %d request(s) were acknowledged into it: "
                    "they are stored intact (spanguard store recover copies them out)",
                    early,
                )
            raise self._checks
        self.store.finish_deferred(self._early[0][0] if early else None)
        self.starting = "resuming the traces left in flight by the last run"
        self._resume()
        if early:
            now = time.monotonic()
            self._first_unindexed = self._last_stored = now
            self._unindexed.extend(self._early)
            self._unindexed_spans += self._early_spans
            self._mark(
                self.assembler.add_groups([group for _, groups in self._early for group in groups])
            )
            self._early, self._early_spans = [], 0
        self.starting = None

    def _starting(self, batches: list[tuple[DecodedBatch, Future[None]]], checked: bool) -> None:
        """The writer's loop while the checks run (and when they are over)."""
        try:
            self._store_early(batches)
        except Exception as exc:
            if not _transient(exc):
                _log.exception("the span store failed; refusing further spans")
                self._failure, self.starting = exc, None
                return
            self.refused = (time.monotonic(), str(exc))
            _log.warning("the span store refused a write (%s); the senders will retry", exc)
        if checked:
            try:
                self._finish_start()
            except Exception as exc:  # e.g. a damaged store: refuse every request, say why
                if isinstance(exc, InputError):  # found by a check: its sentence says it all
                    _log.error("the span store cannot be used; refusing spans: %s", exc)
                else:
                    _log.exception("the span store cannot be used; refusing spans")
                self._failure, self.starting = exc, None

    def _store_early(self, batches: list[tuple[DecodedBatch, Future[None]]]) -> None:
        """While the checks run: store and acknowledge the bodies, index them later."""
        if not batches:
            return
        try:
            stored = self.store.append_batches([batch for batch, _ in batches], before_checks=True)
        except Exception as exc:
            for _, future in batches:
                future.set_exception(exc)
            raise
        self.refused = None
        for _, future in batches:
            future.set_result(None)
        received = sum(batch.count for batch, _ in batches)
        self._received += received
        self._early.extend(stored)
        self._early_spans += received

    def _resume(self) -> None:
        pending = list(self.store.pending_groups())
        self.store.forget_view()  # the writer reads no more
        if pending:
            _log.info(
                "resuming %d pending spans from %s",
                sum(group.span_count for group in pending),
                self.store.path,
            )
            self._mark(self.assembler.add_groups(pending))

    @property
    def healthy(self) -> bool:
        """False once closing, or after the store failed (requests then get 503/UNAVAILABLE)."""
        return not self._closed and self._failure is None and self._thread.is_alive()

    @property
    def failure(self) -> BaseException | None:
        """The store error the writer could not carry on from (None while it works)."""
        return self._failure

    @property
    def writer_alive(self) -> bool:
        """False once the writer thread has ended: after :meth:`close`, or if it died."""
        return self._thread.is_alive()

    def stats(self) -> IngestStats:
        return IngestStats(
            spans_received=self._received,
            spans_duplicated=self._duplicates,
            traces_in_flight=self.assembler.in_flight,
            traces_released=self._released,
        )

    def submit(self, batch: DecodedBatch) -> Future[None]:
        """Queue a batch; the future resolves once its spans are durable (or fails, saying why)."""
        future: Future[None] = Future()
        if self._failure is not None:
            future.set_exception(RuntimeError(f"the span store failed: {self._failure}"))
            return future
        if self._closed:
            future.set_exception(RuntimeError("the processor is shutting down"))
            return future
        if not batch.count:
            future.set_result(None)
            return future
        self._queue.put((batch, future))
        return future

    def close(self, *, flush: bool = True) -> None:
        """Stop accepting spans, finish queued ones, and release every trace in flight."""
        if self._closed:
            return
        self._closed = True
        # a writer that died left the assembler in an unknown state: its traces stay pending
        # in the store, for the next start to resume
        died = self._thread.ident is not None and not self._thread.is_alive()
        self._queue.put(_STOP)
        self._thread.join()
        if self._failure is None and not died:
            if flush:
                self._mark(self.assembler.flush())
            self._index()

    def _mark(self, released: list[ReleasedTrace]) -> None:
        """Note released traces; they are marked in the store with the next index commit,
        not in a commit (and fsync) of their own."""
        if released:
            self._unmarked.extend(r.trace_id for r in released)
            self._released += len(released)

    def _index(self) -> None:
        """Index the stored batches and mark the noted traces released, in one commit; if the
        store refuses the write (full disk, lock), keep both and retry on the next tick (the
        batches are stored already: nothing acknowledged is at risk)."""
        if not self._unindexed and not self._unmarked:
            return
        spans = self._unindexed_spans
        try:
            new = self.store.index_batches(self._unindexed, release=self._unmarked)
        except Exception as exc:
            if not _transient(exc):
                raise
            if not self._index_refused:
                _log.warning(
                    "the span store refused to index %d batch(es) and mark %d "
                    "trace(s) released (%s); retrying",
                    len(self._unindexed),
                    len(self._unmarked),
                    exc,
                )
            self._index_refused = True
            self.refused = (time.monotonic(), str(exc))
            self._retry_at = time.monotonic() + _MAX_TICK
            self._unmarked = list(dict.fromkeys(self._unmarked))
            return
        self._index_refused = False
        self.refused = None
        self._unmarked = []
        self._unindexed = []
        self._unindexed_spans = 0
        self._duplicates += spans - new

    def _index_due(self, now: float) -> float | None:
        """Seconds until the waiting batches are to be indexed (0: now), None if none wait."""
        if not self._unindexed:
            due = 0.0 if self._unmarked else None
        elif len(self._unindexed) >= _INDEX_BATCHES or self._unindexed_spans >= _INDEX_SPANS:
            due = 0.0
        else:
            due = max(
                0.0, min(self._last_stored + _INDEX_IDLE, self._first_unindexed + _INDEX_AGE) - now
            )
        return None if due is None else max(due, self._retry_at - now)

    def _run(self) -> None:
        name_os_thread()
        stop = False
        while not stop:
            self.beat = time.monotonic()
            due = self.assembler.next_due()
            timeout = _MAX_TICK if due is None else min(max(due, 0.001), _MAX_TICK)
            index_due = self._index_due(time.monotonic())
            if index_due is not None and self._unindexed:
                timeout = min(timeout, max(index_due, 0.001))
            try:
                first = self._queue.get(timeout=timeout)
            except queue.Empty:
                first = None
            items = [] if first is None else [first]
            while not self._queue.empty():  # this thread is the only consumer
                items.append(self._queue.get_nowait())
            batches: list[tuple[DecodedBatch, Future[None]]] = []
            checked = False
            for item in items:
                if item is _STOP:
                    stop = True
                elif item is _CHECKED:
                    checked = True
                else:
                    batches.append(cast(tuple[DecodedBatch, Future[None]], item))
            if self.starting is not None and self._failure is None:
                self._starting(batches, checked)
                continue
            if self._failure is not None:  # keep answering, never leave a request hanging
                for _, future in batches:
                    future.set_exception(RuntimeError(f"the span store failed: {self._failure}"))
                continue
            if (
                not batches
                and not self._rested
                and not self._unindexed
                and not self._unmarked
                and time.monotonic() - self._last_stored >= _REST_AFTER
            ):
                self._rest()
            try:
                self._write(batches)
            except Exception as exc:
                if _transient(exc):  # this group commit was rolled back and refused (retryable)
                    self.refused = (time.monotonic(), str(exc))
                    _log.warning("the span store refused a write (%s); the senders will retry", exc)
                    continue
                _log.exception("the span store failed; refusing further spans")  # loudly
                self._failure = self._failure or exc

    def _rest(self) -> None:
        """Idle for ``_REST_AFTER`` s: give back the memory a burst left (SQLite's page cache,
        the span ids remembered for deduplication, garbage, malloc's free memory), so the
        process returns to about its size after start (bench/bench_serve_memory.py)."""
        self._rested = True
        self.assembler.forget_released()
        try:
            self.store.rest()
        except sqlite3.Error as exc:  # e.g. the store busy: try again after the next request
            _log.debug("the idle writer could not shrink the store's memory (%s)", exc)
        gc.collect()
        return_free_memory()
        self.rests += 1

    def _write(self, batches: list[tuple[DecodedBatch, Future[None]]]) -> None:
        futures = [future for _, future in batches]
        if batches:
            try:
                stored = self.store.append_batches([batch for batch, _ in batches])
            except Exception as exc:
                if not _transient(exc):
                    self._failure = exc  # before answering: nobody sees a healthy failed store
                for future in futures:
                    future.set_exception(exc)
                raise
            self.refused = None  # the store takes writes again
            for future in futures:
                future.set_result(None)
            now = time.monotonic()
            if not self._unindexed:
                self._first_unindexed = now
            self._last_stored = now
            self._rested = False
            received = sum(batch.count for batch, _ in batches)
            self._received += received
            self._unindexed.extend(stored)
            self._unindexed_spans += received
            self._mark(
                self.assembler.add_groups([group for _, groups in stored for group in groups])
            )
        self._mark(self.assembler.poll())
        if self._index_due(time.monotonic()) == 0.0:
            self._index()
