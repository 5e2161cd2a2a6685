"""The durable span store: SQLite in WAL mode, one index row per batch.

* :meth:`SpanStore.put_batches` stores received batches (each OTLP request or file line once,
  still encoded) and, per batch, one index row of its span ids grouped by trace, in one
  transaction committed with ``synchronous=FULL`` before it returns: a request acknowledged
  after that survives a crash. A span delivered twice (exporter retries) is read once; a batch
  with no new span is not kept (as far as the writer remembers: :class:`RecentSpans`). The
  server splits this in two: :meth:`SpanStore.append_batches` commits the bodies it
  acknowledges, :meth:`SpanStore.index_batches` indexes many of them later
  (:mod:`~spanguard_processor.store.index`); a store opened with bodies never
  indexed indexes them first. :meth:`SpanStore.mark_released` records which traces the
  assembler released (one row per commit).
* Reading goes through the per-trace tables of a :class:`TraceView`, built from the index rows
  when the store is first read and brought up to date at each later read;
  :meth:`SpanStore.trace_records` returns the span records of each trace (the readers,
  :mod:`spanguard_processor.inputs.stored_traces`, assemble agent traces from them).

Every open checks the store (:mod:`~spanguard_processor.store.opening`; older versions
are upgraded: :mod:`~spanguard_processor.store.upgrade`); a writable one also checks
every batch and index row against its CRC-32, so nothing is acknowledged into a damaged store
(``serve`` defers what reads the whole file to a thread of its own, ``defer_checks``, and
acknowledges request bodies meanwhile: a damage found then is reported with how many). Reads
check each batch and that it holds the spans its index rows name
(:mod:`~spanguard_processor.store.read`). Damage raises :class:`DamagedStore`, never
a raw ``sqlite3`` error; ``spanguard store recover`` copies what is readable into a new store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TypeVar

from ..ingest.spans import DecodedBatch, SpanRecord, TraceGroup
from .index import (
    STORE_BATCH,
    IndexItem,
    Unindexed,
    ids_of,
    index_groups,
    index_unindexed,
    log_groups,
    stored_span_ids,
    unindexed,
)
from .lock import WriterLock
from .opening import CHECKS, check_pages, open_database, verify_rows
from .read import StoredBatches, is_annotation, not_annotation
from .schema import (
    DAMAGE_CODES,
    SCHEMA_VERSION,
    SQLITE_MAGIC,
    DamagedStore,
    crc,
    insert_releases,
    looks_like_store,
)
from .upgrade import overlay_index
from .view import RecentSpans, TraceView, release_indexed
from .view import pending_groups as pending_of_rows

__all__ = [
    "SCHEMA_VERSION",
    "SQLITE_MAGIC",
    "DamagedStore",
    "SpanStore",
    "Unindexed",
    "looks_like_store",
]

_T = TypeVar("_T")
_PAGE = 1024  # trace ids fetched at a time by trace_records


class SpanStore:
    """A SQLite span store at ``path`` (created if missing unless ``readonly``).

    ``durable=False`` skips fsync; only for scratch stores that a crash may lose. The store is
    checked on open (see the module docstring); ``verify_batches`` (the default for a writable
    store) also checks every batch and index row against its checksum. ``defer_checks`` (a
    writable store) leaves what reads the whole file to :meth:`check_deferred` (safe on
    another thread), then :meth:`finish_deferred` (on the writer's), whose step
    :attr:`checking` names; until they ran, nothing can be written but bodies appended with
    ``before_checks`` (:meth:`append_batches`).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        readonly: bool = False,
        durable: bool = True,
        verify_batches: bool | None = None,
        defer_checks: bool = False,
    ) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._has_crc = True
        self._version = SCHEMA_VERSION
        self._db: sqlite3.Connection | None = None
        #: the span ids this writer stored most recently, by trace (for deduplication)
        self._recent = RecentSpans()
        self._deferred = defer_checks and not readonly
        #: the deferred check running or next (None: none left)
        self.checking: str | None = CHECKS[0] if self._deferred else None
        self.lock = WriterLock(self.path, take=not readonly)  # one writer per store
        try:
            self._db, self._has_crc, self._version = open_database(
                self.path, readonly, durable, quick_check=not self._deferred
            )
            self._batches = StoredBatches(self._has_crc, self._damaged)
            # version 3 is read by trace through a view; older (read-only) stores their tables
            self._view = TraceView() if self._version >= 3 else None
            if not self._deferred:
                if verify_batches if verify_batches is not None else not readonly:
                    self.verify_batches()
                self._index_unindexed()
        except BaseException:
            if self._db is not None:
                self._db.close()
            self.lock.release()
            raise

    def check_deferred(self) -> None:
        """The deferred checks that only read (``quick_check``, every batch and index row
        against its checksum), in one read transaction of a connection of their own: safe on
        another thread while the writer appends bodies (they read a WAL snapshot; an append
        touches no row they read). The connection is an ordinary one with ``query_only``,
        not a ``mode=ro`` one: with one of those open in the writer's process, acknowledged
        requests still in the WAL were lost across ``kill -9`` restarts
        (``tests/reliability/test_crash_safety.py``, 2026-12-05). Raises
        :class:`DamagedStore`. :meth:`finish_deferred` comes next."""
        if not self._deferred:
            return
        reader = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            reader.execute("PRAGMA query_only = 1")
            reader.execute("BEGIN")
            with self._reading():
                check_pages(reader, self.path)
                self.checking = CHECKS[1]
                verify_rows(reader, self.path, self._has_crc, self._version)
            reader.execute("COMMIT")
        finally:
            reader.close()

    def finish_deferred(self, before: int | None = None) -> None:
        """After :meth:`check_deferred` passed, on the writer's thread: writing is safe; index
        the batches a stopped writer left unindexed (those below batch id ``before``: the
        ones appended during the checks are the caller's to index)."""
        try:
            self._deferred = False
            self.checking = CHECKS[2]
            self._index_unindexed(before)
        finally:
            self.checking = None

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "the store is closed"
        return self._db

    def _damaged(self, problem: str) -> DamagedStore:
        return DamagedStore(problem, file=str(self.path))

    def verify_batches(self) -> int:
        """Check every batch and index row (checksum, form, batch named); returns batches read."""
        with self._reading():
            return verify_rows(self.db, self.path, self._has_crc, self._version)

    def check_index(self) -> int:
        """``PRAGMA integrity_check``, then every index row against the spans its batch holds;
        returns how many batches were read."""
        self.refresh()
        with self._reading():
            return self._batches.check_rows(self.db)

    def batches_without_index_rows(self) -> list[int]:
        """The stored batches the file's index has no row for (a writer stopped between
        storing and indexing them, or a row deleted): readers index them from their bodies."""
        with self._reading():
            return unindexed(self.db, self._version)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """SQLite finding damage while reading, or a check finding it (without naming a
        file), becomes :class:`DamagedStore` naming this store."""
        try:
            yield
        except DamagedStore as exc:
            if exc.file is not None:
                raise
            raise self._damaged(exc.problem) from None
        except sqlite3.DatabaseError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if isinstance(exc, sqlite3.OperationalError) and code not in DAMAGE_CODES:
                raise
            raise self._damaged(str(exc)) from None

    def refresh(self, skipped: list[str] | None = None) -> None:
        """Bring the per-trace tables readers query up to date with what is stored (every
        read method does this first); with ``skipped``, a damaged index row is left out and
        described there instead of raising :class:`DamagedStore`."""
        if self._view is None:
            return
        with self._reading():
            self._view.sync(self.db, skipped)

    def forget_view(self) -> None:
        """Drop the per-trace tables (a writer that reads no more); rebuilt if read again."""
        if self._view is not None and self._view.built:
            with self._reading():
                self._view.drop(self.db)

    def close(self) -> None:
        """Close the store; a writable one is checkpointed first, so its WAL is emptied (not
        one whose deferred checks did not pass: nothing is written to a damaged store)."""
        if self._db is None:
            return
        if not self.readonly and not self._deferred:
            # e.g. a full disk: the WAL then stays, and nothing in it is lost
            with suppress(sqlite3.Error):
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()
        self._db = None
        self.lock.release()

    def __enter__(self) -> SpanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ---------------------------------------------------------------------------

    def put_batches(self, batches: Sequence[DecodedBatch], *, release: Sequence[str] = ()) -> int:
        """Store batches and index their spans in one transaction; returns after a durable
        commit. Returns how many spans were new (the rest were already stored). Traces in
        ``release`` are marked released in the same transaction."""
        return self._index(
            [(None, batch.traces, batch) for batch in batches if batch.spans or batch.groups],
            release,
        )

    def append_batches(
        self, batches: Sequence[DecodedBatch], *, before_checks: bool = False
    ) -> list[Unindexed]:
        """Store the bodies of batches, not yet indexed, in one transaction; returns after a
        durable commit, with each batch's id and trace groups for :meth:`index_batches`.
        ``before_checks``: also while the deferred checks run (their caller says so if they
        then find the store damaged).

        What is stored is acknowledged: a store opened with batches that were never indexed
        indexes them first (see :meth:`_index_unindexed`)."""
        kept = [batch for batch in batches if batch.spans or batch.groups]
        if not kept:
            return []

        def append() -> list[Unindexed]:
            return [
                (
                    int(self.db.execute(STORE_BATCH, (b.fmt, b.body, crc(b.body))).lastrowid or 0),
                    b.traces,
                )
                for b in kept
            ]

        return self._in_transaction(append, (), before_checks=before_checks)

    def index_batches(self, stored: Sequence[Unindexed], *, release: Sequence[str] = ()) -> int:
        """Index batches stored by :meth:`append_batches` (in their order) and mark ``release``
        released, in one transaction; returns how many of their spans were new. A batch with
        no new span is removed."""
        return self._index([(batch_id, groups, None) for batch_id, groups in stored], release)

    def _index(
        self,
        items: list[IndexItem],
        release: Sequence[str],
        known: Callable[[str], bytes | None] | None = None,
    ) -> int:
        if not items:
            self.mark_released(release)
            return 0
        new, stored = self._in_transaction(
            partial(
                log_groups,
                self.db,
                items,
                known or self._recent.get,
                None if known else self._recent.known_of,
            ),
            release,
        )
        self._recent.update(stored)  # committed: remembered
        return new

    def _in_transaction(
        self, work: Callable[[], _T], release: Sequence[str], *, before_checks: bool = False
    ) -> _T:
        if self._deferred and not before_checks:  # nothing else before the checks passed
            raise RuntimeError("the store's checks are deferred: check_deferred() first")
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            result = work()
            insert_releases(db, release)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                db.execute("ROLLBACK")
            raise
        return result

    def _index_unindexed(self, below: int | None = None) -> int:
        """Index the batches stored but never indexed (a writer stopped between
        :meth:`append_batches` and :meth:`index_batches`): in the file, deduplicated against
        the store, or for a read-only store in its per-trace tables only; returns how many
        there were."""
        db = self.db
        with self._reading():
            ids = unindexed(db, self._version, below)
            if not ids:
                return 0
            self.refresh()
            if self._view is None:  # an older store, read-only
                overlay_index(db)

            def index(items: list[Unindexed]) -> None:
                if self.readonly:
                    index_groups(db, items)
                    release_indexed(db, {g.trace_id for _, groups in items for g in groups})
                    db.commit()
                    return
                assert self._view is not None  # a writable store is at the current version
                known = stored_span_ids(db, [g.trace_id for _, groups in items for g in groups])
                recent = self._recent.get
                self._index(
                    [(batch_id, groups, None) for batch_id, groups in items],
                    (),
                    lambda trace_id: recent(trace_id) or known.get(trace_id),
                )

            return index_unindexed(db, self._has_crc, ids, index)

    def rest(self) -> None:
        """Give back SQLite's page cache and the span ids remembered (an idle writer)."""
        self._recent.clear()
        self.db.execute("PRAGMA shrink_memory")

    def mark_released(self, trace_ids: Iterable[str]) -> None:
        """Mark traces released (assembled); late spans of a released trace keep it released."""
        rows = list(trace_ids)
        if rows:
            self._in_transaction(lambda: None, rows)

    def release_all(self) -> int:
        """Mark every pending trace released (after a file ingest); returns how many."""
        self.refresh()
        pending = [
            t
            for (t,) in self.db.execute(
                "SELECT trace_id FROM traces WHERE released = 0 ORDER BY trace_id"
            )
        ]
        self.mark_released(pending)
        return len(pending)

    # --- reading ---------------------------------------------------------------------------

    def pending_groups(self) -> Iterator[TraceGroup]:
        """The spans of traces not yet released, by trace and batch (bodies omitted), to
        refill an assembler on restart. A writer remembers their span ids (they are the likeliest
        to be delivered again). A version-3 store is read from its index and release rows
        (:func:`~.view.pending_groups`), without building the per-trace view."""
        if self._view is not None and not self._view.built:
            with self._reading():
                groups = pending_of_rows(self.db)
        else:
            self.refresh()
            with self._reading():
                rows = self.db.execute(
                    "SELECT b.trace_id, b.span_ids, b.root FROM trace_batches b"
                    " JOIN traces t ON t.trace_id = b.trace_id"
                    " WHERE t.released = 0 ORDER BY b.trace_id, b.batch_id"
                ).fetchall()
            groups = [
                TraceGroup(trace_id, span_ids, 0, bool(root), 0)
                for trace_id, span_ids, root in rows
            ]
        if not self.readonly:
            self._recent.seed(groups)
        yield from groups

    def span_count(self) -> int:
        self.refresh()
        with self._reading():
            return int(
                self.db.execute(
                    "SELECT coalesce(sum(length(span_ids)), 0) / 8 FROM trace_batches"
                ).fetchone()[0]
            )

    def trace_counts(self) -> tuple[int, int]:
        """(released, pending) trace counts."""
        self.refresh()
        with self._reading():
            row = self.db.execute(
                "SELECT coalesce(sum(released), 0), coalesce(sum(1 - released), 0) FROM traces"
            ).fetchone()
        return int(row[0]), int(row[1])

    def span_ids(self) -> list[tuple[str, str]]:
        """Every stored (trace_id, span_id), sorted."""
        self.refresh()
        with self._reading():
            rows = self.db.execute("SELECT trace_id, span_ids FROM trace_batches").fetchall()
        return sorted(
            (trace_id, span_id.hex()) for trace_id, blob in rows for span_id in ids_of(blob)
        )

    def _records(
        self,
        where: str,
        args: tuple[object, ...],
        keep: Callable[[SpanRecord], bool],
        skipped: list[str] | None = None,
    ) -> list[SpanRecord]:
        """The spans of the index rows matching ``where`` that ``keep`` accepts, decoded from
        their batches and checked against their rows, in start order; an unreadable row
        raises :class:`DamagedStore`, or with ``skipped`` is left out and described there."""
        with self._reading():
            rows = self.db.execute(
                "SELECT trace_id, batch_id, span_ids FROM trace_batches"
                f" WHERE {where} ORDER BY trace_id, batch_id",
                args,
            ).fetchall()
            records: list[SpanRecord] = []
            for trace_id, batch_id, span_ids in rows:
                try:
                    found = self._batches.row_records(self.db, trace_id, batch_id, span_ids)
                except DamagedStore as exc:
                    if skipped is None:
                        raise
                    skipped.append(exc.problem)
                    continue
                records.extend(record for record in found if keep(record))
        records.sort(key=lambda record: (record.start_ns, record.span_id))
        return records

    def annotation_spans(self, skipped: list[str] | None = None) -> list[SpanRecord]:
        """The annotation spans (feedback recorded after its request), in start order; with
        ``skipped``, unreadable ones are left out and described there instead of raising
        :class:`DamagedStore`."""
        self.refresh(skipped)
        return self._records("annotations > 0", (), is_annotation, skipped)

    def trace_records(
        self, *, include_pending: bool = False, skipped: list[str] | None = None
    ) -> Iterator[tuple[str, bool, list[SpanRecord]]]:
        """Every released trace (with ``include_pending``, those in flight too) by start time
        then trace id, as (trace id, released, its spans but annotation spans, in start
        order); a trace of annotation spans only is left out. A trace with an unreadable
        span raises :class:`DamagedStore`; with ``skipped`` it is left out and described
        there. Agent traces are assembled from these by the readers
        (:mod:`spanguard_processor.inputs.stored_traces`)."""
        self.refresh(skipped)
        where = "" if include_pending else " WHERE released = 1"
        # a cursor read in pages, not a list of every trace id: memory stays flat in the
        # number of traces (SQLite sorts in its own bounded sorter; the statement reads only
        # the connection's temporary tables, so it holds no lock on the store's file)
        with self._reading():
            rows = self.db.execute(
                f"SELECT trace_id, released FROM traces{where} ORDER BY start_ns, trace_id"
            )
        try:
            while True:
                with self._reading():
                    page = rows.fetchmany(_PAGE)
                if not page:
                    return
                for trace_id, released in page:
                    try:
                        spans = self._records("trace_id = ?", (trace_id,), not_annotation)
                    except DamagedStore as exc:
                        if skipped is None:
                            raise
                        skipped.append(f"trace {trace_id}: {exc.problem}")
                        continue
                    if spans:
                        yield trace_id, bool(released), spans
        finally:
            rows.close()
