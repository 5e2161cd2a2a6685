"""Reading spans back out of a span store: an index row's spans from their stored batch.

Used by :class:`~spanguard_processor.store.span_store.SpanStore`: :class:`StoredBatches` decodes
stored batches (a few kept parsed, as a trace's rows share them) and checks that a batch holds
every span its index row names. (Agent traces are assembled from the records by the readers:
:mod:`spanguard_processor.inputs.stored_traces`.)
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from spanguard import semconv
from spanguard.exceptions import TraceFormatError

from ..ingest.batches import ParsedBatch, parse_batch
from ..ingest.spans import SpanRecord
from .index import checked_body, ids_of
from .schema import DamagedStore

__all__ = ["StoredBatches", "is_annotation", "not_annotation"]

_PARSED_CACHE = 32  # parsed batches kept while converting (traces share batches)


def is_annotation(record: SpanRecord) -> bool:
    """Whether a span is an annotation span (feedback recorded after its request)."""
    return record.name == semconv.SPAN_ANNOTATION


def not_annotation(record: SpanRecord) -> bool:
    return record.name != semconv.SPAN_ANNOTATION


class StoredBatches:
    """The stored batches of one store, parsed on demand (the most recent few kept)."""

    def __init__(self, has_crc: bool, damaged: Callable[[str], DamagedStore]) -> None:
        self._has_crc = has_crc
        self._damaged = damaged
        self._parsed: dict[int, ParsedBatch] = {}

    def row_records(
        self, db: sqlite3.Connection, trace_id: object, batch_id: object, span_ids: object
    ) -> list[SpanRecord]:
        """The spans one index row names, from its batch (each checked to be there); raises
        :class:`DamagedStore` (made by ``damaged``) if the row or its batch cannot be read."""
        if (
            not isinstance(trace_id, str)
            or not isinstance(batch_id, int)
            or not isinstance(span_ids, bytes)
            or len(span_ids) % 8
        ):
            raise self._damaged(
                f"the index row of trace {trace_id} in batch {batch_id} is unreadable"
            )
        batch = self._parsed.get(batch_id) or self._parse(db, trace_id, batch_id)
        wanted = {span_id.hex() for span_id in ids_of(span_ids)}
        records = []
        for position in batch.positions(trace_id):
            try:
                record = batch.record(position)
            except (IndexError, TraceFormatError, ValueError):
                raise self._damaged(
                    f"batch {batch_id} cannot be decoded at span {position}"
                ) from None
            if record.span_id in wanted:
                wanted.discard(record.span_id)
                records.append(record)
        if wanted:
            raise self._damaged(f"batch {batch_id} does not hold span {trace_id}/{min(wanted)}")
        return records

    def check_rows(self, db: sqlite3.Connection) -> int:
        """``PRAGMA integrity_check``, then every row of the per-trace view against the spans
        its batch holds; returns how many batches were read."""
        problems = [row[0] for row in db.execute("PRAGMA integrity_check(5)")]
        if problems != ["ok"]:
            raise self._damaged("; ".join(str(p).replace("\n", " ").strip() for p in problems))
        batches: set[int] = set()
        rows = db.execute(
            "SELECT trace_id, batch_id, span_ids FROM trace_batches ORDER BY batch_id, trace_id"
        )
        for trace_id, batch_id, span_ids in rows:
            self.row_records(db, trace_id, batch_id, span_ids)
            batches.add(batch_id)
        return len(batches)

    def _parse(self, db: sqlite3.Connection, trace_id: str, batch_id: int) -> ParsedBatch:
        try:
            stored = checked_body(db, batch_id, self._has_crc)
        except DamagedStore as exc:
            raise self._damaged(exc.problem) from None
        if stored is None:
            raise self._damaged(
                f"batch {batch_id}, which holds spans of trace {trace_id}, is missing"
            )
        fmt, body = stored
        try:
            batch = parse_batch(fmt, body)
        except (TraceFormatError, ValueError) as exc:
            raise self._damaged(f"batch {batch_id} cannot be decoded ({exc})") from None
        if len(self._parsed) >= _PARSED_CACHE:
            self._parsed.pop(next(iter(self._parsed)))
        self._parsed[batch_id] = batch
        return batch
