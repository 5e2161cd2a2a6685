"""The span store's file: its schema and version, the form of its index rows.

**Schema (version 3).** ``batches`` holds every stored batch (an OTLP request, a file line
or document) as received, with the CRC-32 of its body; ``batch_traces`` indexes each with one
row: its spans grouped by trace, packed in a blob (per trace: the 8-byte ids of its spans new
to the store, their earliest start, whether the trace's root is among them and how many are
annotation spans: :func:`unpack_groups`), with its CRC-32; ``releases`` holds one row per
commit that marked traces released: their 16-byte ids, packed, with a CRC-32. So a commit
writes a row per batch and one for its releases, not rows per trace. Readers see the
per-trace tables of version 2 (``trace_batches``: one row per (trace, batch); ``traces``: one
row per trace, its earliest start and whether it is released) as temporary tables built from
these when first read (:class:`~spanguard_processor.store.view.TraceView`).

Older versions (version 2 kept those per-trace tables in the file) are read and upgraded by
:mod:`~spanguard_processor.store.upgrade`; every open is checked by
:mod:`~spanguard_processor.store.opening`. Damage raises :class:`DamagedStore` (an
:class:`~spanguard.exceptions.InputError` naming the file and the problem), never a raw
``sqlite3`` error.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from spanguard.exceptions import TraceFormatError

from ..ingest.spans import TraceGroup

__all__ = [
    "LOG_TABLES",
    "MALFORMED_ROWS",
    "MALFORMED_VIEW_ROWS",
    "MAX_NS",
    "PAGE_SIZE",
    "SCHEMA",
    "SCHEMA_VERSION",
    "SQLITE_MAGIC",
    "TRACES_TABLE",
    "TRACE_BATCHES_TABLE",
    "VIEW_SCHEMA",
    "DamagedStore",
    "check_schema",
    "checked_blob",
    "crc",
    "insert_releases",
    "looks_like_store",
    "pack_groups",
    "pack_trace_ids",
    "unpack_groups",
    "unpack_trace_ids",
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
TRACE_BATCHES_TABLE = """
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
TRACES_TABLE = """
CREATE TABLE IF NOT EXISTS traces (
    trace_id TEXT PRIMARY KEY,
    released INTEGER NOT NULL DEFAULT 0,
    start_ns INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
"""
LOG_TABLES = """
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
SCHEMA = _BATCHES + LOG_TABLES
#: The per-trace tables readers query, as temporary tables (a version-3 store's view, or a
#: read-only overlay of an older store's index).
VIEW_SCHEMA = TRACE_BATCHES_TABLE.format(temp="TEMP", schema="temp.") + TRACES_TABLE.replace(
    "TABLE IF NOT EXISTS", "TEMP TABLE IF NOT EXISTS"
)

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
_COLUMNS_V1 = {
    **{k: v for k, v in _COLUMNS_V2.items() if k != "trace_batches"},
    "spans": ("trace_id", "span_id", "parent_span_id", "annotation", "batch_id", "position"),
}
# One query per table of a version-2 store (or of the temporary tables readers query) finding
# a row no writer could have written (a damaged one).
_HEX_ID = "(typeof({c}) != 'text' OR length({c}) != {n} OR {c} GLOB '*[^0-9a-f]*')"
MALFORMED_VIEW_ROWS = {
    "trace_batches": "SELECT trace_id || '/' || batch_id FROM trace_batches WHERE "
    + " OR ".join(
        [
            _HEX_ID.format(c="trace_id", n=32),
            "typeof(span_ids) != 'blob'",
            "length(span_ids) = 0",
            "length(span_ids) % 8 != 0",
            "root NOT IN (0, 1)",
            "typeof(annotations) != 'integer'",
            "annotations < 0",
            "annotations > length(span_ids) / 8",
            "batch_id NOT IN (SELECT id FROM batches)",
        ]
    )
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
_SCHEMA_MARKS = (
    b"CREATE TABLE batches (\n    id INTEGER PRIMARY KEY,\n    fmt TEXT NOT NULL",
    b"CREATE TABLE spans (\n    trace_id TEXT NOT NULL",
)


class DamagedStore(TraceFormatError):
    """A span store whose file is damaged: SQLite or spanguard cannot read back what was written."""

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.problem = problem
        detail = (
            problem
            if problem.startswith("is a damaged span store")
            else (
                f"is a damaged span store ({problem.rstrip('.')}); nothing more is read from or "
                "written to it. `spanguard store recover` copies what is still readable into a new "
                "store."
            )
        )
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
        len(start) >= (_ROOT_PAGES + 1) * size
        and path.stat().st_size % size == 0
        and all(
            start[page * size : page * size + 1] in _BTREE_PAGES
            for page in range(1, _ROOT_PAGES + 1)
        )
        for size in _PAGE_SIZES
    )


try:  # ISA-L's CRC-32 is zlib's checksum, bit for bit, ~20x faster (carry-less multiply)
    from isal.isal_zlib import crc32 as _crc32
except ImportError:  # a platform without the isal wheel: zlib's, the same values
    from zlib import crc32 as _crc32


def crc(body: bytes) -> int:
    """The checksum kept beside every stored batch and index blob: zlib's CRC-32."""
    return _crc32(body)


# --- the blobs of a version-3 store --------------------------------------------------------

#: Per trace group in a ``batch_traces`` blob: the trace id (16 bytes), the earliest start
#: (ns), whether the root is among the spans, how many are annotation spans, how many spans;
#: then the spans' 8-byte ids. Little-endian.
_GROUP = struct.Struct("<16sqBII")
#: SQLite's largest integer: a (hostile) start time beyond it is stored as this.
MAX_NS = (1 << 63) - 1
_RELEASE = "INSERT INTO releases (trace_ids, crc) VALUES (?, ?)"
_RELEASES_PER_ROW = 65_536


def pack_groups(groups: Iterable[tuple[str, bytes, int, bool, int]]) -> bytes:
    """Trace groups (trace id, span ids, start, root, annotation spans) as one ``batch_traces``
    blob, as :func:`unpack_groups` reads it back; a start beyond SQLite's integers is stored
    as :data:`MAX_NS`; the annotation spans must not exceed the spans."""
    header, fromhex = _GROUP.pack, bytes.fromhex
    parts: list[bytes] = []
    append = parts.append
    for trace_id, span_ids, start, root, notes in groups:
        append(
            header(
                fromhex(trace_id),
                start if start < MAX_NS else MAX_NS,
                root,
                notes,
                len(span_ids) >> 3,
            )
        )
        append(span_ids)
    return b"".join(parts)


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


def insert_releases(db: sqlite3.Connection, trace_ids: Sequence[str]) -> None:
    """Mark traces released, inside the caller's transaction: a ``releases`` row per
    ``_RELEASES_PER_ROW`` of them."""
    for at in range(0, len(trace_ids), _RELEASES_PER_ROW):
        blob = pack_trace_ids(trace_ids[at : at + _RELEASES_PER_ROW])
        db.execute(_RELEASE, (blob, crc(blob)))


def unpack_trace_ids(blob: bytes) -> list[str]:
    """The trace ids (hex) in a ``releases`` blob; ``ValueError`` if it is malformed."""
    if not blob or len(blob) % 16:
        raise ValueError(f"{len(blob)} bytes is not a whole number of trace ids")
    return [blob[at : at + 16].hex() for at in range(0, len(blob), 16)]


def check_schema(db: sqlite3.Connection, path: Path, readonly: bool) -> tuple[bool, int, bool]:
    """Check the tables and the store version: (an empty database, i.e. a new store;
    the version; whether batches carry a checksum)."""
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    if version > SCHEMA_VERSION:
        raise TraceFormatError(
            f"was written by a newer spanguard (store version {version}; this one "
            f"reads versions up to {SCHEMA_VERSION}); upgrade spanguard.",
            file=str(path),
        )
    tables = {
        name: [row[1] for row in db.execute(f"PRAGMA table_info({name})")]
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    }
    if not tables and not readonly:
        return True, SCHEMA_VERSION, True
    expected = _COLUMNS if version >= 3 else _COLUMNS_V2 if version == 2 else _COLUMNS_V1
    if not any(name in tables for name in {*_COLUMNS, *_COLUMNS_V2, *_COLUMNS_V1}):
        raise TraceFormatError(
            "is a SQLite database but not a spanguard span store (it has no table "
            f"{', '.join(sorted(_COLUMNS))}).",
            file=str(path),
        )
    for name, columns in expected.items():
        if name not in tables:
            raise DamagedStore(f"table {name} is missing", file=str(path))
        missing = [c for c in columns if c not in tables[name]]
        if missing:
            raise DamagedStore(f"table {name} lacks column(s) {', '.join(missing)}", file=str(path))
    return False, version, "crc" in tables["batches"]


def checked_blob(
    table: str,
    row_id: object,
    blob: object,
    check: object,
    unpack: Callable[[bytes], list[_T]],
    path: Path | None = None,
) -> list[_T]:
    """A version-3 index blob unpacked, after checking it against its checksum; raises
    :class:`DamagedStore` if either fails."""
    if not isinstance(blob, bytes) or crc(blob) != check:
        raise DamagedStore(
            f"row {row_id} of table {table} does not match its checksum",
            file=None if path is None else str(path),
        )
    try:
        return unpack(blob)
    except ValueError as exc:
        raise DamagedStore(
            f"row {row_id} of table {table} is malformed ({exc})",
            file=None if path is None else str(path),
        ) from None
