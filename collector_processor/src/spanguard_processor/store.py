"""The durable span store: SQLite in WAL mode, one row per (trace_id, span_id).

* :meth:`SpanStore.put_spans` upserts a batch in one transaction and returns only after the
  commit (``synchronous=FULL``): the servers acknowledge a request after this returns, so an
  acknowledged span survives a crash, and a span delivered twice is stored once.
* :meth:`SpanStore.mark_released` records which traces the assembler released; a trace is
  ``partial`` while the store holds no parentless (root) span for it.
* :meth:`SpanStore.iter_agent_traces` converts released traces to agent traces on the fly,
  so late spans and later annotations are always merged in. Memory is bounded by one trace
  (plus the annotation spans, which are small).

Several stores (one per processor replica) are read together by
:func:`spanguard_processor.readers.read_agent_traces_any`.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from .convert import annotation_request_id, find_root, trace_from_records
from .model import AgentTrace
from .spans import EncodedSpan, SpanRecord, decode_span

__all__ = ["SQLITE_MAGIC", "SpanStore"]

SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    parent_span_id TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    annotation INTEGER NOT NULL,
    fmt TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS spans_annotations ON spans (annotation) WHERE annotation = 1;
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    released INTEGER NOT NULL DEFAULT 0,
    partial INTEGER NOT NULL DEFAULT 0,
    start_ns INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS traces_pending ON traces (released) WHERE released = 0;
"""

_UPSERT_SPAN = """
INSERT INTO spans (trace_id, span_id, parent_span_id, start_ns, annotation, fmt, body)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (trace_id, span_id) DO UPDATE SET
    parent_span_id = excluded.parent_span_id, start_ns = excluded.start_ns,
    annotation = excluded.annotation, fmt = excluded.fmt, body = excluded.body
"""

_RELEASE = """
UPDATE traces SET
    released = 1,
    partial = NOT EXISTS (
        SELECT 1 FROM spans WHERE spans.trace_id = traces.trace_id AND parent_span_id = ''),
    start_ns = COALESCE(
        (SELECT MIN(start_ns) FROM spans WHERE spans.trace_id = traces.trace_id), 0)
WHERE trace_id = ?
"""


class SpanStore:
    """A SQLite span store at ``path`` (created if missing unless ``readonly``).

    ``durable=False`` skips fsync; only for scratch stores that a crash may lose.
    """

    def __init__(self, path: Path | str, *, readonly: bool = False, durable: bool = True) -> None:
        self.path = Path(path)
        self.readonly = readonly
        try:
            if readonly:
                if not self.path.is_file():
                    raise TraceFormatError("does not exist.", file=str(self.path))
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
                self._db.execute("SELECT count(*) FROM spans").fetchone()
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False,
                                           isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'OFF'}")
                self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise TraceFormatError(
                f"is not a spanguard span store ({exc}).", file=str(self.path)
            ) from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SpanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ---------------------------------------------------------------------------

    def put_spans(self, spans: Sequence[EncodedSpan]) -> None:
        """Upsert spans in one transaction; returns after the commit is durable."""
        if not spans:
            return
        trace_ids = sorted({(s.trace_id,) for s in spans})
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                _UPSERT_SPAN,
                [
                    (s.trace_id, s.span_id, s.parent_span_id, s.start_ns, int(s.annotation),
                     s.fmt, s.payload)
                    for s in spans
                ],
            )
            db.executemany("INSERT INTO traces (trace_id) VALUES (?) ON CONFLICT DO NOTHING",
                           trace_ids)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def mark_released(self, trace_ids: Iterable[str]) -> None:
        """Mark traces released (assembled); late spans of a released trace keep it released."""
        rows = [(t,) for t in trace_ids]
        if not rows:
            return
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_RELEASE, rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def release_all(self) -> int:
        """Mark every pending trace released (after a file ingest); returns how many."""
        pending = [t for (t,) in self._db.execute(
            "SELECT trace_id FROM traces WHERE released = 0 ORDER BY trace_id")]
        self.mark_released(pending)
        return len(pending)

    # --- reading ---------------------------------------------------------------------------

    def pending_spans(self) -> Iterator[EncodedSpan]:
        """Spans of traces not yet released (bodies omitted), to refill an assembler on restart."""
        rows = self._db.execute(
            "SELECT s.trace_id, s.span_id, s.parent_span_id, s.start_ns, s.annotation"
            " FROM spans s JOIN traces t ON t.trace_id = s.trace_id"
            " WHERE t.released = 0 ORDER BY s.trace_id, s.span_id"
        )
        for trace_id, span_id, parent, start, annotation in rows:
            yield EncodedSpan(trace_id, span_id, parent, start, bool(annotation), "", b"")

    def span_count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM spans").fetchone()[0])

    def trace_counts(self) -> tuple[int, int]:
        """(released, pending) trace counts."""
        row = self._db.execute(
            "SELECT coalesce(sum(released), 0), coalesce(sum(1 - released), 0) FROM traces"
        ).fetchone()
        return int(row[0]), int(row[1])

    def span_ids(self) -> list[tuple[str, str]]:
        """Every stored (trace_id, span_id), sorted."""
        return list(self._db.execute("SELECT trace_id, span_id FROM spans ORDER BY 1, 2"))

    def trace_spans(self, trace_id: str) -> list[SpanRecord]:
        """The decoded spans of one trace, annotation spans excluded, in start order."""
        rows = self._db.execute(
            "SELECT trace_id, span_id, parent_span_id, start_ns, annotation, fmt, body FROM spans"
            " WHERE trace_id = ? AND annotation = 0 ORDER BY start_ns, span_id",
            (trace_id,),
        )
        return [decode_span(_encoded(row)) for row in rows]

    def _annotations(self) -> dict[str, list[SpanRecord]]:
        found: dict[str, list[SpanRecord]] = defaultdict(list)
        rows = self._db.execute(
            "SELECT trace_id, span_id, parent_span_id, start_ns, annotation, fmt, body FROM spans"
            " WHERE annotation = 1 ORDER BY trace_id, span_id"
        )
        for row in rows:
            record = decode_span(_encoded(row))
            request_id = annotation_request_id(record)
            if request_id is not None:
                found[request_id].append(record)
        return found

    def iter_agent_traces(self, *, include_pending: bool = False) -> Iterator[AgentTrace]:
        """Every released trace as an agent trace, by start time then trace id.

        With ``include_pending``, traces still in flight come too, marked partial. Traces made
        only of annotation spans are merged into their request's trace, not returned.
        """
        annotations = self._annotations()
        where = "" if include_pending else " WHERE released = 1"
        rows = self._db.execute(
            f"SELECT trace_id, released, partial FROM traces{where} ORDER BY start_ns, trace_id"
        ).fetchall()
        for trace_id, released, partial in rows:
            spans = self.trace_spans(trace_id)
            if not spans:
                continue
            root = find_root(spans)
            request_id = root.attributes.get(semconv.REQUEST_ID) if root else None
            yield trace_from_records(
                spans,
                annotations.get(str(request_id), []) if request_id is not None else [],
                partial=bool(partial) or not released,
            )


def _encoded(row: tuple[str, str, str, int, int, str, bytes]) -> EncodedSpan:
    trace_id, span_id, parent, start, annotation, fmt, body = row
    return EncodedSpan(trace_id, span_id, parent, start, bool(annotation), fmt, body)
