"""A version-3 store read by trace, and the writer's memory of the span ids it stored.

A version-3 store keeps its index as one row per batch and one per release commit
(:mod:`~spanguard_processor.store.schema`): the writer adds two rows per commit
instead of rows per trace. Reading wants the index by trace, so :class:`TraceView` builds the
per-trace tables of version 2 (``trace_batches``, ``traces``) as temporary tables of the
reading connection, from those rows, the first time a store is read, and brings them up to
date (with the rows added since) each time it is read again. Span ids are deduplicated per
trace while building, exactly: a span stored twice (an exporter's retry the writer no longer
remembered) is read once.

:class:`RecentSpans` is the writer's side of deduplication: the span ids of the traces it
stored most recently (two generations of at most ``capacity / 2`` traces each, ≈ 190
bytes per trace of five spans), so re-delivered spans of those are not stored again, and a
batch holding nothing new is not kept. Re-deliveries of older traces are stored, and read once;
so are those after an idle writer forgot them all (:meth:`RecentSpans.clear`, to give the
memory back).

:func:`pending_groups` is the writer's one read at start (the traces a previous run left
pending): from the index and release rows alone, without building the view — what the view
would say, at a fraction of the cost (on a 1 GB store: seconds instead of 8-10 s).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import TypeVar

from ..ingest.spans import TraceGroup
from .index import Unindexed, ids_of, index_groups
from .schema import (
    VIEW_SCHEMA,
    DamagedStore,
    checked_blob,
    unpack_groups,
    unpack_trace_ids,
)

__all__ = ["RecentSpans", "TraceView", "pending_groups", "release_indexed"]

_CHUNK = 256  # index rows per index_groups() call while building
_RELEASE = "UPDATE traces SET released = 1 WHERE trace_id = ?"
_T = TypeVar("_T")


def _unpacked(
    table: str,
    row_id: object,
    blob: object,
    check: object,
    unpack: Callable[[bytes], list[_T]],
    skipped: list[str] | None,
) -> list[_T] | None:
    """:func:`checked_blob`, or with ``skipped`` None for a damaged row, described there."""
    try:
        return checked_blob(table, row_id, blob, check, unpack)
    except DamagedStore as exc:
        if skipped is None:
            raise
        skipped.append(exc.problem)
        return None


class RecentSpans:
    """The joined span ids of the traces stored most recently, by trace id."""

    __slots__ = ("_half", "_new", "_old")

    def __init__(self, capacity: int = 131_072) -> None:
        self._half = max(1, capacity // 2)
        self._new: dict[str, bytes] = {}
        self._old: dict[str, bytes] = {}

    def get(self, trace_id: str) -> bytes | None:
        found = self._new.get(trace_id)
        return found if found is not None else self._old.get(trace_id)

    def known_of(self, trace_ids: list[str]) -> set[str]:
        """Those of these traces that are remembered."""
        return (self._new.keys() & trace_ids) | (self._old.keys() & trace_ids)

    def update(self, spans: dict[str, bytes]) -> None:
        """Remember these (trace id: all its span ids stored so far)."""
        new = self._new
        if len(new) + len(spans) < self._half:  # the usual case: at C speed
            new.update(spans)
            return
        for trace_id, span_ids in spans.items():
            if len(new) >= self._half and trace_id not in new:
                self._old, self._new = new, {}
                new = self._new
            new[trace_id] = span_ids

    def clear(self) -> None:
        """Forget every trace (an idle writer gives the memory back)."""
        self._new, self._old = {}, {}

    def seed(self, groups: Iterable[TraceGroup]) -> None:
        """Remember the span ids of stored trace groups (at start: the pending traces)."""
        joined: dict[str, bytes] = {}
        for group in groups:
            joined[group.trace_id] = joined.get(group.trace_id, b"") + group.span_ids
        self.update(joined)


def release_indexed(db: sqlite3.Connection, trace_ids: set[str]) -> None:
    """Mark released, in a reader's view, the traces ``trace_ids`` just indexed from bodies
    without an index row whose release the view read before they were in it (a reader would
    otherwise take them for pending and leave them out of its exports)."""
    if not trace_ids:
        return
    for row_id, blob, check in db.execute("SELECT id, trace_ids, crc FROM releases").fetchall():
        listed = checked_blob("releases", row_id, blob, check, unpack_trace_ids)
        found = trace_ids.intersection(map(str, listed))
        db.executemany(_RELEASE, [(trace_id,) for trace_id in sorted(found)])


def pending_groups(db: sqlite3.Connection) -> list[TraceGroup]:
    """The index rows of the traces never released, by trace id then batch, each span id once
    per trace (as :class:`TraceView` indexes them: a row left with no new span is dropped),
    bodies and start times omitted. Raises
    :class:`~spanguard_processor.store.schema.DamagedStore` (without a file) for a row that
    does not match its checksum or unpack."""
    released: set[str] = set()
    for row_id, blob, check in db.execute("SELECT id, trace_ids, crc FROM releases"):
        released.update(checked_blob("releases", row_id, blob, check, unpack_trace_ids))
    pending: dict[str, list[TraceGroup]] = {}
    seen: dict[str, set[bytes]] = {}
    for batch_id, blob, check in db.execute(
        "SELECT batch_id, groups, crc FROM batch_traces ORDER BY batch_id"
    ):
        for group in checked_blob("batch_traces", batch_id, blob, check, unpack_groups):
            trace_id = group.trace_id
            if trace_id in released:
                continue
            known = seen.setdefault(trace_id, set())
            fresh = [span_id for span_id in ids_of(group.span_ids) if span_id not in known]
            if fresh:
                known.update(fresh)
                kept = TraceGroup(trace_id, b"".join(fresh), 0, group.root, 0)
                pending.setdefault(trace_id, []).append(kept)
    return [group for trace_id in sorted(pending) for group in pending[trace_id]]


class TraceView:
    """The per-trace tables of a version-3 store, as temporary tables of one connection."""

    def __init__(self) -> None:
        self.built = False
        self.indexed = 0  # the highest batch id whose index row is in the view
        self.released = 0  # the highest ``releases`` row in the view

    def sync(self, db: sqlite3.Connection, skipped: list[str] | None = None) -> None:
        """Create the view, or bring it up to date with the index rows added since; in one
        read transaction, so a writer's commit is seen whole. Raises
        :class:`~spanguard_processor.store.schema.DamagedStore` (without a file)
        for a row that does not match its checksum or unpack; with ``skipped``, leaves such a
        row out and describes it there instead."""
        if db.in_transaction:
            db.commit()
        if not self.built:
            db.executescript(VIEW_SCHEMA)
            self.built = True
        db.execute("BEGIN")
        try:
            indexed, released = self._catch_up(db, skipped)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            self.drop(db)  # rebuilt from the start next time
            raise
        self.indexed, self.released = indexed, released

    def _catch_up(self, db: sqlite3.Connection, skipped: list[str] | None) -> tuple[int, int]:
        indexed, released = self.indexed, self.released
        rows = db.execute(
            "SELECT batch_id, groups, crc FROM batch_traces WHERE batch_id > ? ORDER BY batch_id",
            (indexed,),
        )
        try:
            while chunk := rows.fetchmany(_CHUNK):
                items: list[Unindexed] = []
                for batch_id, blob, check in chunk:
                    groups = _unpacked(
                        "batch_traces", batch_id, blob, check, unpack_groups, skipped
                    )
                    if groups is not None:
                        items.append((batch_id, groups))
                index_groups(db, items)
                indexed = chunk[-1][0]
        finally:  # a statement left open would keep the tables locked (no DROP after a failure)
            rows.close()
        for row_id, blob, check in db.execute(
            "SELECT id, trace_ids, crc FROM releases WHERE id > ? ORDER BY id", (released,)
        ).fetchall():
            trace_ids = _unpacked("releases", row_id, blob, check, unpack_trace_ids, skipped)
            if trace_ids is not None:
                db.executemany(_RELEASE, [(trace_id,) for trace_id in trace_ids])
            released = row_id
        return indexed, released

    def drop(self, db: sqlite3.Connection) -> None:
        """Drop the temporary tables (a writer that will not read again frees them)."""
        if db.in_transaction:
            db.commit()
        db.execute("DROP TABLE IF EXISTS temp.trace_batches")
        db.execute("DROP TABLE IF EXISTS temp.traces")
        self.built, self.indexed, self.released = False, 0, 0
