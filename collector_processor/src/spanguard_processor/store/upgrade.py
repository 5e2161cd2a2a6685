"""Older span stores: reading them as they are, and upgrading them to this version.

Version 2 kept per-trace tables in the file (``trace_batches``, ``traces``); version 1 indexed
every span with a row of its own (``spans``); version 0 lacked the checksums. A writable open
upgrades them in place, in one transaction (:func:`upgrade`); a read-only one reads them as they
are (a version-1 index through a temporary ``trace_batches``: :func:`index_version1`).
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterator
from itertools import groupby
from operator import itemgetter

from .schema import (
    LOG_TABLES,
    SCHEMA_VERSION,
    TRACE_BATCHES_TABLE,
    TRACES_TABLE,
    crc,
    insert_releases,
    pack_groups,
)

__all__ = ["index_version1", "overlay_index", "upgrade"]


def _version1_rows(db: sqlite3.Connection) -> Iterator[tuple[str, int, bytes, int, int]]:
    """The rows of ``trace_batches`` a version-1 store's per-span index amounts to."""
    rows = db.execute(
        "SELECT trace_id, batch_id, span_id, parent_span_id, annotation FROM spans"
        " ORDER BY trace_id, batch_id, position"
    )
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
    db.executescript(TRACE_BATCHES_TABLE.format(temp="TEMP", schema="temp."))
    _insert_version1_rows(db, "temp.trace_batches")


def overlay_index(db: sqlite3.Connection) -> None:
    """A read-only connection to a store with batches never indexed: copy the index into
    temporary tables (which shadow the file's), for those batches to be indexed there."""
    # a version-1 store's index is a temporary table already (index_version1)
    if not db.execute("SELECT 1 FROM temp.sqlite_master WHERE name = 'trace_batches'").fetchone():
        db.executescript(TRACE_BATCHES_TABLE.format(temp="TEMP", schema="temp."))
        db.execute(
            "INSERT INTO temp.trace_batches SELECT trace_id, batch_id, span_ids, root,"
            " annotations FROM main.trace_batches"
        )
    db.executescript(TRACES_TABLE.replace("TABLE IF NOT EXISTS", "TEMP TABLE IF NOT EXISTS"))
    db.execute("INSERT INTO temp.traces SELECT trace_id, released, start_ns FROM main.traces")
    db.commit()


def _to_version3(db: sqlite3.Connection) -> None:
    """Rewrite a version-2 index (rows per trace) into one blob per batch and one of the
    released trace ids, inside the caller's transaction."""
    for statement in LOG_TABLES.split(";"):
        if statement.strip():
            db.execute(statement)
    rows = db.execute(
        "SELECT b.batch_id, b.trace_id, b.span_ids, b.root, b.annotations, t.start_ns"
        " FROM trace_batches b LEFT JOIN traces t ON t.trace_id = b.trace_id"
        " ORDER BY b.batch_id, b.trace_id"
    )
    try:
        for batch_id, group in groupby(rows, key=itemgetter(0)):
            blob = pack_groups(
                (trace_id, ids, max(int(start or 0), 0), bool(root), min(int(notes), len(ids) // 8))
                for _, trace_id, ids, root, notes, start in group
            )
            db.execute("INSERT INTO batch_traces VALUES (?, ?, ?)", (batch_id, blob, crc(blob)))
        insert_releases(
            db,
            [
                t
                for (t,) in db.execute(
                    "SELECT trace_id FROM traces WHERE released = 1 ORDER BY trace_id"
                )
            ],
        )
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
            for statement in TRACE_BATCHES_TABLE.format(temp="", schema="").split(";"):
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
