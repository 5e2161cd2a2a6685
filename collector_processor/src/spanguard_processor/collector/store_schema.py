"""The span store's file: its schema and version, the checks made on every open, upgrades.

**Schema (version 3).** ``batches`` holds every stored batch (an OTLP request, a file line
or document) as received, with the CRC-32 of its body; ``batch_traces`` indexes each with one
row: its spans grouped by trace, packed in a blob (per trace: the 8-byte ids of its spans new
to the store, their earliest start, whether the trace's root is among them and how many are
annotation spans; :mod:`~spanguard_processor.collector.store_view`), with its CRC-32;
``releases`` holds one row per commit that marked traces released: their 16-byte ids, packed,
with a CRC-32. So a commit writes a row per batch and one for its releases, not rows per
trace. Readers see the per-trace tables of version 2 (``trace_batches``: one row per (trace,
batch); ``traces``: one row per trace, its earliest start and whether it is released) as
temporary tables built from these when first read
(:class:`~spanguard_processor.collector.store_view.TraceView`).

Version 2 kept those per-trace tables in the file (three rows written per trace and
commit); version 1 indexed every span with a row of its own (``spans``); version 0 lacked
the checksums. A writable open upgrades an older store in place, in one transaction; a
read-only open reads it as it is (a version-1 index through a temporary ``trace_batches``
built at open).

**Integrity.** Every open (:func:`open_database`) checks the store before anything is read or
written: the SQLite header, the schema and its version (``PRAGMA user_version``) and
``PRAGMA quick_check``; :func:`verify_rows` checks every batch against its checksum and every
index row's form.
Anything wrong raises :class:`DamagedStore` (an :class:`~spanguard.exceptions.InputError`
naming the file and the problem), never a raw ``sqlite3`` error.
"""

from __future__ import annotations

import sqlite3
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import NamedTuple, TypeVar

from spanguard.exceptions import TraceFormatError

from ..ingest.spans import TraceGroup

__all__ = [
    "MAX_NS",
    "PAGE_SIZE",
    "SCHEMA_VERSION",
    "SQLITE_MAGIC",
    "VIEW_SCHEMA",
    "DamagedStore",
    "OpenStore",
    "check_schema",
    "checked_blob",
    "crc",
    "index_version1",
    "looks_like_store",
    "open_database",
    "overlay_index",
    "pack_group",
    "pack_trace_ids",
    "unpack_groups",
    "unpack_trace_ids",
    "upgrade",
    "verify_rows",
]

_T = TypeVar("_T")
SQLITE_MAGIC = b"SQLite format 3\x00"
SCHEMA_VERSION = 3  # 2: rows per trace; 1: one index row per span; 0: batches without a CRC-32
# SQLite result codes that mean the file itself is damaged: CORRUPT, NOTADB
DAMAGE_CODES = frozenset({11, 26})

_BATCHES = """
CREATE TABLE IF NOT EXISTS batches (
    id INTEGER PRIMARY KEY,
    fmt TEXT NOT NULL,
    body BLOB NOT NULL,
    crc INTEGER
);
"""
_TRACE_BATCHES = """
CREATE {temp} TABLE IF NOT EXISTS trace_batches (
    trace_id TEXT NOT NULL,
    batch_id INTEGER NOT NULL,
    span_ids BLOB NOT NULL,
    root INTEGER NOT NULL,
    annotations INTEGER NOT NULL,
    PRIMARY KEY (trace_id, batch_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {schema}trace_batches_annotations ON trace_batches (annotations)
    WHERE annotations > 0;
"""
_TRACES = """
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    released INTEGER NOT NULL DEFAULT 0,
    start_ns INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
"""
_LOG = """
CREATE TABLE IF NOT EXISTS batch_traces (
    batch_id INTEGER PRIMARY KEY,
    groups BLOB NOT NULL,
    crc INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY,
    trace_ids BLOB NOT NULL,
    crc INTEGER NOT NULL
);
"""
SCHEMA = _BATCHES + _LOG
#: The per-trace tables readers query, as temporary tables (a version-3 store's view, or a
#: read-only overlay of an older store's index).
VIEW_SCHEMA = (_TRACE_BATCHES.format(temp="TEMP", schema="temp.")
               + _TRACES.replace("TABLE IF NOT EXISTS", "TEMP TABLE IF NOT EXISTS"))

_COLUMNS = {
    "batches": ("id", "fmt", "body"),
    "batch_traces": ("batch_id", "groups", "crc"),
    "releases": ("id", "trace_ids", "crc"),
}
_COLUMNS_V2 = {
    "batches": ("id", "fmt", "body"),
    "trace_batches": ("trace_id", "batch_id", "span_ids", "root", "annotations"),
    "traces": ("trace_id", "released", "start_ns"),
}
_COLUMNS_V1 = {**{k: v for k, v in _COLUMNS_V2.items() if k != "trace_batches"},
               "spans": ("trace_id", "span_id", "parent_span_id", "annotation", "batch_id",
                         "position")}
# One query per table of a version-2 store (or of the temporary tables readers query) finding
# a row no writer could have written (a damaged one).
_HEX_ID = "(typeof({c}) != 'text' OR length({c}) != {n} OR {c} GLOB '*[^0-9a-f]*')"
MALFORMED_VIEW_ROWS = {
    "trace_batches": "SELECT trace_id || '/' || batch_id FROM trace_batches WHERE "
                     + " OR ".join([_HEX_ID.format(c="trace_id", n=32),
                                    "typeof(span_ids) != 'blob'", "length(span_ids) = 0",
                                    "length(span_ids) % 8 != 0", "root NOT IN (0, 1)",
                                    "typeof(annotations) != 'integer'", "annotations < 0",
                                    "annotations > length(span_ids) / 8",
                                    "batch_id NOT IN (SELECT id FROM batches)"])
                     + " LIMIT 1",
    "traces": "SELECT trace_id FROM traces WHERE "
              + _HEX_ID.format(c="trace_id", n=32)
              + " OR released NOT IN (0, 1) OR typeof(start_ns) != 'integer' LIMIT 1",
}
# The same for a version-3 store's own tables (their blobs are checked by their CRC-32 and
# when unpacked).
MALFORMED_ROWS = {
    "batch_traces": "SELECT batch_id FROM batch_traces WHERE typeof(groups) != 'blob'"
                    " OR length(groups) = 0 OR typeof(crc) != 'integer'"
                    " OR batch_id NOT IN (SELECT id FROM batches) LIMIT 1",
    "releases": "SELECT id FROM releases WHERE typeof(trace_ids) != 'blob'"
                " OR length(trace_ids) = 0 OR length(trace_ids) % 16 != 0"
                " OR typeof(crc) != 'integer' LIMIT 1",
}
#: The page size of new stores (stores of version 1 and older have SQLite's default, 4 KiB).
#: Stored bodies span many pages, and SQLite writes, logs and checkpoints page by page: 16 KiB
#: pages cost 0.7 of 4 KiB ones in CPU per stored span (bench/bench_store_index.py).
PAGE_SIZE = 16384
_PAGE_SIZES = (PAGE_SIZE, 4096)
_BTREE_PAGES = (b"\x02", b"\x05", b"\x0a", b"\x0d")
# The schema's own text sits in page 1 of every store, after the 100-byte SQLite header
# (stores of version 1 and older created the per-span index first).
_ROOT_PAGES = 3  # pages 2-4 are the roots of the first three tables or indexes in every version
_SCHEMA_MARKS = (b"CREATE TABLE batches (\n    id INTEGER PRIMARY KEY,\n    fmt TEXT NOT NULL",
                 b"CREATE TABLE spans (\n    trace_id TEXT NOT NULL")


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
            start = handle.read(6 * PAGE_SIZE)
    except OSError:
        return False
    if any(mark in start for mark in _SCHEMA_MARKS):
        return True
    # pages 2-4 are always the roots of the store's tables and indexes: B-tree pages
    return any(
        len(start) >= (_ROOT_PAGES + 1) * size and path.stat().st_size % size == 0
        and all(start[page * size: page * size + 1] in _BTREE_PAGES
                for page in range(1, _ROOT_PAGES + 1))
        for size in _PAGE_SIZES)


def crc(body: bytes) -> int:
    """The checksum kept beside every stored batch and index blob."""
    return zlib.crc32(body)


# --- the blobs of a version-3 store --------------------------------------------------------

#: Per trace group in a ``batch_traces`` blob: the trace id (16 bytes), the earliest start
#: (ns), whether the root is among the spans, how many are annotation spans, how many spans;
#: then the spans' 8-byte ids. Little-endian.
_GROUP = struct.Struct("<16sqBII")
#: SQLite's largest integer: a (hostile) start time beyond it is stored as this.
MAX_NS = (1 << 63) - 1
pack_group = _GROUP.pack


def unpack_groups(blob: bytes) -> list[TraceGroup]:
    """The trace groups packed in a ``batch_traces`` blob; ``ValueError`` if it is malformed."""
    groups: list[TraceGroup] = []
    unpack_from, size, at, end = _GROUP.unpack_from, _GROUP.size, 0, len(blob)
    try:
        while at < end:
            trace_id, start, root, notes, count = unpack_from(blob, at)
            at += size
            stop = at + 8 * count
            if not count or stop > end or root > 1 or notes > count or start < 0:
                raise ValueError(f"a malformed trace group at byte {at - size}")
            groups.append(TraceGroup(trace_id.hex(), blob[at:stop], start, bool(root), notes))
            at = stop
    except struct.error as exc:
        raise ValueError(f"a truncated trace group at byte {at} ({exc})") from None
    if not groups:
        raise ValueError("no trace group")
    return groups


def pack_trace_ids(trace_ids: Iterable[str]) -> bytes:
    """Trace ids (hex) as a ``releases`` blob."""
    return b"".join(map(bytes.fromhex, trace_ids))


def unpack_trace_ids(blob: bytes) -> list[str]:
    """The trace ids (hex) in a ``releases`` blob; ``ValueError`` if it is malformed."""
    if not blob or len(blob) % 16:
        raise ValueError(f"{len(blob)} bytes is not a whole number of trace ids")
    return [blob[at:at + 16].hex() for at in range(0, len(blob), 16)]


def check_schema(db: sqlite3.Connection, path: Path, readonly: bool
                 ) -> tuple[bool, int, bool]:
    """Check the tables and the store version: (an empty database, i.e. a new store;
    the version; whether batches carry a checksum)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise TraceFormatError(
            f"was written by a newer spanguard (store version {version}; this one "
            f"reads versions up to {SCHEMA_VERSION}); upgrade spanguard.", file=str(path))
    tables = {name: [row[1] for row in db.execute(f"PRAGMA table_info({name})")]
              for (name,) in db.execute(
                  "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
    if not tables and not readonly:
        return True, SCHEMA_VERSION, True
    expected = (_COLUMNS if version >= 3 else _COLUMNS_V2 if version == 2 else _COLUMNS_V1)
    if not any(name in tables for name in {*_COLUMNS, *_COLUMNS_V2, *_COLUMNS_V1}):
        raise TraceFormatError(
            "is a SQLite database but not a spanguard span store (it has no table "
            f"{', '.join(sorted(_COLUMNS))}).", file=str(path))
    for name, columns in expected.items():
        if name not in tables:
            raise DamagedStore(f"table {name} is missing", file=str(path))
        missing = [c for c in columns if c not in tables[name]]
        if missing:
            raise DamagedStore(f"table {name} lacks column(s) {', '.join(missing)}",
                               file=str(path))
    return False, version, "crc" in tables["batches"]


def _version1_rows(db: sqlite3.Connection) -> Iterator[tuple[str, int, bytes, int, int]]:
    """The rows of ``trace_batches`` a version-1 store's per-span index amounts to."""
    rows = db.execute("SELECT trace_id, batch_id, span_id, parent_span_id, annotation FROM spans"
                      " ORDER BY trace_id, batch_id, position")
    key: tuple[str, int] | None = None
    ids: list[bytes] = []
    root = notes = 0
    for trace_id, batch_id, span_id, parent, annotation in rows:
        if (trace_id, batch_id) != key:
            if key is not None:
                yield key[0], key[1], b"".join(ids), root, notes
            key, ids, root, notes = (trace_id, batch_id), [], 0, 0
        ids.append(bytes.fromhex(span_id))
        root |= not parent
        notes += bool(annotation)
    if key is not None:
        yield key[0], key[1], b"".join(ids), root, notes


def _insert_version1_rows(db: sqlite3.Connection, table: str) -> None:
    try:
        db.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)", _version1_rows(db))
    except ValueError as exc:  # a span id that is not hex
        raise sqlite3.DatabaseError(f"a row of table spans is malformed ({exc})") from None


def index_version1(db: sqlite3.Connection) -> None:
    """A read-only connection to a version-1 store: build the version-2 index in memory
    (a temporary table, which the read-only file does not need)."""
    db.executescript(_TRACE_BATCHES.format(temp="TEMP", schema="temp."))
    _insert_version1_rows(db, "temp.trace_batches")


def overlay_index(db: sqlite3.Connection) -> None:
    """A read-only connection to a store with batches never indexed: copy the index into
    temporary tables (which shadow the file's), for those batches to be indexed there."""
    # a version-1 store's index is a temporary table already (index_version1)
    if not db.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'trace_batches'").fetchone():
        db.executescript(_TRACE_BATCHES.format(temp="TEMP", schema="temp."))
        db.execute("INSERT INTO temp.trace_batches SELECT trace_id, batch_id, span_ids, root,"
                   " annotations FROM main.trace_batches")
    db.executescript(_TRACES.replace("TABLE IF NOT EXISTS", "TEMP TABLE IF NOT EXISTS"))
    db.execute("INSERT INTO temp.traces SELECT trace_id, released, start_ns FROM main.traces")
    db.commit()


def _to_version3(db: sqlite3.Connection) -> None:
    """Rewrite a version-2 index (rows per trace) into one blob per batch and one of the
    released trace ids, inside the caller's transaction."""
    for statement in _LOG.split(";"):
        if statement.strip():
            db.execute(statement)
    rows = db.execute(
        "SELECT b.batch_id, b.trace_id, b.span_ids, b.root, b.annotations, t.start_ns"
        " FROM trace_batches b LEFT JOIN traces t ON t.trace_id = b.trace_id"
        " ORDER BY b.batch_id, b.trace_id")
    try:
        for batch_id, group in groupby(rows, key=itemgetter(0)):
            blob = b"".join(
                pack_group(bytes.fromhex(trace_id), min(max(int(start or 0), 0), MAX_NS),
                           bool(root), min(int(notes), len(ids) // 8), len(ids) // 8) + ids
                for _, trace_id, ids, root, notes, start in group)
            db.execute("INSERT INTO batch_traces VALUES (?, ?, ?)", (batch_id, blob, crc(blob)))
        released = [t for (t,) in db.execute(
            "SELECT trace_id FROM traces WHERE released = 1 ORDER BY trace_id")]
        for at in range(0, len(released), 65_536):
            blob = pack_trace_ids(released[at:at + 65_536])
            db.execute("INSERT INTO releases (trace_ids, crc) VALUES (?, ?)", (blob, crc(blob)))
    except (TypeError, ValueError, struct.error) as exc:  # a row no writer could have written
        raise sqlite3.DatabaseError(f"an index row is malformed ({exc})") from None
    db.execute("DROP TABLE trace_batches")
    db.execute("DROP TABLE traces")


def upgrade(db: sqlite3.Connection, version: int, has_crc: bool) -> None:
    """Bring a store of an older version to this one, in one transaction: version 0 -> 1
    gives every batch its checksum; 1 -> 2 rewrites the per-span index into
    ``trace_batches``; 2 -> 3 rewrites that into a blob per batch (:func:`_to_version3`)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        if not has_crc:
            db.execute("ALTER TABLE batches ADD COLUMN crc INTEGER")
        db.create_function("spanguard_crc", 1, crc, deterministic=True)
        db.execute("UPDATE batches SET crc = spanguard_crc(body) WHERE crc IS NULL")
        if version < 2:
            # statement by statement: executescript() would commit the transaction
            for statement in _TRACE_BATCHES.format(temp="", schema="").split(";"):
                if statement.strip():
                    db.execute(statement)
            _insert_version1_rows(db, "trace_batches")
            db.execute("DROP TABLE spans")
        if version < 3:
            _to_version3(db)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _open_error(exc: sqlite3.Error, path: Path, readonly: bool) -> TraceFormatError:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in DAMAGE_CODES or not isinstance(exc, sqlite3.OperationalError):
        return DamagedStore(str(exc), file=str(path))
    action = "read" if readonly else "opened for writing"
    return TraceFormatError(f"cannot be {action} ({exc}).", file=str(path))


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise TraceFormatError(f"cannot be read ({exc.strerror or exc}).",
                               file=str(path)) from None
    if head == SQLITE_MAGIC:
        return
    if looks_like_store(path, head):
        raise DamagedStore("its SQLite header is overwritten", file=str(path))
    raise TraceFormatError("is not a spanguard span store (not a SQLite database).",
                           file=str(path))


def _quick_check(db: sqlite3.Connection, path: Path) -> None:
    problems = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        raise DamagedStore("; ".join(str(p).replace("\n", " ").strip() for p in problems),
                           file=str(path))


class OpenStore(NamedTuple):
    """What :func:`open_database` opened."""

    db: sqlite3.Connection
    has_crc: bool  # whether its batches carry checksums
    version: int  # its version: SCHEMA_VERSION unless opened read-only


def open_database(path: Path, readonly: bool, durable: bool) -> OpenStore:
    """Open (or create) the store at ``path``, checked, and (unless ``readonly``) at this
    version. Raises a ``TraceFormatError`` naming the file."""
    existed = path.is_file() and path.stat().st_size > 0
    if readonly and not path.is_file():
        raise TraceFormatError("does not exist.", file=str(path))
    if existed:
        _check_header(path)
    db: sqlite3.Connection | None = None
    try:
        if readonly:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                 check_same_thread=False)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        # everything is checked before anything (even the journal mode) is written
        fresh, version, has_crc = check_schema(db, path, readonly)
        _quick_check(db, path)
        if readonly:
            if version < 2:
                index_version1(db)
            return OpenStore(db, has_crc, version)
        if fresh:  # before the first write: a database's page size is fixed at creation
            db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if durable else 'OFF'}")
        if fresh:
            db.executescript(SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif not has_crc or version < SCHEMA_VERSION:
            upgrade(db, version, has_crc)
            has_crc = True
        # fail now, not at the first request, if the store is not writable
        db.execute("BEGIN IMMEDIATE")
        db.execute("COMMIT")
        return OpenStore(db, has_crc, SCHEMA_VERSION)
    except BaseException as exc:
        if db is not None:
            db.close()
        if isinstance(exc, OSError):
            reason = f"{exc.strerror}: {exc.filename}" if exc.filename else str(exc)
            raise TraceFormatError(f"cannot be created ({reason}).", file=str(path)) from None
        if isinstance(exc, sqlite3.Error):
            raise _open_error(exc, path, readonly) from None
        raise


def verify_rows(db: sqlite3.Connection, path: Path, has_crc: bool, version: int) -> int:
    """Check every stored batch against its checksum, and that every index row is well-formed
    (and, in a version-3 store, matches its checksum and unpacks) and names a stored batch;
    returns how many batches were checked."""
    checked = 0
    if has_crc:
        for batch_id, body, check in db.execute("SELECT id, body, crc FROM batches"):
            if check is not None and (not isinstance(body, bytes) or crc(body) != check):
                raise DamagedStore(f"batch {batch_id} does not match its checksum",
                                   file=str(path))
            checked += 1
    for table, query in (MALFORMED_ROWS if version >= 3 else MALFORMED_VIEW_ROWS).items():
        row = db.execute(query).fetchone()
        if row is not None:
            raise DamagedStore(f"a row of table {table} is malformed ({row[0]!r})",
                               file=str(path))
    if version >= 3:
        for row_id, blob, check in db.execute("SELECT batch_id, groups, crc FROM batch_traces"):
            checked_blob("batch_traces", row_id, blob, check, unpack_groups, path)
        for row_id, blob, check in db.execute("SELECT id, trace_ids, crc FROM releases"):
            checked_blob("releases", row_id, blob, check, unpack_trace_ids, path)
    return checked


def checked_blob(table: str, row_id: object, blob: object, check: object,
                 unpack: Callable[[bytes], list[_T]], path: Path | None = None) -> list[_T]:
    """A version-3 index blob unpacked, after checking it against its checksum; raises
    :class:`DamagedStore` if either fails."""
    if not isinstance(blob, bytes) or crc(blob) != check:
        raise DamagedStore(f"row {row_id} of table {table} does not match its checksum",
                           file=None if path is None else str(path))
    try:
        return unpack(blob)
    except ValueError as exc:
        raise DamagedStore(f"row {row_id} of table {table} is malformed ({exc})",
                           file=None if path is None else str(path)) from None
