"""The durable span store: SQLite in WAL mode, one row per (trace_id, span_id).

* :meth:`SpanStore.put_batches` stores received batches (each OTLP request or file line once,
  still encoded) and indexes their spans by (trace_id, span_id) in one transaction, returning
  only after the commit (``synchronous=FULL``): the servers acknowledge a request after this
  returns, so an acknowledged span survives a crash. The upsert is idempotent: a span delivered
  twice (exporter retries) keeps its first row, and a batch none of whose spans is new is not
  kept.
* :meth:`SpanStore.mark_released` records which traces the assembler released; a trace is
  ``partial`` while the store holds no parentless (root) span for it.
* :meth:`SpanStore.iter_agent_traces` converts released traces to agent traces on the fly,
  so late spans and later annotations are always merged in. Memory is bounded by one trace
  (plus the annotation spans, which are small).

Several stores (one per processor replica) are read together by
:func:`spanguard_processor.inputs.readers.read_agent_traces_any`.

**Integrity.** Every open checks the store before anything is read or written: the SQLite
header, the schema and its version (``PRAGMA user_version``) and ``PRAGMA quick_check``; a
writable open (``serve``, ``ingest``) also checks every stored batch against the CRC-32 kept
beside it, so nothing is acknowledged into a damaged store. Reading checks each batch again
and that it holds the span its index row names. Anything wrong raises :class:`DamagedStore`
(an :class:`~spanguard.exceptions.InputError` naming the file and the problem), never a raw
``sqlite3`` error;
:func:`spanguard_processor.collector.salvage.recover_store` copies what is readable
into a new store.
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from spanguard.exceptions import TraceFormatError

from ..ingest.batches import decode_batch
from ..ingest.spans import DecodedBatch, EncodedSpan, SpanRecord
from ..traces.annotations import Annotations
from ..traces.convert import annotated_trace, conversation_key
from ..traces.model import AgentTrace

__all__ = ["SCHEMA_VERSION", "SQLITE_MAGIC", "DamagedStore", "SpanStore", "looks_like_store"]

SQLITE_MAGIC = b"SQLite format 3\x00"
SCHEMA_VERSION = 1  # 0: stores written before batches carried a CRC-32
_PARSED_CACHE = 32  # parsed batches kept while converting (traces share batches)
# SQLite result codes that mean the file itself is damaged: CORRUPT, NOTADB
_DAMAGE_CODES = frozenset({11, 26})

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY,
    fmt TEXT NOT NULL,
    body BLOB NOT NULL,
    crc INTEGER
);
CREATE TABLE IF NOT EXISTS spans (
    trace_id TEXT NOT NULL,
    span_id TEXT NOT NULL,
    parent_span_id TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    annotation INTEGER NOT NULL,
    batch_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (trace_id, span_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS spans_annotations ON spans (annotation) WHERE annotation = 1;
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    released INTEGER NOT NULL DEFAULT 0,
    start_ns INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS traces_pending ON traces (released) WHERE released = 0;
"""

_UPSERT_SPAN = """
INSERT INTO spans (trace_id, span_id, parent_span_id, start_ns, annotation, batch_id, position)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (trace_id, span_id) DO NOTHING
"""

_COLUMNS = {
    "batches": ("id", "fmt", "body"),
    "spans": ("trace_id", "span_id", "parent_span_id", "start_ns", "annotation", "batch_id",
              "position"),
    "traces": ("trace_id", "released", "start_ns"),
}
# One query per table finding a row no put_batches() could have written (a damaged one).
_HEX_ID = "(typeof({c}) != 'text' OR length({c}) != {n} OR {c} GLOB '*[^0-9a-f]*')"
_MALFORMED_ROWS = {
    "spans": "SELECT trace_id || '/' || span_id FROM spans WHERE "
             + " OR ".join([_HEX_ID.format(c="trace_id", n=32), _HEX_ID.format(c="span_id", n=16),
                            "(parent_span_id != '' AND "
                            + _HEX_ID.format(c="parent_span_id", n=16) + ")",
                            "typeof(start_ns) != 'integer'", "annotation NOT IN (0, 1)",
                            "typeof(position) != 'integer'", "position < 0",
                            "batch_id NOT IN (SELECT id FROM batches)"])
             + " LIMIT 1",
    "traces": "SELECT trace_id FROM traces WHERE "
              + _HEX_ID.format(c="trace_id", n=32)
              + " OR released NOT IN (0, 1) OR typeof(start_ns) != 'integer' LIMIT 1",
}
_PAGE = 4096  # SQLite's default page size, which every span store is created with
_BTREE_PAGES = (b"\x02", b"\x05", b"\x0a", b"\x0d")
# The schema's own text sits in page 1 of every store, after the 100-byte SQLite header.
_SCHEMA_MARK = b"CREATE TABLE spans (\n    trace_id TEXT NOT NULL"

_RELEASE = "UPDATE traces SET released = 1 WHERE trace_id = ?"
_ADD_TRACE = """
INSERT INTO traces (trace_id, start_ns) VALUES (?, ?)
ON CONFLICT (trace_id) DO UPDATE SET start_ns = min(start_ns, excluded.start_ns)
"""


class DamagedStore(TraceFormatError):
    """A span store whose file is damaged: SQLite or spanguard cannot read back what was written."""

    def __init__(self, problem: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.problem = problem
        detail = problem if problem.startswith("is a damaged span store") else (
            f"is a damaged span store ({problem.rstrip('.')}); nothing more is read from or "
            "written to it. `spanguard store recover` copies what is still readable into a new "
            "store.")
        super().__init__(detail, file=file, line=line, field=field)


def looks_like_store(path: Path, head: bytes) -> bool:
    """True when ``path`` (whose first bytes are ``head``) is a span store, even one whose
    SQLite header was overwritten: the schema's text survives further into page 1."""
    if head.startswith(SQLITE_MAGIC):
        return True
    if Path(f"{path}-wal").exists():
        return True
    try:
        with path.open("rb") as handle:
            start = handle.read(65536)
    except OSError:
        return False
    # pages 2-6 are always the roots of the store's tables and indexes: B-tree pages
    roots = [start[page * _PAGE: page * _PAGE + 1] for page in range(1, 6)]
    return _SCHEMA_MARK in start or (
        len(start) >= 6 * _PAGE and path.stat().st_size % _PAGE == 0
        and all(root in _BTREE_PAGES for root in roots))


def _crc(body: bytes) -> int:
    return zlib.crc32(body)


class SpanStore:
    """A SQLite span store at ``path`` (created if missing unless ``readonly``).

    ``durable=False`` skips fsync; only for scratch stores that a crash may lose. The store is
    checked on open (see the module docstring); ``verify_batches`` (the default for a writable
    store) also checks every stored batch against its checksum.
    """

    def __init__(self, path: Path | str, *, readonly: bool = False, durable: bool = True,
                 verify_batches: bool | None = None) -> None:
        self.path = Path(path)
        self.readonly = readonly
        self._parsed: dict[int, Callable[[int], SpanRecord]] = {}
        self._has_crc = True
        self._version = SCHEMA_VERSION
        self._db: sqlite3.Connection | None = None
        try:
            self._open(durable)
            if verify_batches if verify_batches is not None else not readonly:
                self.verify_batches()
        except BaseException:
            if self._db is not None:
                self._db.close()
            raise

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "the store is closed"
        return self._db

    def _damaged(self, problem: str) -> DamagedStore:
        return DamagedStore(problem, file=str(self.path))

    def _open_error(self, exc: sqlite3.Error) -> TraceFormatError:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code in _DAMAGE_CODES or not isinstance(exc, sqlite3.OperationalError):
            return self._damaged(str(exc))
        action = "read" if self.readonly else "opened for writing"
        return TraceFormatError(f"cannot be {action} ({exc}).", file=str(self.path))

    def _open(self, durable: bool) -> None:
        existed = self.path.is_file() and self.path.stat().st_size > 0
        if self.readonly and not self.path.is_file():
            raise TraceFormatError("does not exist.", file=str(self.path))
        if existed:
            self._check_header()
        try:
            if self.readonly:
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False,
                                           isolation_level=None)
            # everything is checked before anything (even the journal mode) is written
            fresh = self._check_schema()
            self._quick_check()
            if not self.readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute(f"PRAGMA synchronous={'FULL' if durable else 'OFF'}")
                if fresh:
                    self.db.executescript(_SCHEMA)
                    self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                elif not self._has_crc or self._version < SCHEMA_VERSION:
                    self._upgrade()
                # fail now, not at the first request, if the store is not writable
                self.db.execute("BEGIN IMMEDIATE")
                self.db.execute("COMMIT")
        except OSError as exc:
            reason = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
            raise TraceFormatError(f"cannot be created ({reason}).", file=str(self.path)) from None
        except sqlite3.Error as exc:
            raise self._open_error(exc) from None

    def _check_header(self) -> None:
        try:
            with self.path.open("rb") as handle:
                head = handle.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise TraceFormatError(f"cannot be read ({exc.strerror or exc}).",
                                   file=str(self.path)) from None
        if head == SQLITE_MAGIC:
            return
        if looks_like_store(self.path, head):
            raise self._damaged("its SQLite header is overwritten")
        raise TraceFormatError("is not a spanguard span store (not a SQLite database).",
                               file=str(self.path))

    def _check_schema(self) -> bool:
        """Check the tables and the store version; True for an empty database (a new store)."""
        db = self.db
        self._version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if self._version > SCHEMA_VERSION:
            raise TraceFormatError(
                f"was written by a newer spanguard (store version {self._version}; this one "
                f"reads versions up to {SCHEMA_VERSION}); upgrade spanguard.",
                file=str(self.path))
        tables = {name: [row[1] for row in db.execute(f"PRAGMA table_info({name})")]
                  for (name,) in db.execute(
                      "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
        if not tables and not self.readonly:
            return True
        if not any(name in tables for name in _COLUMNS):
            raise TraceFormatError(
                "is a SQLite database but not a spanguard span store (it has no table "
                f"{', '.join(sorted(_COLUMNS))}).", file=str(self.path))
        for name, columns in _COLUMNS.items():
            if name not in tables:
                raise self._damaged(f"table {name} is missing")
            missing = [c for c in columns if c not in tables[name]]
            if missing:
                raise self._damaged(f"table {name} lacks column(s) {', '.join(missing)}")
        self._has_crc = "crc" in tables["batches"]
        return False

    def _upgrade(self) -> None:
        """Version 0 -> 1: give every stored batch its checksum."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if not self._has_crc:
                db.execute("ALTER TABLE batches ADD COLUMN crc INTEGER")
            db.create_function("spanguard_crc", 1, _crc, deterministic=True)
            db.execute("UPDATE batches SET crc = spanguard_crc(body) WHERE crc IS NULL")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._has_crc = True

    def _quick_check(self) -> None:
        problems = [row[0] for row in self.db.execute("PRAGMA quick_check(5)")]
        if problems != ["ok"]:
            raise self._damaged("; ".join(str(p).replace("\n", " ").strip()
                                          for p in problems))

    def verify_batches(self) -> int:
        """Check every stored batch against its checksum, and that every index row is
        well-formed and names a stored batch; returns how many batches were checked."""
        checked = 0
        with self._reading():
            if self._has_crc:
                for batch_id, body, crc in self.db.execute("SELECT id, body, crc FROM batches"):
                    if crc is not None and (not isinstance(body, bytes) or _crc(body) != crc):
                        raise self._damaged(f"batch {batch_id} does not match its checksum")
                    checked += 1
            for table, query in _MALFORMED_ROWS.items():
                row = self.db.execute(query).fetchone()
                if row is not None:
                    raise self._damaged(f"a row of table {table} is malformed ({row[0]!r})")
        return checked

    def check_index(self) -> int:
        """``PRAGMA integrity_check``, then every index row against the span its batch holds
        at that position; returns how many batches were read."""
        with self._reading():
            problems = [row[0] for row in self.db.execute("PRAGMA integrity_check(5)")]
            if problems != ["ok"]:
                raise self._damaged("; ".join(str(p).replace("\n", " ").strip()
                                              for p in problems))
            batches: set[int] = set()
            rows = self.db.execute(
                "SELECT trace_id, span_id, batch_id, position FROM spans"
                " ORDER BY batch_id, position")
            for trace_id, span_id, batch_id, position in rows:
                self._record(trace_id, span_id, batch_id, position)
                batches.add(batch_id)
        return len(batches)

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """SQLite finding damage while reading becomes :class:`DamagedStore`."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            if isinstance(exc, sqlite3.OperationalError) and code not in _DAMAGE_CODES:
                raise
            raise self._damaged(str(exc)) from None

    def close(self) -> None:
        """Close the store; a writable one is checkpointed first, so its WAL is emptied."""
        if self._db is None:
            return
        if not self.readonly:
            # e.g. a full disk: the WAL then stays, and nothing in it is lost
            with suppress(sqlite3.Error):
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._db.close()
        self._db = None

    def __enter__(self) -> SpanStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing ---------------------------------------------------------------------------

    def put_batches(self, batches: Sequence[DecodedBatch], *,
                    release: Sequence[str] = ()) -> int:
        """Store batches and index their spans in one transaction; returns after a durable
        commit. Returns how many spans were new (the rest were already stored). Traces in
        ``release`` are marked released in the same transaction."""
        batches = [b for b in batches if b.spans]
        if not batches:
            self.mark_released(release)
            return 0
        db = self.db
        new = 0
        db.execute("BEGIN IMMEDIATE")
        try:
            for batch in batches:
                cursor = db.execute("INSERT INTO batches (fmt, body, crc) VALUES (?, ?, ?)",
                                    (batch.fmt, batch.body, _crc(batch.body)))
                batch_id = cursor.lastrowid
                before = db.total_changes
                db.executemany(_UPSERT_SPAN, (  # rows made one at a time, never all at once
                    (trace, span, parent, start, annotation, batch_id, position)
                    for trace, span, parent, start, annotation, position in batch.spans
                ))
                added = db.total_changes - before
                if added == 0:  # a pure re-delivery: keep nothing
                    db.execute("DELETE FROM batches WHERE id = ?", (batch_id,))
                new += added
            starts: dict[str, int] = {}
            for batch in batches:
                for trace, _, _, start, _, _ in batch.spans:
                    known = starts.get(trace)
                    if known is None or start < known:
                        starts[trace] = start
            db.executemany(_ADD_TRACE, sorted(starts.items()))
            if release:
                db.executemany(_RELEASE, [(t,) for t in release])
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                db.execute("ROLLBACK")
            raise
        return new

    def mark_released(self, trace_ids: Iterable[str]) -> None:
        """Mark traces released (assembled); late spans of a released trace keep it released."""
        rows = [(t,) for t in trace_ids]
        if not rows:
            return
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_RELEASE, rows)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may have rolled back already (SQLITE_FULL)
                db.execute("ROLLBACK")
            raise

    def release_all(self) -> int:
        """Mark every pending trace released (after a file ingest); returns how many."""
        pending = [t for (t,) in self.db.execute(
            "SELECT trace_id FROM traces WHERE released = 0 ORDER BY trace_id")]
        self.mark_released(pending)
        return len(pending)

    # --- reading ---------------------------------------------------------------------------

    def pending_spans(self) -> Iterator[EncodedSpan]:
        """Spans of traces not yet released (bodies omitted), to refill an assembler on restart."""
        with self._reading():
            rows = self.db.execute(
                "SELECT s.trace_id, s.span_id, s.parent_span_id, s.start_ns, s.annotation"
                " FROM spans s JOIN traces t ON t.trace_id = s.trace_id"
                " WHERE t.released = 0 ORDER BY s.trace_id, s.span_id"
            )
            for trace_id, span_id, parent, start, annotation in rows:
                yield EncodedSpan(trace_id, span_id, parent, start, bool(annotation), -1)

    def span_count(self) -> int:
        with self._reading():
            return int(self.db.execute("SELECT count(*) FROM spans").fetchone()[0])

    def trace_counts(self) -> tuple[int, int]:
        """(released, pending) trace counts."""
        with self._reading():
            row = self.db.execute(
                "SELECT coalesce(sum(released), 0), coalesce(sum(1 - released), 0) FROM traces"
            ).fetchone()
        return int(row[0]), int(row[1])

    def span_ids(self) -> list[tuple[str, str]]:
        """Every stored (trace_id, span_id), sorted."""
        with self._reading():
            return list(self.db.execute("SELECT trace_id, span_id FROM spans ORDER BY 1, 2"))

    def _records(self, where: str, args: tuple[object, ...],
                 skipped: list[str] | None = None) -> list[SpanRecord]:
        """The spans matching ``where``, decoded from their batches and checked against their
        index rows; an unreadable one raises :class:`DamagedStore`, or with ``skipped`` is
        left out and described there."""
        with self._reading():
            rows = self.db.execute(
                "SELECT s.trace_id, s.span_id, s.batch_id, s.position FROM spans s"
                f" WHERE {where} ORDER BY s.start_ns, s.span_id",
                args,
            ).fetchall()
            records = []
            for trace_id, span_id, batch_id, position in rows:
                try:
                    records.append(self._record(trace_id, span_id, batch_id, position))
                except DamagedStore as exc:
                    if skipped is None:
                        raise
                    skipped.append(exc.problem)
        return records

    def _record(self, trace_id: object, span_id: object, batch_id: object,
                position: object) -> SpanRecord:
        where = f"span {trace_id}/{span_id}"
        if not isinstance(batch_id, int) or not isinstance(position, int):
            raise self._damaged(f"the index row of {where} is unreadable")
        batch = self._parsed.get(batch_id)
        if batch is None:
            with self._reading():
                crc_column = "crc" if self._has_crc else "NULL"
                row = self.db.execute(f"SELECT fmt, body, {crc_column} FROM batches WHERE id = ?",
                                      (batch_id,)).fetchone()
            if row is None:
                raise self._damaged(f"batch {batch_id}, which holds {where}, is missing")
            fmt, body, crc = row
            if not isinstance(body, bytes) or (crc is not None and _crc(body) != crc):
                raise self._damaged(f"batch {batch_id} does not match its checksum")
            try:
                batch = decode_batch(fmt, body)
            except (TraceFormatError, ValueError) as exc:
                raise self._damaged(f"batch {batch_id} cannot be decoded ({exc})") from None
            if len(self._parsed) >= _PARSED_CACHE:
                self._parsed.pop(next(iter(self._parsed)))
            self._parsed[batch_id] = batch
        try:
            record = batch(position)
        except (IndexError, TraceFormatError, ValueError):
            record = None
        if record is None or (record.trace_id, record.span_id) != (trace_id, span_id):
            raise self._damaged(f"batch {batch_id} does not hold {where} at position {position}")
        return record

    def trace_spans(self, trace_id: str) -> list[SpanRecord]:
        """The decoded spans of one trace, annotation spans excluded, in start order."""
        return self._records("s.trace_id = ? AND s.annotation = 0", (trace_id,))

    def annotations(self, skipped: list[str] | None = None) -> Annotations:
        """Annotation spans by the request id they annotate; with ``skipped``, unreadable ones
        are left out and described there instead of raising :class:`DamagedStore`."""
        return Annotations(self._records("s.annotation = 1", (), skipped))

    def iter_agent_traces(
        self,
        *,
        include_pending: bool = False,
        annotations: Annotations | None = None,
        skipped: list[str] | None = None,
    ) -> Iterator[AgentTrace]:
        """Every released trace as an agent trace, by start time then trace id.

        With ``include_pending``, traces still in flight come too, marked partial. Traces made
        only of annotation spans are merged into their request's trace, not returned;
        ``annotations`` replaces this store's own (to merge those of several partitions).
        A trace with an unreadable span raises :class:`DamagedStore`; with ``skipped`` it is
        left out and the problem appended there.
        Parentless model calls of one conversation (see :func:`conversation_key`) come out as
        one request, after the other traces, in order of their first call.
        """
        if annotations is None:
            annotations = self.annotations(skipped)
        where = "" if include_pending else " WHERE released = 1"
        with self._reading():
            rows = self.db.execute(
                f"SELECT trace_id, released FROM traces{where} ORDER BY start_ns, trace_id"
            ).fetchall()
        conversations: dict[str, tuple[list[SpanRecord], bool]] = {}
        for trace_id, released in rows:
            try:
                spans = self.trace_spans(trace_id)
            except DamagedStore as exc:
                if skipped is None:
                    raise
                skipped.append(f"trace {trace_id}: {exc.problem}")
                continue
            if not spans:
                continue
            key = conversation_key(spans)
            if key is not None:
                held, partial = conversations.get(key, ([], False))
                held.extend(spans)
                conversations[key] = (held, partial or not released)
                continue
            yield annotated_trace(spans, annotations,
                                  partial=not released or not any(span.is_root for span in spans))
        for held, partial in conversations.values():
            held.sort(key=lambda span: (span.start_ns, span.span_id))
            yield annotated_trace(held, annotations, partial=partial)

