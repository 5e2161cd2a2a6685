"""Indexing stored batches by trace.

* :func:`log_groups` writes a version-3 store's index: one ``batch_traces`` row per batch,
  its trace groups packed, holding only span ids new to the store as far as the writer's
  :class:`~spanguard_processor.store.view.RecentSpans` knows. Used by
  :class:`~spanguard_processor.store.span_store.SpanStore` in both of its ways of writing:
  :meth:`~spanguard_processor.store.span_store.SpanStore.put_batches` (bodies and index in one
  transaction) and ``append_batches`` then ``index_batches`` (bodies acknowledged first,
  indexed many requests at a time).
* :func:`index_groups` writes per-trace rows (one per (trace, batch), each span id once per
  trace): the temporary tables readers query
  (:class:`~spanguard_processor.store.view.TraceView`), or a read-only overlay of an
  older store's index.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence

import orjson

from spanguard.exceptions import TraceFormatError

from ..ingest.batches import decode_stored
from ..ingest.spans import DecodedBatch, TraceGroup
from .schema import MAX_NS, DamagedStore, crc, pack_groups

__all__ = [
    "STORE_BATCH",
    "IndexItem",
    "Unindexed",
    "checked_body",
    "ids_of",
    "index_groups",
    "index_unindexed",
    "log_groups",
    "stored_groups",
    "stored_span_ids",
    "unindexed",
]

_log = logging.getLogger(__name__)
_UNINDEXED_CHUNK = 64  # never-indexed batches indexed per transaction on open

#: A batch stored but not yet indexed: its id, and its spans grouped by trace.
Unindexed = tuple[int, Sequence[TraceGroup]]
#: What :func:`log_groups` takes: a stored batch's id (or None, with the batch, to store it
#: here if it adds a span), and its trace groups.
IndexItem = tuple[int | None, Sequence[TraceGroup], DecodedBatch | None]

_ADD_TRACE = """
INSERT INTO traces (trace_id, start_ns) VALUES (?, ?)
ON CONFLICT (trace_id) DO UPDATE SET start_ns = min(start_ns, excluded.start_ns)
"""
_KNOWN = (
    "SELECT trace_id, span_ids FROM trace_batches"
    " WHERE trace_id IN (SELECT value FROM json_each(?)) ORDER BY trace_id, batch_id"
)
STORE_BATCH = "INSERT INTO batches (fmt, body, crc) VALUES (?, ?, ?)"


def ids_of(blob: bytes) -> list[bytes]:
    """The 8-byte span ids joined in an index row."""
    return [blob[i : i + 8] for i in range(0, len(blob), 8)]


def index_groups(db: sqlite3.Connection, items: Sequence[Unindexed]) -> int:
    """Index the trace groups of stored batches in per-trace rows (``trace_batches`` and
    ``traces``), each span id once per trace, inside the caller's transaction: a reader's
    view, or a read-only overlay of an older store's index (the batches stay as they are).
    Returns how many spans were new."""
    new = 0
    known = {
        trace_id: set(ids_of(span_ids))
        for trace_id, span_ids in stored_span_ids(
            db, [group.trace_id for _, groups in items for group in groups]
        ).items()
    }
    several = len(items) > 1
    earlier: dict[str, bytes] = {}  # with several batches: the ids of each trace so far
    rows: list[tuple[str, int, bytes, bool, int]] = []  # trace_batches, in one statement
    starts: dict[str, int] = {}  # the earliest start of each trace indexed here
    for batch_id, groups in items:
        kept: list[TraceGroup] = []
        for group in groups:
            trace_id = group.trace_id
            seen = known.get(trace_id)
            if seen is None and several:
                first = earlier.setdefault(trace_id, group.span_ids)
                if first is not group.span_ids:
                    seen = known[trace_id] = set(ids_of(first))
            if seen is None:  # the common case: a trace the store has not seen
                kept.append(group)
                new += len(group.span_ids) // 8
                continue
            fresh = [span_id for span_id in ids_of(group.span_ids) if span_id not in seen]
            if not fresh:
                continue
            seen.update(fresh)
            # root: the trace's root is in this row or was stored before it
            kept.append(
                group._replace(
                    span_ids=b"".join(fresh), annotations=min(group.annotations, len(fresh))
                )
            )
            new += len(fresh)
        for trace_id, span_ids, start, root, notes in kept:
            rows.append((trace_id, batch_id, span_ids, root, notes))
            before = starts.get(trace_id)
            if before is None or start < before:
                starts[trace_id] = start
    if rows:  # in key order: each index page is visited once
        rows.sort()
        db.executemany("INSERT INTO trace_batches VALUES (?, ?, ?, ?, ?)", rows)
        db.executemany(
            _ADD_TRACE,
            [(trace_id, min(start, MAX_NS)) for trace_id, start in sorted(starts.items())],
        )
    return new


def log_groups(
    db: sqlite3.Connection,
    items: Sequence[IndexItem],
    recent: Callable[[str], bytes | None],
    known_of: Callable[[list[str]], set[str]] | None = None,
) -> tuple[int, dict[str, bytes]]:
    """Index trace groups in a version-3 store, inside the caller's transaction: one
    ``batch_traces`` row per batch of the span ids that ``recent`` (the span ids stored per
    trace, as far as the writer remembers) does not hold. A stored batch (an id) that adds no
    span is deleted; a batch not stored yet (no id) is stored only if it adds one.
    ``known_of``, if given, tells at once which of a batch's traces ``recent`` holds: the
    others (usually all) are new, with every span, and take no lookup of their own.

    Returns how many spans were new, and the span ids stored per trace after this commit,
    for the caller to remember once it is committed (not before: a commit that fails is
    tried again, and must find the same spans new)."""
    new = 0
    stored: dict[str, bytes] = {}  # the traces indexed here: every span id stored so far
    rows: list[tuple[int, bytes, int]] = []
    for batch_id, groups, batch in items:
        known = None
        if known_of is not None:
            trace_ids = [group[0] for group in groups]
            if len(set(trace_ids)) == len(trace_ids):  # else each is looked up, in order
                known = known_of(trace_ids) | (stored.keys() & trace_ids)
        kept = _new_spans(groups, stored, recent, known)
        new += sum(len(group.span_ids) for group in kept) >> 3
        if not kept:  # a pure re-delivery: keep nothing
            if batch_id is not None:
                db.execute("DELETE FROM batches WHERE id = ?", (batch_id,))
            continue
        if batch_id is None:
            assert batch is not None
            batch_id = int(
                db.execute(STORE_BATCH, (batch.fmt, batch.body, crc(batch.body))).lastrowid or 0
            )  # always set after an INSERT
        blob = pack_groups(kept)
        rows.append((batch_id, blob, crc(blob)))
    db.executemany("INSERT INTO batch_traces VALUES (?, ?, ?)", rows)
    return new, stored


def _new_spans(
    groups: Sequence[TraceGroup],
    stored: dict[str, bytes],
    recent: Callable[[str], bytes | None],
    known: set[str] | None,
) -> list[TraceGroup]:
    """The groups of a batch cut to the span ids neither ``stored`` (the traces indexed in
    this commit) nor ``recent`` holds, those emptied left out; ``stored`` is updated. A trace
    not in ``known`` (when given: the traces either may hold) is new, with every span."""
    kept: list[TraceGroup] = []
    for group in groups:
        trace_id, span_ids = group[0], group[1]
        seen = None
        if known is None or trace_id in known:
            seen = stored.get(trace_id)
            if seen is None:
                seen = recent(trace_id)
        if seen is None:  # a trace the writer has not stored
            stored[trace_id] = span_ids
            kept.append(group)
            continue
        # root: the trace's root is in this group or was stored before it
        held = set(ids_of(seen))
        fresh = [span_id for span_id in ids_of(span_ids) if span_id not in held]
        if not fresh:
            continue
        span_ids = b"".join(fresh)
        stored[trace_id] = seen + span_ids
        kept.append(
            group._replace(span_ids=span_ids, annotations=min(group.annotations, len(fresh)))
        )
    return kept


def stored_span_ids(db: sqlite3.Connection, trace_ids: Sequence[str]) -> dict[str, bytes]:
    """The span ids the per-trace rows hold for these traces (joined, in batch order), of
    those they have: one query, a few index probes each."""
    found: dict[str, bytes] = {}
    for trace_id, span_ids in db.execute(_KNOWN, (orjson.dumps(trace_ids),)):
        found[trace_id] = found.get(trace_id, b"") + span_ids
    return found


def checked_body(db: sqlite3.Connection, batch_id: int, has_crc: bool) -> tuple[str, bytes] | None:
    """A stored batch's format and body, checked against its checksum (None if there is no
    such batch); raises :class:`DamagedStore` (without a file) if it does not match."""
    crc_column = "crc" if has_crc else "NULL"
    row = db.execute(
        f"SELECT fmt, body, {crc_column} FROM batches WHERE id = ?", (batch_id,)
    ).fetchone()
    if row is None:
        return None
    fmt, body, check = row
    if not isinstance(body, bytes) or (check is not None and crc(body) != check):
        raise DamagedStore(f"batch {batch_id} does not match its checksum")
    return str(fmt), body


def stored_groups(db: sqlite3.Connection, batch_id: int, has_crc: bool) -> tuple[TraceGroup, ...]:
    """The trace groups of a stored batch, decoded from its body (checked against its
    checksum); raises :class:`DamagedStore` (without a file) if it cannot be read."""
    stored = checked_body(db, batch_id, has_crc)
    if stored is None:  # a reader's race with a writer that just removed a pure re-delivery
        return ()
    fmt, body = stored
    try:
        return decode_stored(fmt, body).traces
    except (TraceFormatError, ValueError) as exc:
        raise DamagedStore(f"batch {batch_id} cannot be decoded ({exc})") from None


def unindexed(db: sqlite3.Connection, version: int, below: int | None = None) -> list[int]:
    """The ids of stored batches without an index row (those below ``below``), in order:
    batches acknowledged whose writer stopped before indexing them (a batch that adds no span
    is never kept indexed-less: indexing deletes it)."""
    index = "main.batch_traces" if version >= 3 else "trace_batches"
    return [
        int(batch_id)
        for (batch_id,) in db.execute(
            f"SELECT id FROM batches WHERE id NOT IN (SELECT batch_id FROM {index}) AND id < ?"
            " ORDER BY id",
            (below if below is not None else 1 << 62,),
        )
    ]


def index_unindexed(
    db: sqlite3.Connection,
    has_crc: bool,
    ids: Sequence[int],
    index: Callable[[list[Unindexed]], object],
) -> int:
    """Index the batches ``ids`` (:func:`unindexed`), decoded from their bodies,
    ``_UNINDEXED_CHUNK`` per call of ``index``; returns how many there were."""
    if not ids:
        return 0
    _log.info("indexing %d stored batch(es) that were never indexed", len(ids))
    for start in range(0, len(ids), _UNINDEXED_CHUNK):
        index(
            [
                (batch_id, stored_groups(db, batch_id, has_crc))
                for batch_id in ids[start : start + _UNINDEXED_CHUNK]
            ]
        )
    return len(ids)
