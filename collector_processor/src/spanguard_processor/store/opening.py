"""Opening a span store: every check made before anything is read, written or acknowledged.

:func:`open_database` checks the SQLite header, the schema and its version and
``PRAGMA quick_check``, and upgrades an older store opened for writing
(:mod:`~spanguard_processor.store.upgrade`); :func:`verify_rows` checks every batch
against its checksum and every index row's form. ``spanguard serve`` opens without the
``quick_check`` and runs it (:func:`check_pages`) with :func:`verify_rows` on its writer
thread, while ``/health`` already answers. Anything wrong raises
:class:`~spanguard_processor.store.schema.DamagedStore` naming the file, never a raw
``sqlite3`` error.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import NamedTuple

from spanguard.exceptions import TraceFormatError

from .schema import (
    DAMAGE_CODES,
    MALFORMED_ROWS,
    MALFORMED_VIEW_ROWS,
    PAGE_SIZE,
    SCHEMA,
    SCHEMA_VERSION,
    SQLITE_MAGIC,
    DamagedStore,
    check_schema,
    checked_blob,
    crc,
    looks_like_store,
    unpack_groups,
    unpack_trace_ids,
)
from .upgrade import index_version1, upgrade

__all__ = [
    "CHECKS",
    "OpenStore",
    "check_pages",
    "open_database",
    "readonly_connection",
    "verify_rows",
]


#: The checks a store opened for writing with ``defer_checks`` runs later, in this order
#: (each reads the whole file; ``/health`` names the one running).
CHECKS = (
    "reading every page (quick_check)",
    "checking every batch and index row against its checksum",
    "indexing batches stored but never indexed",
)


def _open_error(exc: sqlite3.Error, path: Path, readonly: bool) -> TraceFormatError:
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code in DAMAGE_CODES or not isinstance(exc, sqlite3.OperationalError):
        return DamagedStore(str(exc), file=str(path))
    action = "read" if readonly else "opened for writing"
    return TraceFormatError(f"cannot be {action} ({exc}).", file=str(path))


_CANTOPEN = 14  # SQLITE_CANTOPEN


def readonly_connection(path: Path) -> sqlite3.Connection:
    """A read-only connection to the store ``path`` (``mode=ro``, which sees what a live
    writer committed, its WAL included). On read-only media, where SQLite cannot create the
    WAL's ``-shm`` index, a store stopped cleanly (no ``-wal``, or an empty one: everything
    is in the file) is opened ``immutable=1``; one whose ``-wal`` still holds commits is
    refused, since SQLite cannot read that log there and opening immutable would leave its
    spans out."""
    uri = path.resolve().as_uri()
    db = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError as exc:
        db.close()
        cantopen = getattr(exc, "sqlite_errorcode", 0) & 0xFF == _CANTOPEN
        if not cantopen or os.access(path.parent, os.W_OK):
            raise
    wal = Path(f"{path}-wal")
    if wal.is_file() and wal.stat().st_size > 0:
        raise TraceFormatError(
            f"is on read-only media with a write-ahead log ({wal.name}) still holding "
            "commits, which SQLite cannot read without writing beside it; copy the store "
            "and its -wal file to writable storage and read the copy.",
            file=str(path),
        )
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise TraceFormatError(f"cannot be read ({exc.strerror or exc}).", file=str(path)) from None
    if head == SQLITE_MAGIC:
        return
    if looks_like_store(path, head):
        raise DamagedStore("its SQLite header is overwritten", file=str(path))
    raise TraceFormatError("is not a spanguard span store (not a SQLite database).", file=str(path))


def _quick_check(db: sqlite3.Connection, path: Path) -> None:
    problems = [row[0] for row in db.execute("PRAGMA quick_check(5)")]
    if problems != ["ok"]:
        raise DamagedStore(
            "; ".join(str(p).replace("\n", " ").strip() for p in problems), file=str(path)
        )


class OpenStore(NamedTuple):
    """What :func:`open_database` opened."""

    db: sqlite3.Connection
    has_crc: bool  # whether its batches carry checksums
    version: int  # its version: SCHEMA_VERSION unless opened read-only


def open_database(
    path: Path, readonly: bool, durable: bool, *, quick_check: bool = True
) -> OpenStore:
    """Open (or create) the store at ``path``, checked, and (unless ``readonly``) at this
    version. Raises a ``TraceFormatError`` naming the file. ``quick_check=False`` leaves out
    ``PRAGMA quick_check`` (it reads the whole file: :func:`check_pages` runs it later)
    unless the store is to be upgraded (an upgrade rewrites only a checked store)."""
    existed = path.is_file() and path.stat().st_size > 0
    if readonly and not path.is_file():
        raise TraceFormatError("does not exist.", file=str(path))
    if existed:
        _check_header(path)
    db: sqlite3.Connection | None = None
    try:
        if readonly:
            db = readonly_connection(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        # everything is checked before anything (even the journal mode) is written
        fresh, version, has_crc = check_schema(db, path, readonly)
        if quick_check or (
            not readonly and not fresh and (not has_crc or version < SCHEMA_VERSION)
        ):
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


def check_pages(db: sqlite3.Connection, path: Path) -> None:
    """``PRAGMA quick_check`` (every page of the file read), as :func:`open_database` runs it;
    raises :class:`DamagedStore` naming the file."""
    try:
        _quick_check(db, path)
    except sqlite3.Error as exc:
        raise _open_error(exc, path, False) from None


def verify_rows(
    db: sqlite3.Connection,
    path: Path,
    has_crc: bool,
    version: int,
    *,
    bodies: bool = True,
    index: bool = True,
) -> int:
    """Check every stored batch against its checksum (``bodies``), and that every index row is
    well-formed (and, in a version-3 store, matches its checksum and unpacks) and names a
    stored batch (``index``); returns how many batches were checked."""
    checked = 0
    if not index:
        return _verify_bodies(db, path) if has_crc else 0
    if has_crc and bodies:
        checked = _verify_bodies(db, path)
    for table, query in (MALFORMED_ROWS if version >= 3 else MALFORMED_VIEW_ROWS).items():
        row = db.execute(query).fetchone()
        if row is not None:
            raise DamagedStore(f"a row of table {table} is malformed ({row[0]!r})", file=str(path))
    if version >= 3:
        for row_id, blob, check in db.execute("SELECT batch_id, groups, crc FROM batch_traces"):
            checked_blob("batch_traces", row_id, blob, check, unpack_groups, path)
        for row_id, blob, check in db.execute("SELECT id, trace_ids, crc FROM releases"):
            checked_blob("releases", row_id, blob, check, unpack_trace_ids, path)
    return checked


def _verify_bodies(db: sqlite3.Connection, path: Path) -> int:
    checked = 0
    for batch_id, body, check in db.execute("SELECT id, body, crc FROM batches"):
        if check is not None and (not isinstance(body, bytes) or crc(body) != check):
            raise DamagedStore(f"batch {batch_id} does not match its checksum", file=str(path))
        checked += 1
    return checked
